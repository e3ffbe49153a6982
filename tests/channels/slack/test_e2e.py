"""End to end: the whole daemon (gateway, approvals, agent loop) behind the Slack channel.

A scripted model asks for a side-effecting tool; the approval card is posted in the thread of
the mention over the real slack_sdk client; a non-approver's click is refused ephemerally and
audited; the approver's click runs the tool, the card changes, and the answer is threaded.
Deny with a reply goes through the modal to the model; a card left with buttons by a crash
(posted, but never recorded) loses them when clicked after the restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bot.app import App
from bot.approval.card import card_for
from bot.approval.reasons import EXPIRED_NOTICE, RuntimeReason
from bot.channel import ClickVerdict, HealthState
from bot.envelope import DeliveryTarget
from bot.store import Store
from bot.store.approvals import ApprovalRecord, ApprovalStatus
from tests.fakes.channel_health import wait_for_health
from tests.fakes.recording_tool import deploy_tool
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.fakes.slack_server import (
    BOT_USER,
    FakeSlack,
    block_actions,
    event_callback,
    message_event,
)
from tests.fakes.slack_setup import (
    APPROVER,
    REF,
    REQUESTER,
    STRANGER,
    daemon_settings,
    has_buttons,
    slack_channel,
)

MENTION_TS = "1700000001.000200"


async def test_mention_approval_and_threaded_answer(slack: FakeSlack, tmp_path: Path) -> None:
    ran: list[Mapping[str, object]] = []
    provider = ScriptedProvider(
        [reply("", call("deploy", {"version": "v2"})), reply("Deployed **v2** & done.")]
    )
    channel = slack_channel(slack)
    app = App(
        daemon_settings(slack, tmp_path),
        provider=provider,
        channels={str(REF): channel},
        tools=[deploy_tool(ran)],
    )
    async with app:
        await wait_for_health(channel, HealthState.CONNECTED)
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


# -- deny with a reply, and cards from before a crash ---------------------------------------------


async def reply_through_the_modal(slack: FakeSlack, card_ts: str, user: str, text: str) -> None:
    views = len(slack.views)
    pressed = slack.press("C0001", card_ts, "hatchway_reply", user=user)
    await slack.wait_ack(await slack.push("interactive", pressed))
    view = await slack.wait_view(views + 1)
    assert await slack.submit_view(view["id"], user=user, text=text) == {}


async def test_deny_with_a_reply_reaches_the_model_instead_of_the_tool(
    slack: FakeSlack, tmp_path: Path
) -> None:
    ran: list[Mapping[str, object]] = []
    provider = ScriptedProvider(
        [reply("", call("deploy", {"version": "v2"})), reply("Understood: staying on v1.")]
    )
    channel = slack_channel(slack)
    app = App(
        daemon_settings(slack, tmp_path),
        provider=provider,
        channels={str(REF): channel},
        tools=[deploy_tool(ran)],
    )
    async with app:
        await wait_for_health(channel, HealthState.CONNECTED)
        mention = message_event(f"<@{BOT_USER}> deploy v2", kind="app_mention", ts=MENTION_TS)
        await slack.push("events_api", event_callback(mention))
        await slack.wait_for("chat.postMessage", where=lambda p: "blocks" in p)
        (card_ts,) = [ts for (_, ts), m in slack.messages.items() if m.get("blocks")]

        pressed = slack.press("C0001", card_ts, "hatchway_reply", user=STRANGER)
        await slack.wait_ack(await slack.push("interactive", pressed))
        (ephemeral,) = await slack.wait_for("chat.postEphemeral")
        assert ephemeral.params["user"] == STRANGER
        assert ephemeral.params["text"] == ClickVerdict.NOT_AUTHORISED.message
        assert slack.calls_of("views.open") == []
        assert has_buttons(slack.messages[("C0001", card_ts)])

        instead = "Do not deploy v2; it is broken. Stay on v1."
        await reply_through_the_modal(slack, card_ts, APPROVER, instead)
        (answer,) = await slack.wait_for(
            "chat.postMessage", where=lambda p: "staying on v1" in str(p.get("text"))
        )
        assert answer.params["thread_ts"] == MENTION_TS
        card = slack.messages[("C0001", card_ts)]
        assert not has_buttons(card)
        assert "Denied with a reply" in card["blocks"][0]["text"]["text"]
        # the name Slack sent with the submission, and the id
        assert f"{APPROVER.lower()} ({APPROVER})" in card["blocks"][-1]["elements"][0]["text"]

        rows = await app.store.audit.since()
        decisions = {(row.decision, row.decided_by) for row in rows}
        assert [row for row in rows if row.decided_by == STRANGER] == []  # told, not audited
        assert (ApprovalStatus.EDITED.value, APPROVER) in decisions
    assert ran == []
    tool_messages = [m for m in provider.requests[1].messages if m.role == "tool"]
    assert [m.content for m in tool_messages] == [
        f"Not executed: the approver answered instead: {instead}"
    ]
    assert len(slack.calls_of("chat.postEphemeral")) == 1


async def test_a_card_posted_just_before_a_crash_loses_its_buttons_when_clicked(
    slack: FakeSlack, tmp_path: Path
) -> None:
    settings = daemon_settings(slack, tmp_path)
    # The previous process created the approval and posted its card, then died before it
    # stored where the card is: the service will not be able to edit that card.
    record = ApprovalRecord(
        id="apr-before-crash",
        channel=str(REF),
        conversation_id="C0001",
        thread_id=MENTION_TS,
        session_key="slack.main:C0001:" + MENTION_TS,
        requester=REQUESTER,
        requester_name="Ann",
        tool="deploy",
        fingerprint="0" * 64,
        summary=("version: v2",),
        ask_reason="deploy has side effects",
        created_at=1.0,
        expires_at=10**12,
    )
    async with await Store.open(settings.database_path()) as store:
        await store.approvals.create(record)
    target = DeliveryTarget(channel=REF, conversation_id="C0001", thread_id=MENTION_TS)
    posted = await slack_channel(slack).cards.post_approval_card(
        target, card_for(record, timeout_s=30)
    )

    channel = slack_channel(slack)
    app = App(settings, provider=ScriptedProvider(), channels={str(REF): channel}, tools=[])
    async with app:
        await wait_for_health(channel, HealthState.CONNECTED)
        notice = EXPIRED_NOTICE[RuntimeReason.RESTART].format(tool="deploy")
        await slack.wait_for("chat.postMessage", where=lambda p: p.get("text") == notice)
        expired = await app.store.approvals.get(record.id)
        assert expired is not None and expired.status is ApprovalStatus.EXPIRED
        assert has_buttons(slack.messages[("C0001", posted.message_id)])

        pressed = slack.press("C0001", posted.message_id, "hatchway_approve", user=APPROVER)
        await slack.push("interactive", pressed)
        (ephemeral,) = await slack.wait_for("chat.postEphemeral")
        assert ephemeral.params["text"] == ClickVerdict.UNKNOWN.message
    card = slack.messages[("C0001", posted.message_id)]
    assert not has_buttons(card)
    assert card["blocks"][0]["text"]["text"].startswith("⌛ *Expired:* `deploy`")
