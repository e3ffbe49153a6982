"""``hatchway doctor``'s routing table: the agent of each channel and route, in the order
routes are tried, every agent's providers checked, and a warning for each route that can
never match or may tie with another."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.commands.doctor.routing import routing_findings
from bot.config import parse_settings
from bot.store import Store
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.telegram_server import FakeTelegram
from tests.ops.test_doctor import run_doctor

TOKEN = "12345:good-token"


def write_config(tmp_path: Path, *, tg: FakeTelegram, general: str, ops: str) -> Path:
    path = tmp_path / "hatchway.toml"
    path.write_text(
        f"""
state_dir = "{tmp_path / "state"}"

[providers.default]
base_url = "{general}"
model = "gpt-4o-mini"
api_key_env = "DOCTOR_TEST_KEY"

[providers.ops]
base_url = "{ops}"
model = "gpt-4o-ops"
api_key_env = "DOCTOR_TEST_KEY"

[agents.ops]
provider = "ops"
system_prompt = "careful"

[[agents.ops.routes]]
conversation = "-100555"
dm = false

[[agents.ops.routes]]
channel = "slack.work"

[[agents.default.routes]]
channel = "telegram.main"
dm = true

[[agents.default.routes]]
dm = false
conversation = "-100555"

[channels.telegram.main]
token_env = "DOCTOR_TELEGRAM_TOKEN"
api_base_url = "{tg.base_url}"
allowed_users = ["1"]
agent = "ops"
""",
        encoding="utf-8",
    )
    return path


async def test_doctor_prints_the_routing_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCTOR_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv("DOCTOR_TEST_KEY", "sk-test")
    await (await Store.open(tmp_path / "state" / "hatchway.db")).aclose()
    capsys.readouterr()
    async with (
        FakeTelegram(TOKEN) as tg,
        OpenAIFake(model="gpt-4o-mini") as general,
        OpenAIFake(model="gpt-4o-ops") as ops,
    ):
        general.queue_text("p")
        ops.queue_text("p")
        config = write_config(tmp_path, tg=tg, general=general.base_url, ops=ops.base_url)
        code, out = await run_doctor(config, capsys)
        assert [r.body["model"] for r in ops.requests] == ["gpt-4o-ops"]
    assert code == 0, out
    lines = out.splitlines()
    assert any(line.startswith("✓ provider ops:") for line in lines)
    start = next(i for i, line in enumerate(lines) if line.startswith("✓ routing"))
    routing = lines[start:-1]  # the table is the report's last part
    assert routing[0] == "✓ routing telegram.main: agent ops by default"
    tried = [line.split(":", 1)[0] for line in routing if line.startswith(("✓", "⚠"))]
    # heaviest first (channel with an alias counts two), then as declared
    assert tried[1:] == [
        "✓ routing agents.default.routes[0]",
        "✓ routing agents.ops.routes[0]",
        "⚠ routing agents.ops.routes[1]",
        "⚠ routing agents.default.routes[1]",
    ]
    text = "\n".join(routing)
    assert "✓ routing agents.ops.routes[0]: conversation=-100555 dm=false → agent ops" in text
    assert (
        "⚠ routing agents.default.routes[1]: conversation=-100555 dm=false → agent default; "
        "never matches: agents.ops.routes[0] is the same route and is tried first"
    ) in text
    assert "never matches: no enabled channel is slack.work" in text
    assert "sk-test" not in out and TOKEN not in out


def _settings(channels: dict[str, Any], routes: list[dict[str, Any]], **more: Any) -> Any:
    return parse_settings(
        {
            "channels": channels,
            "agents": {"ops": {"routes": routes}, **more},
        },
        environ={},
        require_provider=False,
    )


TELEGRAM: dict[str, Any] = {"telegram": {"main": {"token_env": "T"}}}


@pytest.mark.parametrize(
    ("channels", "route", "why"),
    [
        (TELEGRAM, {"channel": "discord"}, "no enabled channel is discord"),
        (
            {"telegram": {"main": {"token_env": "T", "dm_policy": "disabled"}}},
            {"dm": True},
            "its channels have dm_policy",
        ),
        ({}, {"dm": False}, "it asks for groups, and its channels have none"),
        ({"console": {"main": {}}}, {"thread": "7"}, "it asks for threads"),
        (TELEGRAM, {"guild": "42"}, "no Discord channel is enabled"),
        (
            {"telegram": {"main": {"token_env": "T", "enabled": False}}},
            {"channel": "telegram.main"},
            "no enabled channel is telegram.main",
        ),
    ],
)
def test_routes_that_never_match(channels: dict[str, Any], route: dict[str, Any], why: str) -> None:
    lines = routing_findings(_settings(channels, [route]))
    [warning] = [line for line in lines if line.warning]
    assert warning.name == "routing agents.ops.routes[0]"
    assert why in warning.detail


def test_a_route_that_matches_is_not_warned() -> None:
    lines = routing_findings(_settings(TELEGRAM, [{"channel": "telegram", "dm": False}]))
    assert [line.render() for line in lines] == [
        "✓ routing telegram.main: agent default by default",
        "✓ routing agents.ops.routes[0]: channel=telegram dm=false → agent ops",
    ]


def test_routes_of_equal_weight_that_may_tie() -> None:
    settings = _settings(
        TELEGRAM,
        [{"dm": True}],
        chat={"routes": [{"conversation": "42"}, {"conversation": "43", "dm": True}]},
    )
    lines = {line.name: line for line in routing_findings(settings)}
    tie = lines["routing agents.chat.routes[0]"]
    assert tie.warning
    assert "ties with agents.ops.routes[0] (agent ops)" in tie.detail
    assert not lines["routing agents.chat.routes[1]"].warning  # heavier: tried first
