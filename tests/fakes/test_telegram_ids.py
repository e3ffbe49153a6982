"""The fake Telegram allocates message ids and answers edits as the Bot API does, so a
delivery probe that would be wrong on Telegram is wrong against the fake too."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.telegram_rules import (
    CANT_BE_EDITED,
    NO_TEXT_TO_EDIT,
    NOT_MODIFIED,
    TO_EDIT_NOT_FOUND,
)
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.fakes.test_telegram_limits import JSON, TOKEN, call

ANN, BOB = 1001, 1002
BASIC_GROUP = -4012345
SUPERGROUP, OTHER_SUPERGROUP = -1001234567890, -1009876543210


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(TOKEN) as fake:
        yield fake


async def send(tg: FakeTelegram, chat: int, text: str, **extra: object) -> int:
    status, body = await call(tg, "sendMessage", {"chat_id": chat, "text": text, **extra})
    assert status == 200, body
    return int(body["result"]["message_id"])


async def edit(tg: FakeTelegram, chat: int, message_id: int, text: str, **extra: object) -> JSON:
    _, body = await call(
        tg, "editMessageText", {"chat_id": chat, "message_id": message_id, "text": text, **extra}
    )
    return body


async def test_private_chats_and_basic_groups_share_one_counter(tg: FakeTelegram) -> None:
    first = await send(tg, ANN, "to ann")
    incoming = tg.next_message_id(BOB)
    await tg.push({"message": message(private_chat(BOB), user(BOB), "hi", message_id=incoming)})
    to_group = await send(tg, BASIC_GROUP, "to the group")
    second = await send(tg, ANN, "to ann again")

    assert [first, incoming, to_group, second] == [first, first + 1, first + 2, first + 3]


async def test_each_supergroup_counts_its_own_messages(tg: FakeTelegram) -> None:
    private = await send(tg, ANN, "to ann")
    a1 = await send(tg, SUPERGROUP, "one")
    b1 = await send(tg, OTHER_SUPERGROUP, "one")
    a2 = await send(tg, SUPERGROUP, "two")

    assert (a1, b1, a2) == (a1, a1, a1 + 1)
    assert await send(tg, ANN, "again") == private + 1


async def test_a_pushed_id_moves_its_counter_past_it(tg: FakeTelegram) -> None:
    await tg.push({"message": message(private_chat(ANN), user(ANN), "hi", message_id=900)})

    assert await send(tg, BOB, "after") == 901


async def test_edits_answer_as_the_bot_api_does(tg: FakeTelegram) -> None:
    mine = await send(tg, ANN, "<b>mine</b>", parse_mode="HTML")
    other = await send(tg, ANN, "another")
    theirs = tg.next_message_id(ANN)
    await tg.push({"message": message(private_chat(ANN), user(ANN), "hi", message_id=theirs)})
    elsewhere = await send(tg, BOB, "bob's")

    same = await edit(tg, ANN, mine, "<b>mine</b>", parse_mode="HTML")
    assert same["description"] == NOT_MODIFIED
    assert (await edit(tg, ANN, theirs, "x"))["description"] == CANT_BE_EDITED
    assert (await edit(tg, ANN, elsewhere, "x"))["description"] == TO_EDIT_NOT_FOUND
    assert (await edit(tg, ANN, elsewhere + 50, "x"))["description"] == TO_EDIT_NOT_FOUND
    assert tg.changed_by_edit == []

    # the trap: another of the bot's messages with other text is overwritten
    assert (await edit(tg, ANN, other, "<b>mine</b>", parse_mode="HTML"))["ok"] is True
    assert [(c.message_id, c.before) for c in tg.changed_by_edit] == [(other, "another")]


async def test_an_edit_without_the_keyboard_strips_it(tg: FakeTelegram) -> None:
    keyboard = {"inline_keyboard": [[{"text": "Approve", "callback_data": "a"}]]}
    card = await send(tg, ANN, "card", reply_markup=keyboard)

    same = await edit(tg, ANN, card, "card", reply_markup=keyboard)
    assert same["description"] == NOT_MODIFIED
    assert (await edit(tg, ANN, card, "card"))["ok"] is True
    assert "reply_markup" not in tg.bot_message_now(ANN, card)
    assert len(tg.changed_by_edit) == 1


async def test_a_files_message_has_no_text_to_edit(tg: FakeTelegram) -> None:
    _, body = await call(tg, "sendDocument", {"chat_id": ANN}, document=b"bytes")
    document = int(body["result"]["message_id"])

    assert (await edit(tg, ANN, document, "x"))["description"] == NO_TEXT_TO_EDIT


async def test_an_edit_by_a_process_never_told_the_id_is_blind(tg: FakeTelegram) -> None:
    await call(tg, "getMe", {})
    first = await send(tg, ANN, "one")
    assert (await edit(tg, ANN, first, "one, edited"))["ok"] is True
    await call(tg, "getMe", {})  # a new process: it was told no id yet
    second = await send(tg, ANN, "two")
    assert (await edit(tg, ANN, second, "two, edited"))["ok"] is True
    assert (await edit(tg, ANN, first, "one, blindly"))["ok"] is True

    assert [(c.message_id, c.blind) for c in tg.changed_by_edit] == [
        (first, False),
        (second, False),
        (first, True),
    ]
