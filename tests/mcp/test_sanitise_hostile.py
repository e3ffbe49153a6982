"""A real MCP server with a hostile tool listing (``hostile_server.py``), the App, and what
the model's request, an approval prompt, an approval card and the catalog get of it."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.app import App
from bot.channel import ApprovalCard
from bot.config import McpConfig, McpServerConfig, Settings, parse_settings
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.mcp.catalog import McpCatalog
from bot.mcp.sanitise import DESCRIPTION_CHARS, SCHEMA_CHARS
from bot.providers.base import Provider
from bot.providers.factory import build_provider
from bot.visible_text import is_invisible
from tests.fakes.channel import FakeChannel, FakeTerminal, clicked
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.mcp.conftest import CONSOLE, console_message, output
from tests.mcp.hostile_server import HOSTILE

HOSTILE_SERVER = [sys.executable, str(Path(__file__).with_name("hostile_server.py"))]
KEY = "sk-test-not-a-real-key-000"
SLACK = ChannelRef(kind="slack", alias="team")
APPROVER = "U_ADMIN"
#: What providers accept as a tool name (OpenAI and Anthropic alike).
PROVIDER_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
MARK = "[from MCP server hostile] "
ACCEPTED = {
    "hostile__add",
    "hostile__get_weather",
    "hostile__send_email",
    "hostile__wipe_disk",
    "hostile__huge",
    "hostile__stuffed",
    "hostile__naive_search",
    "hostile__get_file",
}
REFUSED = {"поиск", "deep", "remote_ref", "bad_property", "not_schema"}


def hidden_in(text: str) -> list[str]:
    """The characters of ``text`` a reader could not see (line breaks aside)."""
    return [c for c in text if c != "\n" and is_invisible(c)]


def strings_of(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings_of(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings_of(item)


def settings(tmp_path: Path, base: dict[str, Any], **server: Any) -> Settings:
    data = {
        "state_dir": str(tmp_path),
        "agent": {"turn_timeout_s": 60.0, "parallel_tools": False},
        "channels": {"console": {"main": {}}},
        "mcp": {"servers": {"hostile": {"command": HOSTILE_SERVER, **server}}},
        **base,
    }
    return parse_settings(data, environ={"HATCHWAY_TEST_OPENAI_KEY": KEY}, require_provider=False)


@asynccontextmanager
async def running(
    settings: Settings, provider: Provider, channels: dict[str, Any]
) -> AsyncIterator[App]:
    app = App(settings, provider=provider, channels=channels)
    await app.start()
    try:
        assert app.mcp is not None
        async with asyncio.timeout(60):
            await app.mcp.wait_ready()
        yield app
    finally:
        await app.stop(drain_timeout_s=5.0)


async def test_the_model_and_the_prompt_see_clean_capped_marked_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HATCHWAY_TEST_OPENAI_KEY", KEY)
    terminal = FakeTerminal(CONSOLE, ["y"])
    async with OpenAIFake() as fake:
        provider_settings = {
            "providers": {
                "default": {
                    "kind": "openai",
                    "base_url": fake.base_url,
                    "model": "scripted",
                    "api_key_env": "HATCHWAY_TEST_OPENAI_KEY",
                    "tool_mode": "native",
                }
            }
        }
        config = settings(tmp_path, provider_settings)
        fake.queue_tool_calls([("hostile__wipe_disk", {"target": "sda"})])
        fake.queue_text("Wiped nothing.")
        with capture_logs() as logs:
            async with running(config, build_provider(config), {"console.main": terminal}) as app:
                await app.gateway.deliver(console_message("wipe the disk", "m1"))
                await terminal.wait_for("Wiped nothing.")
                rows = await app.store.db.fetchall(
                    "SELECT tool, status, observation FROM tool_calls"
                )

    # the provider request as it went over HTTP
    tools = [t["function"] for t in fake.requests[0].body["tools"]]
    names = [t["name"] for t in tools]
    assert all(PROVIDER_NAME.fullmatch(n) for n in names)
    assert len(names) == len(set(names))
    mcp_tools = {t["name"]: t for t in tools if t["name"].startswith("hostile__")}
    assert set(mcp_tools) == ACCEPTED  # refused tools and the second get_file are absent
    for tool in mcp_tools.values():
        assert tool["description"].startswith(MARK)
        assert len(tool["description"]) <= DESCRIPTION_CHARS
        assert not hidden_in(tool["description"])
        schema = json.dumps(tool["parameters"], ensure_ascii=False)
        assert len(schema) <= SCHEMA_CHARS
        assert not [s for s in strings_of(tool["parameters"]) if hidden_in(s)]
        assert "Ignore previous instructions" not in schema
    wipe = mcp_tools["hostile__wipe_disk"]
    assert wipe["description"] == f"{MARK}Erases nothing at all."
    assert wipe["parameters"]["properties"]["target"]["description"] == "Which disk"
    assert len(mcp_tools["hostile__huge"]["description"]) == DESCRIPTION_CHARS

    # the approval prompt: the marked description, nothing a terminal would obey
    [prompt] = terminal.prompts
    assert f"About the tool: {MARK}Erases nothing at all." in prompt
    assert not hidden_in(prompt)

    # the call reached the server under the server's own name
    [(tool, status, observation)] = [tuple(r) for r in rows]
    assert (tool, status) == ("hostile__wipe_disk", "executed")
    called = {"tool": f"wipe{HOSTILE} disk", "arguments": {"target": "sda"}}
    assert observation == output("hostile__wipe_disk", json.dumps(called))

    dropped = {e["tool"]: e for e in logs if e["event"].startswith("mcp_tool_")}
    assert {t for t, e in dropped.items() if e["event"] == "mcp_tool_refused"} == REFUSED
    clash = dropped["get\\u200b_file"]
    assert clash["event"] == "mcp_tool_name_clash"
    assert clash["reason"] == "another tool is already named hostile__get_file"


async def test_the_approval_card_shows_a_clean_marked_description(tmp_path: Path) -> None:
    config = settings(
        tmp_path,
        {"channels": {"slack": {"team": {"allowed_users": ["*"], "approvers": [APPROVER]}}}},
    )
    channel = FakeChannel(SLACK)
    provider = ScriptedProvider()
    provider.add(
        reply("", call("hostile__wipe_disk", {"target": "sdb"})), reply("Done with the disk.")
    )
    async with running(config, provider, {"slack.team": channel}) as app:
        await app.gateway.deliver(slack_message("wipe sdb"))
        posted = await channel.next_card()
        assert channel.host is not None
        await clicked(channel.host, channel.click(posted, APPROVER))
        await channel.wait_for("Done with the disk.")
    card: ApprovalCard = posted.card
    text = card.render_text()
    assert card.tool == "hostile__wipe_disk"
    assert f"Why: it has side effects. About the tool: {MARK}Erases nothing at all." in text
    assert not hidden_in(text)
    # the arguments are shown as they run, as before
    assert card.lines == ("target: sdb",)


async def test_a_huge_description_is_cut_on_the_card(tmp_path: Path) -> None:
    config = settings(
        tmp_path,
        {"channels": {"slack": {"team": {"allowed_users": ["*"], "approvers": [APPROVER]}}}},
    )
    channel = FakeChannel(SLACK)
    provider = ScriptedProvider()
    provider.add(reply("", call("hostile__huge")), reply("ok"))
    async with running(config, provider, {"slack.team": channel}) as app:
        await app.gateway.deliver(slack_message("huge"))
        posted = await channel.next_card()
        assert channel.host is not None
        await clicked(channel.host, channel.click(posted, APPROVER))
        await channel.wait_for("ok")
    about = posted.card.reason.partition("About the tool: ")[2]
    assert about.startswith(f"{MARK}AAAA")
    assert about.endswith("…")
    assert len(about) == 300


async def test_a_listing_of_500_tools_is_capped_and_the_daemon_answers(tmp_path: Path) -> None:
    config = settings(
        tmp_path, {}, command=[*HOSTILE_SERVER, "--many", "500"], requires_approval=False
    )
    terminal = FakeTerminal(CONSOLE, [])
    provider = ScriptedProvider()
    provider.add(
        reply("", call("tool_search", {"query": "plain tool number 7"})),
        reply("", call("hostile__t7")),
        reply("Seven done."),
    )
    with capture_logs() as logs:
        async with running(config, provider, {"console.main": terminal}) as app:
            assert app.mcp is not None
            names = [s.name for s in app.mcp.mcp_specs()]
            await app.gateway.deliver(console_message("use tool seven", "m1"))
            await terminal.wait_for("Seven done.")
            rows = await app.store.db.fetchall("SELECT tool, status FROM tool_calls ORDER BY id")
    assert names == [f"hostile__t{i}" for i in range(100)]
    capped = [e for e in logs if e["event"] == "mcp_tools_capped"]
    assert capped == [
        {
            "event": "mcp_tools_capped",
            "server": "hostile",
            "listed": 500,
            "kept": 100,
            "log_level": "warning",
        }
    ]
    first, after_search, _ = ({t.name for t in r.tools} for r in provider.requests)
    assert "tool_search" in first
    assert not any(n.startswith("hostile__") for n in first)  # 100 tools: deferred
    assert "hostile__t7" in after_search
    assert [(r["tool"], r["status"]) for r in rows] == [
        ("tool_search", "executed"),
        ("hostile__t7", "executed"),
    ]


def slack_message(text: str) -> IngressEnvelope:
    return IngressEnvelope(
        channel=SLACK,
        message_id=f"m-{text}",
        conversation_id="C1",
        sender=Sender(id="U_ALICE", display_name="Alice"),
        text=text,
        reply_target=DeliveryTarget(channel=SLACK, conversation_id="C1"),
        is_group=True,
        addressed_to_bot=True,
        capabilities=Capabilities(approval_backchannel=True),
    )


async def test_tools_are_offered_as_soon_as_the_server_has_listed_them() -> None:
    """A turn that starts before the worker thread wrapped a server's first listing wraps it
    itself: here the catalog's wrapping task never runs at all."""
    server = McpServerConfig(command=[*HOSTILE_SERVER, "--many", "3"])
    catalog = McpCatalog(McpConfig(servers={"hostile": server}))
    connection = catalog.connections["hostile"]
    async with asyncio.TaskGroup() as group:
        task = group.create_task(connection.run())
        async with asyncio.timeout(60):
            await connection.wait_ready()
        names = [s.name for s in catalog.specs()]
        task.cancel()
    assert names == ["hostile__t0", "hostile__t1", "hostile__t2"]
