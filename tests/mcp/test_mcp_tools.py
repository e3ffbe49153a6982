"""MCP tools end to end: a real server process, the App, the scripted model, the console
with a scripted terminal approver, and a real SQLite file."""

from __future__ import annotations

import pytest

from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.mcp.conftest import SECRET, AppFactory, console_message, demo_config, output


async def test_tools_are_listed_called_approved_and_recorded(
    start_app: AppFactory, provider: ScriptedProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    app, terminal = await start_app(
        {"servers": {"demo": demo_config(auto_approve=["echo", "has_env"])}}, answers=("y", "y")
    )
    provider.add(
        reply(
            "",
            call("demo__add", {"a": 2, "b": 3}),
            call("demo__echo", {"text": "hello"}),
            call("demo__fail", {"reason": "no such thing"}),
            call("demo__has_env", {"name": "DEMO_TOKEN"}),
        ),
        reply("2 + 3 = 5"),
    )
    await app.gateway.deliver(console_message("add 2 and 3", "m1"))
    await terminal.wait_for("2 + 3 = 5")

    offered = {t.name for t in provider.requests[0].tools}
    assert {"demo__add", "demo__echo", "demo__fail", "demo__crash"} <= offered
    assert "tool_search" not in offered  # few tools: nothing deferred
    # echo and has_env are auto-approved by the server's config; add and fail prompted
    assert len(terminal.prompts) == 2
    assert "demo__add" in terminal.prompts[0]
    assert "demo__fail" in terminal.prompts[1]

    rows = await app.store.db.fetchall(
        "SELECT tool, status, observation FROM tool_calls ORDER BY id"
    )
    recorded = {r["tool"]: (r["status"], r["observation"]) for r in rows}
    assert recorded["demo__add"] == ("executed", output("demo__add", "5"))
    assert recorded["demo__echo"] == ("executed", output("demo__echo", "hello"))
    # the server's error result is a failed execution (this server hides the reason)
    assert recorded["demo__fail"] == (
        "executed",
        "McpCallFailed: the MCP tool demo__fail reported an error:\n"
        + output("demo__fail", "Error executing tool fail"),
    )
    assert recorded["demo__has_env"] == (
        "executed",
        output("demo__has_env", f"set ({len(SECRET)} chars)"),
    )

    audit = {e.tool: e for e in await app.store.audit.since()}
    assert audit["demo__add"].decision == "approved"
    assert audit["demo__add"].decided_by == "ana"
    assert SECRET not in capsys.readouterr().out


async def test_denied_call_does_not_reach_the_server(
    start_app: AppFactory, provider: ScriptedProvider
) -> None:
    app, terminal = await start_app({"servers": {"demo": demo_config()}}, answers=("n",))
    provider.add(reply("", call("demo__echo", {"text": "hi"})), reply("ok, not echoed"))
    await app.gateway.deliver(console_message("echo hi", "m1"))
    await terminal.wait_for("ok, not echoed")
    rows = await app.store.db.fetchall("SELECT tool, status FROM tool_calls")
    assert [(r["tool"], r["status"]) for r in rows] == [("demo__echo", "not_executed")]


async def test_deferred_activation_through_tool_search(
    start_app: AppFactory, provider: ScriptedProvider
) -> None:
    mcp = {
        "deferred_threshold": 2,
        "tool_filter_groups": [
            {"mode": "always", "tools": ["demo__has_env"]},
            {"mode": "keyword", "tools": ["demo__echo"], "keywords": ["parrot"]},
        ],
        "servers": {"demo": demo_config(requires_approval=False)},
    }
    app, terminal = await start_app(mcp)
    provider.add(
        reply("", call("tool_search", {"query": "add numbers"})),
        reply("", call("demo__add", {"a": 20, "b": 22})),
        reply("It is 42."),
        reply("Second turn."),
    )
    await app.gateway.deliver(console_message("what is 20 plus 22?", "m1"))
    await terminal.wait_for("It is 42.")
    await app.gateway.deliver(console_message("please parrot this", "m2"))
    await terminal.wait_for("Second turn.")

    first, after_search, final, next_turn = ({t.name for t in r.tools} for r in provider.requests)
    assert "tool_search" in first
    assert "demo__add" not in first
    assert "demo__has_env" in first  # an "always" group
    assert "demo__echo" not in first  # keyword group, no keyword in the message
    assert "demo__add" in after_search  # activated for the rest of the turn
    assert "demo__add" in final
    assert "demo__add" not in next_turn  # a new turn starts without it
    assert "demo__echo" in next_turn  # its keyword appeared
    rows = await app.store.db.fetchall("SELECT tool, status, observation FROM tool_calls")
    recorded = {r["tool"]: (r["status"], r["observation"]) for r in rows}
    assert "demo__add" in recorded["tool_search"][1]
    assert recorded["demo__add"] == ("executed", output("demo__add", "42"))
