"""No card that nobody can answer, on Telegram: the whole daemon behind the real
python-telegram-bot against the loopback Bot API fake.

Membership comes from ``getChatMember``. A mention in a group the approver is not in (left,
banned, restricted out, unknown to Telegram) is refused at once, no card posted, the model
told why; an approver in the group gets the card and their tap runs the tool; when Telegram
cannot answer the question the card is posted anyway. A DM from a non-approver with
``dm_approvers`` on, whose approver never started the bot, ends at once with the DM's own
card closed as expired.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.approval.reasons import RuntimeReason
from bot.channel import ApprovalCard
from bot.envelope import DeliveryTarget
from bot.errors import ChannelError
from bot.store import Store
from bot.store.approvals import ApprovalStatus
from tests.fakes.channel_health import serving
from tests.fakes.recording_host import RecordingHost
from tests.fakes.recording_tool import deploy_tool
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.fakes.telegram_members import CHAT_NOT_FOUND, NEVER_STARTED
from tests.fakes.telegram_server import (
    JSON,
    ApiCall,
    FakeTelegram,
    callback,
    forum_chat,
    mention,
    message,
    private_chat,
    user,
)
from tests.fakes.telegram_setup import (
    APPROVER,
    REF,
    REQUESTER,
    channel_for,
    settings_for,
    started,
)

pytestmark = pytest.mark.usefixtures("telegram_env")

GROUP = forum_chat()
TOPIC = 77
NOBODY_SEES = "no approver can see this conversation"
ASKED = "@hatchbot deploy v2"
CARD = ApprovalCard(
    approval_id="apr-1",
    tool="deploy",
    lines=("version: v2",),
    reason="deploy has side effects",
    requested_by="Ann",
)


def _deploy_then(answer: str) -> ScriptedProvider:
    return ScriptedProvider([reply("", call("deploy", {"version": "v2"})), reply(answer)])


def _tool_result(provider: ScriptedProvider) -> str:
    (tool,) = [m for m in provider.requests[1].messages if m.role == "tool"]
    return str(tool.content)


def _is_card(c: ApiCall) -> bool:
    return "reply_markup" in c.params


def _cards_in(tg: FakeTelegram, chat_id: int) -> list[JSON]:
    return [m for m in tg.bot_messages(chat_id) if m["text"].startswith("🔐 Approval needed")]


async def _ask_in_the_group(tg: FakeTelegram) -> None:
    asked = message(
        GROUP,
        user(REQUESTER, "Ann"),
        ASKED,
        message_id=21,
        thread_id=TOPIC,
        entities=mention(ASKED),
    )
    await tg.push({"message": asked})


def _approver_is(tg: FakeTelegram, status: str) -> None:
    tg.roster.statuses[GROUP["id"]] = {REQUESTER: "member", APPROVER: status}


@pytest.mark.parametrize(
    "outside",
    [
        pytest.param({"status": "left"}, id="left"),
        pytest.param({"status": "kicked"}, id="banned"),
        pytest.param({"status": "restricted_left"}, id="restricted, no longer a member"),
        pytest.param({"error": (400, "Bad Request: user not found")}, id="user not found"),
        pytest.param({"error": (400, "Bad Request: PARTICIPANT_ID_INVALID")}, id="invalid id"),
    ],
)
async def test_a_group_without_the_approver_refuses_the_call_at_once(
    tg: FakeTelegram, tmp_path: Path, outside: dict[str, Any]
) -> None:
    if "status" in outside:
        _approver_is(tg, outside["status"])
    else:
        tg.fail_next("getChatMember", *outside["error"])
    ran: list[Mapping[str, object]] = []
    provider = _deploy_then("I cannot deploy from this group.")
    app = App(
        settings_for(tg, tmp_path, dm_approvers=False),
        provider=provider,
        tools=[deploy_tool(ran)],
    )
    async with app:
        await started(app)
        await _ask_in_the_group(tg)
        await tg.wait_for("sendMessage", lambda c: "this group" in str(c.params["text"]))
        rows = await app.store.audit.since()
    assert ran == []
    assert [c for c in tg.calls_of("sendMessage") if _is_card(c)] == []
    assert NOBODY_SEES in _tool_result(provider)
    assert [(r.decision, r.reason) for r in rows] == [("auto_denied", "no approver reachable")]
    (asked,) = tg.calls_of("getChatMember")
    assert asked.params == {"chat_id": GROUP["id"], "user_id": APPROVER}


@pytest.mark.parametrize(
    "inside",
    [
        pytest.param({"status": "member"}, id="member"),
        pytest.param({"status": "administrator"}, id="administrator"),
        pytest.param({"status": "creator"}, id="owner"),
        pytest.param({"status": "restricted"}, id="restricted, still a member"),
        pytest.param({"error": (500, "Internal Server Error")}, id="telegram fails"),
        pytest.param(
            {"error": (429, "Too Many Requests: retry after 30"), "retry_after": 30},
            id="rate limited",
        ),
    ],
)
async def test_a_group_an_approver_may_see_gets_a_card_they_can_answer(
    tg: FakeTelegram, tmp_path: Path, inside: dict[str, Any]
) -> None:
    if "status" in inside:
        _approver_is(tg, inside["status"])
    else:
        _approver_is(tg, "left")  # never read: the question itself fails
        retry = {"retry_after": inside["retry_after"]} if "retry_after" in inside else None
        tg.fail_next("getChatMember", *inside["error"], parameters=retry)
    ran: list[Mapping[str, object]] = []
    provider = _deploy_then("Deployed from the topic.")
    app = App(
        settings_for(tg, tmp_path, dm_approvers=False),
        provider=provider,
        tools=[deploy_tool(ran)],
    )
    async with app:
        await started(app)
        await _ask_in_the_group(tg)
        (posted,) = await tg.wait_for("sendMessage", _is_card)
        assert posted.params["chat_id"] == GROUP["id"]
        assert posted.params["message_thread_id"] == TOPIC
        (card,) = _cards_in(tg, GROUP["id"])
        approve = card["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        await tg.push(callback("q-boss", user(APPROVER, "Boss"), approve, card))
        await tg.wait_for("sendMessage", lambda c: "the topic" in str(c.params["text"]))
    assert ran == [{"version": "v2"}]
    assert len(tg.calls_of("getChatMember")) == 1


@pytest.mark.parametrize(
    "refusal",
    [pytest.param(NEVER_STARTED, id="403 never started"), pytest.param(CHAT_NOT_FOUND, id="400")],
)
async def test_a_dm_whose_approver_never_started_the_bot_ends_at_once(
    tg: FakeTelegram, tmp_path: Path, refusal: tuple[int, str]
) -> None:
    tg.roster.unreachable[APPROVER] = refusal
    ran: list[Mapping[str, object]] = []
    provider = _deploy_then("Nobody can approve that here.")
    app = App(settings_for(tg, tmp_path), provider=provider, tools=[deploy_tool(ran)])
    async with app:
        await started(app)
        dm = private_chat(REQUESTER)
        await tg.push({"message": message(dm, user(REQUESTER, "Ann"), "deploy v2", message_id=9)})
        await tg.wait_for("sendMessage", lambda c: "Nobody can" in str(c.params["text"]))
        (row,) = await app.store.approvals.list()
    assert ran == []
    assert row.status is ApprovalStatus.EXPIRED
    assert row.reason == RuntimeReason.NOBODY_REACHABLE
    assert NOBODY_SEES in _tool_result(provider)
    tried = [c.params["chat_id"] for c in tg.calls_of("sendMessage") if _is_card(c)]
    assert tried == [APPROVER]
    # the requester's DM: told it waits, never a card with buttons they cannot use
    texts = [m["text"] for m in tg.bot_messages(REQUESTER)]
    assert any(t.startswith("🔐 deploy waits for an approver") for t in texts)
    assert not [m for m in tg.bot_messages(REQUESTER) if "reply_markup" in m]


async def test_the_adapter_answers_for_private_chats_without_asking(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    """A private chat's id is its user's: seen by that user alone, no ``getChatMember``."""
    app = App(settings_for(tg, tmp_path), provider=ScriptedProvider(), tools=[])
    async with app:
        channel = await started(app)
        dm = DeliveryTarget(channel=REF, conversation_id=str(REQUESTER))
        assert await channel.members.can_see(dm, str(REQUESTER)) is True
        assert await channel.members.can_see(dm, str(APPROVER)) is False
        assert await channel.members.can_see(dm, "U_NOT_TELEGRAM") is False
    assert tg.calls_of("getChatMember") == []


@pytest.mark.parametrize(
    "refusal",
    [pytest.param(NEVER_STARTED, id="403 never started"), pytest.param(CHAT_NOT_FOUND, id="400")],
)
async def test_a_card_to_a_user_who_never_started_the_bot_is_a_channel_error(
    tg: FakeTelegram, store: Store, refusal: tuple[int, str]
) -> None:
    """What the approval service's DM copy meets: a ChannelError, so it counts as not sent."""
    tg.roster.unreachable[APPROVER] = refusal
    channel = channel_for(tg, store)
    async with serving(channel, RecordingHost()):
        with pytest.raises(ChannelError):
            await channel.cards.post_approval_card(
                DeliveryTarget(channel=REF, conversation_id=str(APPROVER)), CARD
            )
