"""The Telegram check of a send cut off by a crash (:mod:`channels.telegram.delivery_check`):
through the real python-telegram-bot against the fake, which allocates ids as Telegram does
(one counter for every private chat and basic group, one per supergroup) and answers edits
as Telegram does, overwrites included.

Each case plays the dead process by hand: its rows in the store (``tg-last``, the
``tg-sending`` claim, with another owner) and its requests straight to the fake; then a
fresh adapter is asked, as recovery asks it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.envelope import DeliveryTarget
from bot.store import Store
from channels.telegram.adapter import TelegramChannel
from channels.telegram.send_record import FENCE, LAST, SENDING, Pending
from tests.fakes.channel_health import serving
from tests.fakes.recording_host import RecordingHost
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.fakes.telegram_setup import REF, TOKEN, channel_for

ANN, BOB, CARL = 1001, 1002, 1003
GROUP, OTHER_GROUP = -1005550001, -1006660001  # supergroups: ids of their own
KEYBOARD = {"inline_keyboard": [[{"text": "✅ Approve", "callback_data": "a:1"}]]}


async def raw(tg: FakeTelegram, method: str, **params: Any) -> Any:
    """A call as the process that died made it (straight to the fake)."""
    form = aiohttp.FormData()
    for key, value in params.items():
        form.add_field(key, value if isinstance(value, str) else json.dumps(value))
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{tg.base_url}{TOKEN}/{method}", data=form) as response,
    ):
        body = await response.json()
    assert body["ok"], body
    return body["result"]


async def sent_by_the_dead(tg: FakeTelegram, chat: int, text: str, **extra: Any) -> int:
    result = await raw(tg, "sendMessage", chat_id=chat, text=text, parse_mode="HTML", **extra)
    return int(result["message_id"])


async def someone_writes(tg: FakeTelegram, chat: int, text: str = "hi") -> int:
    number = tg.next_message_id(chat)
    chat_object = (
        private_chat(chat) if chat > 0 else {"id": chat, "type": "supergroup", "title": "team"}
    )
    await tg.push({"message": message(chat_object, user(CARL), text, message_id=number)})
    return number


async def left_by_the_dead(
    store: Store,
    chat: int,
    *,
    last: int | str,
    floor: int,
    text: str | None,
    key: str = "k1",
    markup: dict[str, Any] | None = None,
) -> None:
    """The rows a process killed in ``chat``'s send left: the chat's last known id, and the
    claim of the message whose request it had made (or not)."""
    state = store.channel_state
    await state.set(str(REF), f"{LAST}{chat}", str(last))
    pending = Pending(
        chat=chat,
        key=key,
        part=1,
        text=text,
        parse_mode="HTML",
        markup=None if markup is None else json.dumps(markup),
        floor=floor,
        owner="the-dead-process",
        at=0.0,
    )
    assert await state.claim(str(REF), f"{SENDING}{chat}", pending.to_json())


def target(chat: int) -> DeliveryTarget:
    return DeliveryTarget(channel=REF, conversation_id=str(chat))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "state.db") as opened:
        yield opened


async def ask(channel: TelegramChannel, chat: int, key: str = "k1") -> list[str] | None:
    found = await channel.delivery.find_delivered(
        target(chat), key=key, text="", after_message_id=None
    )
    return None if found is None else [m.message_id for m in found]


async def test_a_dm_send_is_found_among_other_chats_ids(tg: FakeTelegram, store: Store) -> None:
    """Private chats share one counter: the message is not at the chat's last id plus one
    (other DMs took ids between), and the bot's older message in the chat, with other
    text, is below ``tg-last`` and never edited."""
    older = await sent_by_the_dead(tg, ANN, "an older answer")
    await sent_by_the_dead(tg, BOB, "to bob")
    await someone_writes(tg, CARL)
    # the dead process had seen nothing past its start: only tg-last keeps "older" out
    await left_by_the_dead(store, ANN, last=older, floor=0, text="<b>the answer</b>")
    await sent_by_the_dead(tg, BOB, "to bob, again")
    answer = await sent_by_the_dead(tg, ANN, "<b>the answer</b>")
    await someone_writes(tg, BOB)  # the new process sees an id past the answer's
    assert answer > older + 1

    channel = channel_for(tg, store)
    async with serving(channel, RecordingHost()):
        assert await ask(channel, ANN) == [f"{ANN}:{answer}"]

    assert tg.changed_by_edit == []
    assert tg.bot_message_now(ANN, older)["text"] == "an older answer"
    assert await store.channel_state.get(str(REF), f"{SENDING}{ANN}") is None
    assert await store.channel_state.get(str(REF), f"{LAST}{ANN}") == str(answer)
    probed = [int(c.params["message_id"]) for c in tg.calls_of("editMessageText")]
    assert min(probed) > older and max(probed) == answer


async def test_a_supergroup_counts_its_own_ids(tg: FakeTelegram, store: Store) -> None:
    older = await sent_by_the_dead(tg, GROUP, "an older answer")
    for _ in range(3):  # the other group's ids are the same numbers: not this chat's
        await sent_by_the_dead(tg, OTHER_GROUP, "<b>the answer</b>")
    await left_by_the_dead(
        store, GROUP, last=older, floor=older, text="<b>the answer</b>", markup=KEYBOARD
    )
    answer = await sent_by_the_dead(tg, GROUP, "<b>the answer</b>", reply_markup=KEYBOARD)
    await someone_writes(tg, GROUP)

    channel = channel_for(tg, store)
    async with serving(channel, RecordingHost()):
        assert await ask(channel, GROUP) == [f"{GROUP}:{answer}"]

    assert tg.changed_by_edit == []  # the keyboard was sent with each probe: not stripped
    assert tg.bot_message_now(GROUP, answer)["reply_markup"] == KEYBOARD
    assert all(int(c.params["chat_id"]) == GROUP for c in tg.calls_of("editMessageText"))


async def test_a_send_that_never_left_is_absent_below_an_own_send(
    tg: FakeTelegram, store: Store
) -> None:
    older = await sent_by_the_dead(tg, ANN, "an older answer")
    await left_by_the_dead(store, ANN, last=older, floor=older, text="the lost answer")
    await someone_writes(tg, BOB)

    channel = channel_for(tg, store, delivery_check_margin_s=0)
    async with serving(channel, RecordingHost()):
        await channel.send(target(CARL), "an answer to carl, after the restart")
        assert await ask(channel, ANN) == []

    assert tg.changed_by_edit == []
    assert await store.channel_state.get(str(REF), f"{SENDING}{ANN}") is None
    assert await store.channel_state.get(str(REF), f"{LAST}{ANN}") == str(older)


async def test_with_nothing_to_bound_it_the_check_is_undecided_and_fences_the_chat(
    tg: FakeTelegram, store: Store
) -> None:
    older = await sent_by_the_dead(tg, GROUP, "an older answer")
    await left_by_the_dead(store, GROUP, last=older, floor=older, text="the lost answer")
    await someone_writes(tg, GROUP)

    channel = channel_for(tg, store, delivery_check_wait_s=0.2)
    async with serving(channel, RecordingHost()):
        assert await ask(channel, GROUP) is None
        assert await store.channel_state.get(str(REF), f"{LAST}{GROUP}") == FENCE
        [next_one] = await channel.send(target(GROUP), "the next answer")

    assert (
        await store.channel_state.get(str(REF), f"{LAST}{GROUP}")
        == next_one.message_id.split(":")[1]
    )
    assert tg.changed_by_edit == []


async def test_a_send_to_a_chat_settles_the_row_left_there_first(
    tg: FakeTelegram, store: Store
) -> None:
    older = await sent_by_the_dead(tg, ANN, "an older answer")
    await left_by_the_dead(store, ANN, last=older, floor=older, text="the cut-off answer")
    answer = await sent_by_the_dead(tg, ANN, "the cut-off answer")
    await someone_writes(tg, BOB)

    channel = channel_for(tg, store)
    async with serving(channel, RecordingHost()):
        await channel.send(target(ANN), "the next answer")
        assert await ask(channel, ANN) == [f"{ANN}:{answer}"]

    edits = tg.calls_of("editMessageText")
    sends = [c for c in tg.calls_of("sendMessage") if c.params.get("text") == "the next answer"]
    assert edits and sends and max(e.at for e in edits) <= sends[0].at
    assert tg.changed_by_edit == []


async def test_a_file_cut_off_is_undecided(tg: FakeTelegram, store: Store) -> None:
    older = await sent_by_the_dead(tg, ANN, "an older answer")
    await left_by_the_dead(store, ANN, last=older, floor=older, text=None)

    channel = channel_for(tg, store)
    async with serving(channel, RecordingHost()):
        assert await ask(channel, ANN) is None
    assert tg.calls_of("editMessageText") == []
