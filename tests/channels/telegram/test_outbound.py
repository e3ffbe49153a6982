"""Outbound Telegram calls through the real python-telegram-bot: splitting, HTML fallback,
edits that are safe to repeat, flood control, typing, reactions and approval cards."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.channel import ApprovalCard, BackgroundDeliveryCheck, CardState, SentMessage
from bot.envelope import DeliveryTarget
from bot.errors import ChannelError
from bot.store import Store
from channels.telegram.adapter import TelegramChannel
from tests.fakes.channel_health import serving as running
from tests.fakes.recording_host import RecordingHost
from tests.fakes.telegram_html import balanced
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.telegram_setup import REF, channel_for

CHAT = -100777
TOPIC_TARGET = DeliveryTarget(
    channel=REF, conversation_id=str(CHAT), thread_id="12", reply_to_message_id=f"{CHAT}:99"
)
DM_TARGET = DeliveryTarget(channel=REF, conversation_id="1001")
CARD = ApprovalCard(
    approval_id="Zx_9-q",
    tool="shell",
    lines=("command: rm -rf build <tmp>",),
    reason="shell is not auto-approved",
    requested_by="Ann",
)


@pytest.fixture
async def live(tg: FakeTelegram, tmp_path: Path) -> AsyncIterator[TelegramChannel]:
    async with await Store.open(tmp_path / "state.db") as store:
        channel = channel_for(tg, store, retry_after_max_s=5)
        async with running(channel, RecordingHost()):
            yield channel


async def test_long_answer_is_split_into_valid_chunks(
    tg: FakeTelegram, live: TelegramChannel
) -> None:
    code = "\n".join(f"x = a < {i} & b > {i}" for i in range(400))
    text = "Intro **bold**\n\n```python\n" + code + "\n```\n\nThe end."
    sent = await live.send(TOPIC_TARGET, text)
    calls = tg.calls_of("sendMessage")
    assert len(sent) == len(calls) >= 2
    bodies = [str(c.params["text"]) for c in calls]
    assert all(len(b) <= 4096 and balanced(b) for b in bodies)
    assert all(c.params["parse_mode"] == "HTML" for c in calls)
    assert all(c.params["message_thread_id"] == 12 for c in calls)
    assert [("reply_parameters" in c.params) for c in calls] == [True] + [False] * (len(calls) - 1)
    assert calls[0].params["reply_parameters"]["message_id"] == 99
    code_text = "".join(
        m
        for b in bodies
        for m in re.findall(r'<code class="language-python">(.*?)</code>', b, re.S)
    )
    assert code_text.replace("\n", "") == (
        code.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\n", "")
    )
    assert all(re.fullmatch(rf"{CHAT}:\d+", m.message_id) for m in sent)


async def test_a_keyed_send_posts_exactly_as_an_unkeyed_one(
    tg: FakeTelegram, live: TelegramChannel
) -> None:
    """The key names the reply in the channel's own record (a bot cannot read history, so
    its check is an edit probe run later), and changes nothing that is posted."""
    assert isinstance(live.delivery, BackgroundDeliveryCheck) and live.delivery.checks_later()
    text = "Done: **3 files**\n\n" + "line of the answer\n" * 400
    plain = await live.send(TOPIC_TARGET, text)
    unkeyed = [c.params for c in tg.calls_of("sendMessage")]
    keyed = await live.send(TOPIC_TARGET, text, key="turn-7:answer")
    assert [c.params for c in tg.calls_of("sendMessage")][len(unkeyed) :] == unkeyed
    assert len(keyed) == len(plain) == len(unkeyed) >= 2
    assert {m.target for m in keyed} == {m.target for m in plain} == {TOPIC_TARGET}


async def test_send_honours_retry_after(tg: FakeTelegram, live: TelegramChannel) -> None:
    tg.fail_next(
        "sendMessage", 429, "Too Many Requests: retry after 1", parameters={"retry_after": 1}
    )
    [sent] = await live.send(DM_TARGET, "hello")
    first, second = tg.calls_of("sendMessage")
    assert second.at - first.at >= 0.9
    assert sent.message_id.startswith("1001:")


async def test_retry_after_beyond_the_bound_is_an_error(
    tg: FakeTelegram, live: TelegramChannel
) -> None:
    tg.fail_next(
        "sendMessage", 429, "Too Many Requests: retry after 600", parameters={"retry_after": 600}
    )
    with pytest.raises(ChannelError, match="rate limited"):
        await live.send(DM_TARGET, "hello")
    assert len(tg.calls_of("sendMessage")) == 1


async def test_unparsable_html_falls_back_to_plain_text(
    tg: FakeTelegram, live: TelegramChannel
) -> None:
    tg.fail_next("sendMessage", 400, "Bad Request: can't parse entities: unexpected end tag")
    await live.send(DM_TARGET, "a **b** & c")
    first, second = tg.calls_of("sendMessage")
    assert first.params["parse_mode"] == "HTML"
    assert "parse_mode" not in second.params
    assert second.params["text"] == "a b & c"


async def test_progress_edits_are_safe_to_repeat(tg: FakeTelegram, live: TelegramChannel) -> None:
    [progress] = await live.send(DM_TARGET, "⏳ deploy: v2")
    await live.edit(progress, "✅ deploy (0.1s)")
    await live.edit(progress, "✅ deploy (0.1s)")  # unchanged: not sent again
    edits = tg.calls_of("editMessageText")
    assert [e.params["text"] for e in edits] == ["✅ deploy (0.1s)"]
    # Telegram's "message is not modified" counts as success.
    tg.fail_next("editMessageText", 400, "Bad Request: message is not modified")
    await live.edit(progress, "✅ deploy (0.2s)")
    assert len(tg.calls_of("editMessageText")) == 2


async def test_other_edit_failures_are_errors(tg: FakeTelegram, live: TelegramChannel) -> None:
    tg.fail_next("editMessageText", 400, "Bad Request: message to edit not found")
    with pytest.raises(ChannelError, match="not found"):
        await live.edit(SentMessage(target=DM_TARGET, message_id="1001:4"), "x")


async def test_typing_goes_to_the_topic(tg: FakeTelegram, live: TelegramChannel) -> None:
    await live.typing(TOPIC_TARGET)
    [action] = await tg.wait_for("sendChatAction")
    assert action.params == {"chat_id": CHAT, "action": "typing", "message_thread_id": 12}


@pytest.mark.parametrize(("asked", "sent"), [("✅", "👍"), ("❌", "👎"), ("🔥", "🔥")])
async def test_reactions_use_telegram_emoji(
    tg: FakeTelegram, live: TelegramChannel, asked: str, sent: str
) -> None:
    await live.react(TOPIC_TARGET, f"{CHAT}:41", asked)
    [call] = tg.calls_of("setMessageReaction")
    assert call.params["message_id"] == 41
    assert call.params["reaction"] == [{"type": "emoji", "emoji": sent}]


async def test_refused_reaction_is_not_an_error(tg: FakeTelegram, live: TelegramChannel) -> None:
    tg.fail_next("setMessageReaction", 400, "Bad Request: REACTION_INVALID")
    await live.react(DM_TARGET, "1001:3", "🦜")
    assert len(tg.calls_of("setMessageReaction")) == 1


async def test_card_is_posted_then_shows_the_outcome(
    tg: FakeTelegram, live: TelegramChannel
) -> None:
    sent = await live.cards.post_approval_card(TOPIC_TARGET, CARD)
    [post] = tg.calls_of("sendMessage")
    assert post.params["text"].startswith("<b>🔐 Approval needed: shell</b>")
    assert "rm -rf build &lt;tmp&gt;" in post.params["text"]
    assert post.params["message_thread_id"] == 12
    decide, reply = post.params["reply_markup"]["inline_keyboard"]
    assert [b["callback_data"] for b in decide] == ["ap:Zx_9-q:a", "ap:Zx_9-q:d", "ap:Zx_9-q:w"]
    assert reply == [{"text": "✏️ Reply instead", "callback_data": "ap:Zx_9-q:r"}]

    decided = dataclasses.replace(CARD, state=CardState.APPROVED, decided_by="Boss")
    await live.cards.update_approval_card(sent, decided)
    [edit] = tg.calls_of("editMessageText")
    assert edit.params["message_id"] == int(sent.message_id.split(":")[1])
    assert edit.params["text"].startswith("<b>✅ Approved: shell</b>")
    assert "By: Boss" in edit.params["text"]
    assert "reply_markup" not in edit.params


async def test_long_approval_ids_still_fit_callback_data(
    tg: FakeTelegram, live: TelegramChannel
) -> None:
    long_id = "approval:" + "x" * 80
    card = ApprovalCard(approval_id=long_id, tool="t", lines=(), reason="r", requested_by="A")
    await live.cards.post_approval_card(DM_TARGET, card)
    [post] = tg.calls_of("sendMessage")
    rows = post.params["reply_markup"]["inline_keyboard"]
    datas = [b["callback_data"] for row in rows for b in row]
    assert len(datas) == 4
    assert all(len(d.encode()) <= 64 for d in datas)
