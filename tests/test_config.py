"""Configuration: defaults, environment overrides, errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import NO_PROVIDER_HINT, load_settings, parse_settings, resolve_config_path
from bot.errors import ConfigError

OPENAI_ENV = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "HATCHWAY_MODEL": "m1"}


def test_provider_from_environment() -> None:
    settings = parse_settings({}, environ=OPENAI_ENV)
    provider = settings.providers["default"]
    assert provider.kind == "openai"
    assert provider.base_url == "http://127.0.0.1:9/v1"
    assert provider.model == "m1"


def test_anthropic_from_environment() -> None:
    settings = parse_settings({}, environ={"ANTHROPIC_API_KEY": "k" * 20})
    assert settings.providers["default"].kind == "anthropic"


def test_no_provider_names_the_settings() -> None:
    with pytest.raises(ConfigError) as err:
        parse_settings({}, environ={})
    assert str(err.value) == NO_PROVIDER_HINT
    assert "OPENAI_BASE_URL" in str(err.value)
    assert "ANTHROPIC_API_KEY" in str(err.value)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"agent": {"max_tool_iteratons": 3}}, "agent.max_tool_iteratons: unknown key"),
        ({"agent": {"max_tool_iterations": "many"}}, "agent.max_tool_iterations:"),
        (
            {"channels": {"telegram": {"main": {"allowed_user": ["1"]}}}},
            "channels.telegram.main.allowed_user: unknown key",
        ),
        ({"approval": {"level": "yolo"}}, "approval.level:"),
    ],
)
def test_bad_keys_are_named(data: dict[str, object], expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_settings(data, environ=OPENAI_ENV)
    assert expected in str(err.value)


def test_unknown_provider_reference() -> None:
    data = {"agent": {"provider": "nope"}, "providers": {"main": {"model": "x"}}}
    with pytest.raises(ConfigError) as err:
        parse_settings(data, environ={})
    assert "nope" in str(err.value)


def test_file_and_state_dir(tmp_path: Path) -> None:
    config = tmp_path / "hatchway.toml"
    config.write_text(
        '[providers.default]\nkind = "openai"\nmodel = "m"\n\n[storage]\npath = "data/x.db"\n'
    )
    settings = load_settings(config, environ={})
    assert settings.database_path() == tmp_path / "data" / "x.db"
    assert settings.providers["default"].model == "m"


def test_env_model_overrides_file(tmp_path: Path) -> None:
    config = tmp_path / "hatchway.toml"
    config.write_text('[providers.default]\nmodel = "m"\n')
    settings = load_settings(config, environ={"HATCHWAY_MODEL": "other"})
    assert settings.providers["default"].model == "other"


def test_invalid_toml(tmp_path: Path) -> None:
    config = tmp_path / "hatchway.toml"
    config.write_text("[agent\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(config, environ={})


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.toml", environ={})


def test_resolve_config_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_config_path(None, environ={}) is None
    (tmp_path / "hatchway.toml").write_text("")
    assert resolve_config_path(None, environ={}) == Path("hatchway.toml")
    assert resolve_config_path(None, environ={"HATCHWAY_CONFIG": "/x.toml"}) == Path("/x.toml")
    assert resolve_config_path("a.toml", environ={"HATCHWAY_CONFIG": "/x.toml"}) == Path("a.toml")
