"""Configuration: defaults, environment overrides, errors that name the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.channel_registry import CHANNEL_PACKAGES
from bot.config import (
    ChannelsConfig,
    load_settings,
    parse_settings,
    resolve_config_path,
)
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


def test_no_provider_is_the_embedded_local_model() -> None:
    # without the local model it is an error naming both ways out:
    # tests/providers/test_embedded_default.py
    provider = parse_settings({}, environ={}).providers["default"]
    assert provider.kind == "embedded"
    assert provider.model == "smollm2-135m-instruct"
    assert provider.model_path is not None
    assert Path(provider.model_path).is_file()


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
        (
            {"channels": {"slack": {"team": {"approver_roles": ["admin"]}}}},
            "channels.slack.team: Value error, approver_roles is not supported on Slack",
        ),
        (
            {"channels": {"discord": {"main": {"reconnect_max_s": 0}}}},
            "channels.discord.main.reconnect_max_s:",
        ),
        ({"channels": {"matrix": {"main": {}}}}, "channels.matrix: unknown key"),
        (
            {"mcp": {"servers": {"fs": {"command": ["x"], "restart_initial_s": 0}}}},
            "mcp.servers.fs.reconnect_initial_s:",
        ),
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


def test_every_registered_kind_has_a_section_in_order() -> None:
    assert list(ChannelsConfig.model_fields) == list(CHANNEL_PACKAGES)
    data = {"channels": {kind: {"a": {"enabled": False}} for kind in reversed(CHANNEL_PACKAGES)}}
    settings = parse_settings(data, environ=OPENAI_ENV)
    assert [kind for kind, _, _ in settings.channels.all()] == list(CHANNEL_PACKAGES)


def test_the_embedded_console_has_the_console_defaults() -> None:
    console = ChannelsConfig.embedded_console().get("console", "main")
    assert console is not None
    assert (console.allowed_users, console.dm_policy, console.require_mention) == (
        ["*"],
        "open",
        False,
    )


@pytest.mark.parametrize(
    ("data", "old", "new"),
    [
        (
            {"channels": {"slack": {"team": {"reconnect_base_s": 2.5}}}},
            "channels.slack.team.reconnect_base_s",
            "channels.slack.team.reconnect_initial_s",
        ),
        (
            {"mcp": {"servers": {"fs": {"command": ["x"], "restart_initial_s": 2.5}}}},
            "mcp.servers.fs.restart_initial_s",
            "mcp.servers.fs.reconnect_initial_s",
        ),
        (
            {"mcp": {"servers": {"fs": {"url": "http://x", "restart_max_s": 2.5}}}},
            "mcp.servers.fs.restart_max_s",
            "mcp.servers.fs.reconnect_max_s",
        ),
    ],
)
def test_an_old_key_still_loads_with_a_warning(data: dict[str, object], old: str, new: str) -> None:
    with capture_logs() as logs:
        settings = parse_settings(data, environ=OPENAI_ENV)
    value: Any = settings.model_dump()
    for key in new.split("."):
        value = value[key]
    assert value == 2.5
    renamed = [e for e in logs if e["event"] == "config_key_renamed"]
    assert [(e["log_level"], e["old"], e["new"]) for e in renamed] == [("warning", old, new)]


def test_an_old_key_next_to_its_new_name_is_refused() -> None:
    table = {"reconnect_base_s": 1.0, "reconnect_initial_s": 2.0}
    with pytest.raises(ConfigError) as err:
        parse_settings({"channels": {"slack": {"team": table}}}, environ=OPENAI_ENV)
    assert "channels.slack.team: reconnect_base_s is the old name of reconnect_initial_s" in str(
        err.value
    )


def test_loading_the_settings_imports_no_platform_sdk() -> None:
    probe = (
        "import sys, bot.config\n"
        "sdks = ('telegram', 'slack_sdk', 'slack_bolt', 'discord', 'aiohttp', 'structlog')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in sdks))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=60,
    )
    assert done.stdout.strip() == "[]"
