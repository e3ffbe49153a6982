"""No card that nobody can answer, on Slack: the whole daemon behind the real slack-bolt /
slack_sdk against the loopback fake.

Membership comes from ``conversations.members`` (all pages). A mention in a channel none of
whose members is an approver is refused at once, no card posted, the model told why; an
approver who is a member gets the card; when Slack cannot say (the call fails) the card is
posted anyway. A DM from a non-approver with ``dm_approvers`` on reaches the approver's DM
(edited there, in the app's ``D…`` channel) or, when the approver cannot be messaged, ends
at once with the DM's own card closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from bot.app import App
from bot.approval.reasons import RuntimeReason
from bot.channel import HealthState
from bot.envelope import DeliveryTarget
from bot.store.approvals import ApprovalStatus
from channels.slack.api import SlackWebApi
from channels.slack.members import ConversationMembers
from tests.fakes.channel_health import wait_for_health
from tests.fakes.recording_tool import deploy_tool
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.fakes.slack_members import dm_channel_of
from tests.fakes.slack_server import BOT_USER, FakeSlack, event_callback, message_event
from tests.fakes.slack_setup import (
    APPROVER,
    BOT_TOKEN,
    REF,
    REQUESTER,
    STRANGER,
    daemon_settings,
    slack_channel,
)

MENTION_TS = "1700000001.000200"
NOBODY_SEES = "no approver can see this conversation"


def _deploy_then(answer: str) -> ScriptedProvider:
    return ScriptedProvider([reply("", call("deploy", {"version": "v2"})), reply(answer)])


def _tool_result(provider: ScriptedProvider) -> str:
    (tool,) = [m for m in provider.requests[1].messages if m.role == "tool"]
    return str(tool.content)


def _cards(slack: FakeSlack) -> list[tuple[str, str]]:
    """Where every card the bot posted is: ``(channel, ts)``."""
    return [key for key, m in slack.messages.items() if m.get("user") == BOT_USER and m["blocks"]]


async def _mention(slack: FakeSlack) -> None:
    mention = message_event(f"<@{BOT_USER}> deploy v2", kind="app_mention", ts=MENTION_TS)
    await slack.push("events_api", event_callback(mention))


@pytest.mark.parametrize(
    "members",
    [
        pytest.param([REQUESTER, BOT_USER], id="only the requester and the bot"),
        pytest.param(
            [f"U{n:04d}" for n in range(5)] + [REQUESTER, STRANGER, BOT_USER],
            id="a list over several pages",
        ),
    ],
)
async def test_a_channel_without_an_approver_refuses_the_call_at_once(
    slack: FakeSlack, tmp_path: Path, members: list[str]
) -> None:
    slack.conversations.members["C0001"] = members
    slack.conversations.page_limit = 3
    ran: list[Mapping[str, object]] = []
    provider = _deploy_then("I cannot deploy from here.")
    channel = slack_channel(slack)
    app = App(
        daemon_settings(slack, tmp_path),
        provider=provider,
        channels={str(REF): channel},
        tools=[deploy_tool(ran)],
    )
    async with app:
        await wait_for_health(channel, HealthState.CONNECTED)
        await _mention(slack)
        await slack.wait_for("chat.postMessage", where=lambda p: "from here" in str(p["text"]))
        rows = await app.store.audit.since()
    assert ran == []
    assert _cards(slack) == []
    assert NOBODY_SEES in _tool_result(provider)
    assert [(r.decision, r.reason) for r in rows] == [("auto_denied", "no approver reachable")]
    pages = slack.calls_of("conversations.members")
    assert {c.params["channel"] for c in pages} == {"C0001"}
    assert len(pages) == -(-len(members) // 3)  # every page read, once for the one approver


@pytest.mark.parametrize(
    ("members", "failing"),
    [
        pytest.param(
            ["U0001", "U0002", REQUESTER, APPROVER, BOT_USER], False, id="the approver is a member"
        ),
        pytest.param([], True, id="slack cannot say"),
    ],
)
async def test_a_channel_an_approver_may_see_gets_a_card_they_can_answer(
    slack: FakeSlack, tmp_path: Path, members: list[str], failing: bool
) -> None:
    slack.conversations.members["C0001"] = members
    slack.conversations.page_limit = 2
    if failing:
        slack.conversations.failing.add("C0001")
    ran: list[Mapping[str, object]] = []
    provider = _deploy_then("Deployed.")
    channel = slack_channel(slack)
    app = App(
        daemon_settings(slack, tmp_path),
        provider=provider,
        channels={str(REF): channel},
        tools=[deploy_tool(ran)],
    )
    async with app:
        await wait_for_health(channel, HealthState.CONNECTED)
        await _mention(slack)
        (card,) = await slack.wait_for("chat.postMessage", where=lambda p: "blocks" in p)
        assert card.params["channel"] == "C0001"
        assert card.params["thread_ts"] == MENTION_TS
        (where,) = _cards(slack)
        pressed = slack.press(*where, "hatchway_approve", user=APPROVER)
        await slack.push("interactive", pressed)
        await slack.wait_for("chat.postMessage", where=lambda p: p.get("text") == "Deployed.")
    assert ran == [{"version": "v2"}]
    assert slack.calls_of("conversations.members")


@pytest.mark.parametrize("dm_open", [True, False], ids=["dm open", "dm closed"])
async def test_a_dm_from_a_non_approver_reaches_the_approver_by_dm_or_ends_at_once(
    slack: FakeSlack, tmp_path: Path, dm_open: bool
) -> None:
    if not dm_open:
        slack.conversations.closed_dms.add(APPROVER)
    ran: list[Mapping[str, object]] = []
    provider = _deploy_then("Done or not, here I am.")
    channel = slack_channel(slack)
    app = App(
        daemon_settings(slack, tmp_path, dm_approvers=True),
        provider=provider,
        channels={str(REF): channel},
        tools=[deploy_tool(ran)],
    )
    async with app:
        await wait_for_health(channel, HealthState.CONNECTED)
        dm = message_event("deploy v2", channel="D0001", ts="1700000002.000100")
        await slack.push("events_api", event_callback(dm))
        # the requester's DM: a notice that it waits, no card with buttons they cannot use
        await slack.wait_for(
            "chat.postMessage", where=lambda p: "waits for an approver" in str(p.get("text"))
        )
        if dm_open:
            approver_dm = dm_channel_of(APPROVER)
            await slack.wait_for("chat.postMessage", where=lambda p: "blocks" in p)
            (copy,) = [key for key in _cards(slack) if key[0] == approver_dm]
            assert "Asked in: slack." in str(slack.messages[copy]["blocks"])
            await slack.push("interactive", slack.press(*copy, "hatchway_approve", user=APPROVER))
        await slack.wait_for("chat.postMessage", where=lambda p: "here I am" in str(p["text"]))
        (row,) = await app.store.approvals.list()
    if dm_open:
        assert ran == [{"version": "v2"}]
        assert row.status is ApprovalStatus.APPROVED
        assert dm_channel_of(APPROVER) in {
            c.params["channel"] for c in slack.calls_of("chat.update")
        }
        assert [key for key in _cards(slack) if key[0] == "D0001"] == []
        return
    assert ran == []
    assert row.status is ApprovalStatus.EXPIRED
    assert row.reason == RuntimeReason.NOBODY_REACHABLE
    assert _cards(slack) == []
    assert NOBODY_SEES in _tool_result(provider)
    refused = slack.calls_of("chat.postMessage")
    assert any(c.params["channel"] == APPROVER for c in refused)


# -- the member lists themselves -----------------------------------------------------------------


def _members(slack: FakeSlack, clock: list[float], **options: int) -> ConversationMembers:
    api = SlackWebApi(token=BOT_TOKEN, base_url=slack.api_base_url)
    return ConversationMembers(api, ttl_s=60, clock=lambda: clock[0], **options)


def _in(conversation: str, thread: str | None = None) -> DeliveryTarget:
    return DeliveryTarget(channel=REF, conversation_id=conversation, thread_id=thread)


async def test_member_lists_are_read_once_per_conversation_until_they_go_stale(
    slack: FakeSlack,
) -> None:
    slack.conversations.members["C0001"] = [REQUESTER, APPROVER]
    clock = [0.0]
    members = _members(slack, clock)
    in_thread = _in("C0001", MENTION_TS)
    assert await members.can_see(in_thread, APPROVER) is True
    assert await members.can_see(in_thread, STRANGER) is False
    assert await members.can_see(_in("C0001"), REQUESTER) is True
    assert len(slack.calls_of("conversations.members")) == 1
    slack.conversations.members["C0001"] = [REQUESTER, STRANGER]
    clock[0] = 61.0
    assert await members.can_see(in_thread, APPROVER) is False
    assert await members.can_see(in_thread, STRANGER) is True
    assert len(slack.calls_of("conversations.members")) == 2


async def test_a_failed_read_is_unknown_and_asked_again(slack: FakeSlack) -> None:
    slack.conversations.failing.add("C0001")
    members = _members(slack, [0.0])
    assert await members.can_see(_in("C0001"), APPROVER) is None
    assert await members.can_see(_in("CGONE"), APPROVER) is None  # channel_not_found
    slack.conversations.failing.clear()
    slack.conversations.members["C0001"] = [APPROVER]
    assert await members.can_see(_in("C0001"), APPROVER) is True


async def test_a_list_too_long_to_read_knows_only_who_it_read(slack: FakeSlack) -> None:
    slack.conversations.members["C0001"] = [APPROVER, "U0001", "U0002", REQUESTER]
    slack.conversations.page_limit = 2
    members = _members(slack, [0.0], max_pages=1)
    assert await members.can_see(_in("C0001"), APPROVER) is True
    assert await members.can_see(_in("C0001"), REQUESTER) is None


async def test_a_users_dm_is_seen_by_that_user_alone(slack: FakeSlack) -> None:
    members = _members(slack, [0.0])
    assert await members.can_see(_in(APPROVER), APPROVER) is True
    assert await members.can_see(_in(APPROVER), REQUESTER) is False
    assert slack.calls_of("conversations.members") == []
