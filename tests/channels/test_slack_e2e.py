"""End to end: the whole daemon (gateway, approvals, agent loop) behind the Slack channel.

A scripted model asks for a side-effecting tool; the approval card is posted in the thread of
the mention over the real slack_sdk client; a non-approver's click is refused ephemerally and
audited; the approver's click runs the tool, the card changes, and the answer is threaded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.channel import ClickVerdict, HealthState
from bot.config import SlackChannelConfig, parse_settings
from bot.envelope import ChannelRef
from bot.tools.spec import ToolContext, ToolSpec
from channels.slack import SlackChannel, SlackCredentials
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.fakes.slack_server import (
    BOT_USER,
    FakeSlack,
    block_actions,
    event_callback,
    message_event,
    person,
)

BOT_TOKEN = "xoxb-1111-2222-fake-bot-token"
APP_TOKEN = "xapp-1-A0001-fake-app-token"
REF = ChannelRef(kind="slack", alias="main")
REQUESTER = "UANN"
APPROVER = "UAPPROVER"
STRANGER = "USTRANGER"
MENTION_TS = "1700000001.000200"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(BOT_TOKEN, APP_TOKEN) as fake:
        fake.users[REQUESTER] = person(REQUESTER, "Ann")
        yield fake


async def wait_health(channel: SlackChannel, state: HealthState, wait_s: float = 10) -> None:
    async with asyncio.timeout(wait_s):
        # The Channel protocol exposes health as a plain property, without change events.
        while channel.health.state is not state:  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def test_mention_approval_and_threaded_answer(slack: FakeSlack, tmp_path: Path) -> None:
    channel_values: dict[str, Any] = {
        "api_base_url": slack.api_base_url,
        "allowed_users": [REQUESTER],
        "approvers": [APPROVER],
        "ping_interval_s": 0.5,
        "reconnect_base_s": 0.01,
        "reconnect_max_s": 0.05,
    }
    settings = parse_settings(
        {
            "state_dir": str(tmp_path),
            "approval": {"timeout_s": 30},
            "channels": {"slack": {"main": channel_values}},
        },
        environ={},
        require_provider=False,
    )
    ran: list[Mapping[str, object]] = []

    async def deploy(arguments: Mapping[str, object], context: ToolContext) -> str:
        ran.append(dict(arguments))
        return "deployed v2"

    tool = ToolSpec(
        name="deploy",
        description="Deploy a version.",
        parameters={
            "type": "object",
            "properties": {"version": {"type": "string"}},
            "required": ["version"],
        },
        handler=deploy,
    )
    provider = ScriptedProvider(
        [reply("", call("deploy", {"version": "v2"})), reply("Deployed **v2** & done.")]
    )
    channel = SlackChannel(
        ref=REF,
        config=SlackChannelConfig.model_validate(channel_values),
        credentials=SlackCredentials(bot_token=BOT_TOKEN, app_token=APP_TOKEN),
    )
    app = App(settings, provider=provider, channels={str(REF): channel}, tools=[tool])
    async with app:
        await wait_health(channel, HealthState.CONNECTED)
        mention = message_event(f"<@{BOT_USER}> deploy v2", kind="app_mention", ts=MENTION_TS)
        await slack.push("events_api", event_callback(mention))

        (card,) = await slack.wait_for("chat.postMessage", where=lambda p: "blocks" in p)
        assert card.params["thread_ts"] == MENTION_TS
        approval_id = card.params["blocks"][-1]["elements"][0]["value"]

        def click(user: str) -> dict[str, Any]:
            return block_actions(
                "hatchway_approve",
                approval_id,
                user=user,
                channel="C0001",
                message_ts="0",
                thread_ts=MENTION_TS,
            )

        await slack.push("interactive", click(STRANGER))
        (ephemeral,) = await slack.wait_for("chat.postEphemeral")
        assert ephemeral.params["user"] == STRANGER
        assert ephemeral.params["text"] == ClickVerdict.NOT_AUTHORISED.message
        assert ran == []

        await slack.push("interactive", click(APPROVER))
        await slack.wait_for(
            "chat.update",
            where=lambda p: (
                any(b.get("type") == "section" for b in p.get("blocks") or [])
                and "Approved" in str(p["blocks"][0]["text"]["text"])
            ),
        )
        (answer,) = await slack.wait_for(
            "chat.postMessage", where=lambda p: "done" in str(p.get("text"))
        )
        assert answer.params["text"] == "Deployed *v2* &amp; done."
        assert answer.params["thread_ts"] == MENTION_TS
        assert ran == [{"version": "v2"}]
        assert len(slack.calls_of("chat.postEphemeral")) == 1

        rows = await app.store.audit.since()
        decisions = {(row.decision, row.decided_by) for row in rows}
        assert ("click_refused:approve", STRANGER) in decisions
        assert any(by == APPROVER and "refused" not in d for d, by in decisions)
        assert all(row.requester == REQUESTER for row in rows)
