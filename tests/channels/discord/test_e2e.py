"""End to end: the whole daemon (gateway, approvals, agent loop) behind the Discord channel,
built from settings through the channel registry, against the loopback Discord fake.

A scripted model asks for a side-effecting tool; the approval card with buttons is posted in
the conversation; a non-approver's click is refused ephemerally and audited; the approver's
click (INTERACTION_CREATE) runs the tool, the card shows the outcome, and the answer follows.
An approver's "Deny with a reply" keeps the tool from running and the model gets the text.
A DM turn with a long answer arrives split under 2,000 characters with code fences intact.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from bot.app import App
from bot.channel import ClickVerdict, HealthState
from channels.discord.adapter import DiscordChannel
from channels.discord.markup import render_chunks
from tests.fakes.channel_health import wait_for_health
from tests.fakes.discord_approvals import click, ephemeral_text, submit_reply
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import (
    BOB,
    BOT,
    BOT_ID,
    CAROL,
    DM,
    GENERAL,
    said,
    settings_for,
)
from tests.fakes.recording_tool import deploy_tool
from tests.fakes.scripted_provider import ScriptedProvider, call, reply

pytestmark = pytest.mark.usefixtures("discord_env")


async def test_mention_approval_click_runs_the_tool(fake: FakeDiscord, tmp_path: Path) -> None:
    ran: list[Mapping[str, object]] = []
    provider = ScriptedProvider(
        [reply("", call("deploy", {"version": "v2"})), reply("Deployed **v2** & done.")]
    )
    app = App(settings_for(fake, tmp_path), provider=provider, tools=[deploy_tool(ran)])
    async with app:
        channel = app.channels["discord.main"]
        assert isinstance(channel, DiscordChannel)
        await wait_for_health(channel, HealthState.CONNECTED)
        mention = said(fake, f"<@{BOT_ID}> deploy v2", mentions=[BOT])
        await fake.dispatch("MESSAGE_CREATE", mention)

        await fake.wait_until(lambda: any(m["components"] for m in fake.messages.values()))
        [card] = [m for m in fake.messages.values() if m["components"]]
        assert card["channel_id"] == GENERAL and "deploy" in card["content"]

        refused = await click(fake, card["id"], "a", CAROL)
        assert ephemeral_text(refused) == ClickVerdict.NOT_AUTHORISED.message
        assert ran == []

        accepted = await click(fake, card["id"], "a", BOB)
        assert accepted.body == {"type": 6}
        await fake.wait_until(lambda: "Deployed **v2** & done." in fake.posted(GENERAL))
        assert ran == [{"version": "v2"}]
        card_edits = [
            e.body
            for e in fake.calls_to("PATCH", rf"/channels/{GENERAL}/messages/{card['id']}")
            if e.body is not None
        ]
        assert any(
            "Approved: deploy" in e.get("content", "") and e.get("components") == []
            for e in card_edits
        )

        rows = await app.store.audit.since()
        decisions = {(row.decision, row.decided_by) for row in rows}
        assert ("click_refused:approve", CAROL["id"]) in decisions
        assert any(by == BOB["id"] and "refused" not in d for d, by in decisions)


async def test_deny_with_a_reply_keeps_the_tool_from_running(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    ran: list[Mapping[str, object]] = []
    provider = ScriptedProvider(
        [reply("", call("deploy", {"version": "v2"})), reply("Understood, staying on v1.")]
    )
    app = App(settings_for(fake, tmp_path), provider=provider, tools=[deploy_tool(ran)])
    async with app:
        channel = app.channels["discord.main"]
        await wait_for_health(channel, HealthState.CONNECTED)
        await fake.dispatch("MESSAGE_CREATE", said(fake, f"<@{BOT_ID}> deploy v2", mentions=[BOT]))
        await fake.wait_until(lambda: any(m["components"] for m in fake.messages.values()))
        [card] = [m for m in fake.messages.values() if m["components"]]
        [pending] = await app.store.approvals.list()

        opened = await click(fake, card["id"], "r", BOB)
        assert opened.body is not None and opened.body["type"] == 9
        answer = "Stay on v1 until Monday."
        submitted = await submit_reply(fake, card["id"], answer, BOB, approval_id=pending.id)
        assert ephemeral_text(submitted) == ClickVerdict.ACCEPTED.message
        await fake.wait_until(lambda: "Understood, staying on v1." in fake.posted(GENERAL))
        card_edits = [
            e.body.get("content", "")
            for e in fake.calls_to("PATCH", rf"/channels/{GENERAL}/messages/{card['id']}")
            if e.body is not None
        ]
    assert ran == []
    assert any("Denied with a reply: deploy" in text for text in card_edits)
    tool_message = provider.requests[1].messages[-1]
    assert tool_message.role == "tool"
    assert tool_message.content == f"Not executed: the approver answered instead: {answer}"


async def test_dm_turn_with_a_long_answer(fake: FakeDiscord, tmp_path: Path) -> None:
    code = "\n".join(f"step_{i} = run({i})" for i in range(120))
    long_answer = (
        "Here is the plan.\n\n```python\n" + code + "\n```\n\n" + " ".join(["All done."] * 150)
    )
    assert len(long_answer) > 3000
    provider = ScriptedProvider([reply(long_answer)])
    app = App(settings_for(fake, tmp_path), provider=provider, tools=[])
    async with app:
        channel = app.channels["discord.main"]
        await wait_for_health(channel, HealthState.CONNECTED)
        await fake.dispatch("MESSAGE_CREATE", said(fake, "plan it please", channel_id=DM))
        expected = render_chunks(long_answer)
        await fake.wait_until(lambda: fake.posted(DM)[-len(expected) :] == expected)
    assert len(expected) >= 2
    assert all(len(chunk) <= 2000 for chunk in expected)
    assert all(chunk.count("```") % 2 == 0 for chunk in expected)
    joined = "".join(expected)
    assert "step_0 = run(0)" in joined and "step_119 = run(119)" in joined
    assert provider.requests[0].messages[-1].content == "plan it please"
