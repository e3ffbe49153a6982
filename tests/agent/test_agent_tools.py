"""Each agent's tools and approval policy, with a real MCP server process behind the App:
``allowed_tools``/``excluded_tools`` with ``mcp:<server>``, shell patterns and names, and an
agent's ``approval`` overrides deciding its calls through the real approval gate, the
turn's log lines naming the agent and the route."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from structlog.contextvars import merge_contextvars
from structlog.testing import capture_logs

from bot.app import App
from bot.config import parse_settings
from bot.envelope import Capabilities, DeliveryTarget, IngressEnvelope, Sender
from bot.store.audit import Decision
from tests.fakes.channel import FakeTerminal
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.mcp.conftest import CONSOLE, SECRET, demo_config


def message(conversation: str, text: str, message_id: str) -> IngressEnvelope:
    return IngressEnvelope(
        channel=CONSOLE,
        message_id=message_id,
        conversation_id=conversation,
        sender=Sender(id="ana", display_name="Ana"),
        text=text,
        reply_target=DeliveryTarget(channel=CONSOLE, conversation_id=conversation),
        is_direct=True,
        addressed_to_bot=True,
        capabilities=Capabilities(terminal_prompt=True),
    )


@pytest.fixture
async def started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[App, FakeTerminal, ScriptedProvider]]:
    monkeypatch.setenv("HATCHWAY_TEST_DEMO_TOKEN", SECRET)
    settings = parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": 60.0, "parallel_tools": False},
            "channels": {"console": {"main": {}}},
            "mcp": {"servers": {"demo": demo_config()}},
            "agents": {
                "demo": {
                    "allowed_tools": ["mcp:demo", "current_*"],
                    "excluded_tools": ["demo__fail"],
                    "approval": {"level": "readonly"},
                    "routes": [{"conversation": "demo-room"}],
                },
                "plain": {
                    "excluded_tools": ["mcp:demo", "file_*"],
                    "routes": [{"conversation": "plain-room"}],
                },
            },
        },
        environ={},
        require_provider=False,
    )
    provider = ScriptedProvider()
    terminal = FakeTerminal(CONSOLE, ["y"])
    app = App(settings, provider=provider, channels={"console.main": terminal})
    await app.start()
    try:
        async with asyncio.timeout(60):
            await app.mcp.wait_ready()
        yield app, terminal, provider
    finally:
        await app.stop(drain_timeout_s=5.0)


async def test_each_agent_offers_its_own_tools(
    started: tuple[App, FakeTerminal, ScriptedProvider],
) -> None:
    app, terminal, provider = started
    for room, answer in [("local", "one"), ("demo-room", "two"), ("plain-room", "three")]:
        provider.add(reply(f"answer {answer}"))
        await app.gateway.deliver(message(room, "which tools?", f"m-{room}"))
        await terminal.wait_for(f"answer {answer}")
    default, demo, plain = ({t.name for t in r.tools} for r in provider.requests)
    assert {"demo__add", "demo__fail", "current_time", "file_read"} <= default
    assert demo == {"demo__add", "demo__echo", "demo__crash", "demo__has_env", "current_time"}
    assert not any(name.startswith("demo__") for name in plain)
    assert not any(name.startswith("file_") for name in plain)
    assert "current_time" in plain


async def test_an_agents_approval_overrides_decide_its_calls(
    started: tuple[App, FakeTerminal, ScriptedProvider],
) -> None:
    app, terminal, provider = started
    # the demo agent is readonly: a side-effecting call is refused without asking anyone
    provider.add(reply("", call("demo__add", {"a": 1, "b": 2})), reply("refused, fine"))
    with capture_logs(processors=[merge_contextvars]) as logs:
        await app.gateway.deliver(message("demo-room", "add", "m1"))
        await terminal.wait_for("refused, fine")
    assert terminal.prompts == []
    # the turn's log lines say which agent answered and by which route
    [denied] = [line for line in logs if line["event"] == "tool_call_policy_denied"]
    assert (denied["agent"], denied["route"]) == ("demo", "agents.demo.routes[0]")
    assert denied["session"] == "console.main:demo-room:@demo"
    # the default agent asks the person at the terminal, who says yes
    provider.add(reply("", call("demo__add", {"a": 1, "b": 2})), reply("added: 3"))
    await app.gateway.deliver(message("local", "add", "m2"))
    await terminal.wait_for("added: 3")
    assert len(terminal.prompts) == 1
    rows = [(e.tool, e.decision, e.reason) for e in await app.store.audit.since()]
    assert rows == [
        ("demo__add", Decision.POLICY_DENIED, "policy: readonly level"),
        ("demo__add", Decision.APPROVED, rows[1][2]),
    ]
