"""``[agents.<name>]`` and their routes: inheritance from ``[agent]``, prompt files, and
errors that name the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.config import load_settings, parse_settings
from bot.errors import ConfigError

PROVIDERS = {
    "default": {"base_url": "http://127.0.0.1:9/v1", "model": "m-default"},
    "ops": {"base_url": "http://127.0.0.1:9/v1", "model": "m-ops", "temperature": 0.7},
}


def settings(**tables: Any) -> Any:
    return parse_settings({"providers": PROVIDERS, **tables}, environ={})


def test_a_profile_inherits_what_it_leaves_unset() -> None:
    loaded = settings(
        agent={"system_prompt": "base", "max_tool_iterations": 7, "excluded_tools": ["shell"]},
        agents={"ops": {"provider": "ops", "history_max_tokens": 4000, "max_tokens": 300}},
    )
    assert loaded.agent_names() == ["default", "ops"]
    ops = loaded.agent_for("ops")
    assert (ops.provider, ops.system_prompt, ops.max_tool_iterations) == ("ops", "base", 7)
    assert ops.excluded_tools == ["shell"]
    assert ops.history_max_tokens == 4000
    assert loaded.agent_for("default") is loaded.agent
    # the chain as ops sees it: its max_tokens on its provider, the provider's temperature kept
    seen = loaded.as_agent("ops")
    assert seen.agent == ops
    assert seen.providers["ops"].max_tokens == 300
    assert seen.providers["ops"].temperature == 0.7
    assert loaded.providers["ops"].max_tokens == 4096


def test_agents_default_adds_to_agent() -> None:
    loaded = settings(agents={"default": {"system_prompt": "mine", "routes": [{"dm": True}]}})
    assert loaded.agent_names() == ["default"]
    assert loaded.agent_for("default").system_prompt == "mine"


def test_prompt_files_are_read_relative_to_the_config_file(tmp_path: Path) -> None:
    conf, state = tmp_path / "conf", tmp_path / "state"
    (conf / "prompts").mkdir(parents=True)
    (conf / "prompts" / "ops.md").write_text("Be careful.\n\n", encoding="utf-8")
    (conf / "base.md").write_text("Be brief.", encoding="utf-8")
    path = conf / "hatchway.toml"
    path.write_text(
        f'state_dir = "{state}"\n'
        '[agent]\nsystem_prompt_file = "base.md"\n'
        '[agents.ops]\nsystem_prompt_file = "prompts/ops.md"\n'
        '[agents.chat]\nsystem_prompt = "Chat away."\n',
        encoding="utf-8",
    )
    loaded = load_settings(path, environ={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert loaded.agent.system_prompt == "Be brief."
    assert loaded.agent_for("ops").system_prompt == "Be careful."
    assert loaded.agent_for("ops").system_prompt_file == "prompts/ops.md"
    chat = loaded.agent_for("chat")
    assert (chat.system_prompt, chat.system_prompt_file) == ("Chat away.", None)


def test_without_a_file_prompt_files_are_in_the_state_directory(tmp_path: Path) -> None:
    (tmp_path / "ops.md").write_text("From the state directory.", encoding="utf-8")
    loaded = parse_settings(
        {
            "providers": PROVIDERS,
            "state_dir": str(tmp_path),
            "agents": {"ops": {"system_prompt_file": "ops.md"}},
        },
        environ={},
    )
    assert loaded.agent_for("ops").system_prompt == "From the state directory."


@pytest.mark.parametrize(
    ("tables", "named"),
    [
        ({"agents": {"ops": {"provider": "nope"}}}, "agents.ops.provider/fallback"),
        ({"agents": {"ops": {"fallback": ["default", "gone"]}}}, "'gone'"),
        (
            {"channels": {"console": {"main": {"agent": "ghost"}}}},
            "channels.console.main.agent names agent 'ghost'",
        ),
        ({"agents": {"ops": {"max_tool_iterations": 0}}}, "agents.ops.max_tool_iterations"),
        ({"agents": {"ops": {"temprature": 0.2}}}, "agents.ops.temprature: unknown key"),
        ({"agents": {"ops": {"approval": {"level": "all"}}}}, "agents.ops.approval.level"),
        (
            {"agents": {"ops": {"system_prompt": "a", "system_prompt_file": "b"}}},
            "agents.ops: Value error, set system_prompt or system_prompt_file, not both",
        ),
        ({"agents": {"ops": {"routes": [{}]}}}, "agents.ops.routes.0"),
        ({"agents": {"ops": {"routes": [{"channel": "irc.main"}]}}}, "agents.ops.routes.0.channel"),
        ({"agents": {"ops": {"routes": [{"chanel": "slack"}]}}}, "agents.ops.routes.0.chanel"),
        (
            {"agents": {"ops": {"routes": [{"channel": "slack", "guild": "1"}]}}},
            "guild only applies to discord",
        ),
        ({"agents": {"o p": {}}}, "agent name 'o p'"),
    ],
)
def test_errors_name_the_key(tables: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError) as raised:
        settings(**tables)
    assert named in str(raised.value)


def test_a_missing_prompt_file_names_its_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"agents\.ops\.system_prompt_file: .*ops\.md does not"):
        parse_settings(
            {
                "providers": PROVIDERS,
                "state_dir": str(tmp_path),
                "agents": {"ops": {"system_prompt_file": "ops.md"}},
            },
            environ={},
        )
    (tmp_path / "empty.md").write_text("  \n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"agent\.system_prompt_file: .*empty\.md is empty"):
        parse_settings(
            {
                "providers": PROVIDERS,
                "state_dir": str(tmp_path),
                "agent": {"system_prompt_file": "empty.md"},
            },
            environ={},
        )


def test_a_profile_provider_needs_a_model() -> None:
    providers = {**PROVIDERS, "blank": {"base_url": "http://127.0.0.1:9/v1"}}
    with pytest.raises(ConfigError, match=r"providers\.blank\.model is empty"):
        parse_settings(
            {"providers": providers, "agents": {"ops": {"provider": "blank"}}}, environ={}
        )


def _accepts(schema: dict[str, Any]) -> Any:
    """A field's JSON schema without its default and title, ``null`` left out."""
    kept = {k: v for k, v in schema.items() if k not in ("default", "title")}
    if "anyOf" in kept:
        values = [v for v in kept.pop("anyOf") if v != {"type": "null"}]
        kept.update(values[0] if len(values) == 1 else {"anyOf": values})
    return kept


def test_a_profile_key_accepts_what_the_agent_key_accepts() -> None:
    """Every ``[agents.<name>]`` override is an ``[agent]`` key with the same type and
    limits (and may be left unset)."""
    from bot.config.agents import AgentProfile
    from bot.config.settings import AgentConfig

    agent = AgentConfig.model_json_schema()["properties"]
    profile = AgentProfile.model_json_schema()["properties"]
    overrides = set(profile) - {"approval", "routes"}
    assert len(overrides) == 16
    assert overrides <= set(agent)
    for key in sorted(overrides):
        assert _accepts(profile[key]) == _accepts(agent[key]), key
        assert profile[key].get("default") is None
