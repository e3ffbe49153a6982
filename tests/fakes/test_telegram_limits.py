"""The fake Telegram refuses what the Bot API refuses, with Telegram's own answer: one request
over each documented limit (:mod:`tests.fakes.limits`) and one within it, over HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.fakes.limits import (
    TELEGRAM_CALLBACK_ANSWER,
    TELEGRAM_CALLBACK_DATA,
    TELEGRAM_CAPTION,
    TELEGRAM_COMMANDS,
    TELEGRAM_TEXT,
)
from tests.fakes.telegram_rules import NOT_MODIFIED
from tests.fakes.telegram_server import FakeTelegram, callback, message, user

TOKEN = "123:fake-limits"
CHAT = 1001
JSON = dict[str, Any]


#: The id the fake gives the first message of a chat.
FIRST_ID = 500


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(TOKEN) as fake:
        yield fake


async def call(tg: FakeTelegram, method: str, params: JSON, **files: bytes) -> tuple[int, JSON]:
    """``method`` called as python-telegram-bot calls it: form fields, objects as JSON."""
    form = aiohttp.FormData()
    for key, value in params.items():
        form.add_field(key, value if isinstance(value, str) else json.dumps(value))
    for key, data in files.items():
        form.add_field(key, data, filename=f"{key}.txt")
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{tg.base_url}{TOKEN}/{method}", data=form) as response,
    ):
        return response.status, await response.json()


def keyboard(data: str) -> JSON:
    return {"inline_keyboard": [[{"text": "Approve", "callback_data": data}]]}


def commands(count: int) -> list[JSON]:
    return [{"command": f"c{n}", "description": "a command"} for n in range(count)]


HTML = {"parse_mode": "HTML"}
SMILES = "😀" * (TELEGRAM_TEXT.most // 2)  # 2,048 characters, 4,096 UTF-16 code units
#: (method, refused params, Telegram's description, the same call within the limit)
CASES: list[tuple[str, JSON, str, JSON]] = [
    ("sendMessage", {"text": "hi"}, "chat_id is empty", {"chat_id": CHAT, "text": "hi"}),
    ("sendMessage", {"chat_id": CHAT}, "message text is empty", {"chat_id": CHAT, "text": "x"}),
    (
        "sendMessage",
        {"chat_id": CHAT, "text": "x" * (TELEGRAM_TEXT.most + 1)},
        "message is too long",
        {"chat_id": CHAT, "text": "x" * TELEGRAM_TEXT.most},
    ),
    (
        "sendMessage",
        {"chat_id": CHAT, "text": SMILES + "x"},
        "message is too long",
        {"chat_id": CHAT, "text": SMILES},
    ),
    (
        "sendMessage",
        {"chat_id": CHAT, "text": "<b>" + "x" * (TELEGRAM_TEXT.most + 1) + "</b>", **HTML},
        "message is too long",
        {"chat_id": CHAT, "text": "<b>" + "x" * TELEGRAM_TEXT.most + "</b>", **HTML},
    ),
    (
        "sendMessage",
        {"chat_id": CHAT, "text": "<b>bold", **HTML},
        "can't parse entities: Can't find end tag corresponding to start tag \"b\"",
        {"chat_id": CHAT, "text": "<b>bold</b>", **HTML},
    ),
    (
        "sendMessage",
        {"chat_id": CHAT, "text": "é <blink>x</blink>", **HTML},
        'can\'t parse entities: Unsupported start tag "blink" at byte offset 3',
        {"chat_id": CHAT, "text": "é <u>x</u>", **HTML},
    ),
    (
        "sendMessage",
        {"chat_id": CHAT, "text": "<b><i>x</b></i>", **HTML},
        'can\'t parse entities: Unmatched end tag at byte offset 7, expected "</i>", found "</b>"',
        {"chat_id": CHAT, "text": "<b><i>x</i></b>", **HTML},
    ),
    (
        "sendMessage",
        {"chat_id": CHAT, "text": "1 < 2", **HTML},
        'can\'t parse entities: Unsupported start tag "" at byte offset 2',
        {"chat_id": CHAT, "text": "1 &lt; 2 & 3", **HTML},
    ),
    (
        "sendMessage",
        {"chat_id": CHAT, "text": "x", "reply_markup": keyboard("y" * 65)},
        "BUTTON_DATA_INVALID",
        {"chat_id": CHAT, "text": "x", "reply_markup": keyboard("é" * 32)},
    ),
    (
        "sendMessage",
        {"chat_id": CHAT, "text": "x", "reply_markup": keyboard("")},
        "BUTTON_DATA_INVALID",
        {"chat_id": CHAT, "text": "x", "reply_markup": keyboard("y")},
    ),
    (
        "editMessageText",
        {"chat_id": CHAT, "text": "x"},
        "message identifier is not specified",
        {"chat_id": CHAT, "message_id": FIRST_ID, "text": "x"},
    ),
    (
        "answerCallbackQuery",
        {"callback_query_id": "q1", "text": "x" * (TELEGRAM_CALLBACK_ANSWER.most + 1)},
        "MESSAGE_TOO_LONG",
        {"callback_query_id": "q1", "text": "x" * TELEGRAM_CALLBACK_ANSWER.most},
    ),
    (
        "setMessageReaction",
        {"chat_id": CHAT, "message_id": 9, "reaction": [{"type": "emoji", "emoji": "🦆"}]},
        "REACTION_INVALID",
        {"chat_id": CHAT, "message_id": 9, "reaction": [{"type": "emoji", "emoji": "👀"}]},
    ),
    (
        "setMessageReaction",
        {
            "chat_id": CHAT,
            "message_id": 9,
            "reaction": [{"type": "emoji", "emoji": e} for e in ("👀", "👍")],
        },
        "REACTIONS_TOO_MANY",
        {"chat_id": CHAT, "message_id": 9, "reaction": [{"type": "emoji", "emoji": "❤️"}]},
    ),
    (
        "setMyCommands",
        {"commands": commands(TELEGRAM_COMMANDS.most + 1)},
        "BOT_COMMANDS_TOO_MUCH",
        {"commands": commands(TELEGRAM_COMMANDS.most)},
    ),
    (
        "setMyCommands",
        {"commands": [{"command": "Stop", "description": "x"}]},
        "BOT_COMMAND_INVALID",
        {"commands": [{"command": "stop", "description": "x"}]},
    ),
    ("sendDocument", {"chat_id": CHAT}, "there is no document in the request", {}),
]


@pytest.mark.parametrize(("method", "refused", "description", "valid"), CASES)
async def test_a_limit_is_refused_with_telegrams_answer(
    tg: FakeTelegram, method: str, refused: JSON, description: str, valid: JSON
) -> None:
    status, body = await call(tg, method, refused)

    assert status == 400
    assert body == {"ok": False, "error_code": 400, "description": f"Bad Request: {description}"}
    if valid:
        if method.startswith("editMessage"):  # an edit needs a message of the bot's to edit
            await call(tg, "sendMessage", {"chat_id": CHAT, "text": "before"})
        status, body = await call(tg, method, valid)
        assert (status, body["ok"]) == (200, True), body


async def test_a_caption_is_counted_after_entity_parsing(tg: FakeTelegram) -> None:
    over = {"chat_id": CHAT, "caption": "<i>" + "x" * (TELEGRAM_CAPTION.most + 1) + "</i>", **HTML}
    within = {**over, "caption": "<i>" + "x" * TELEGRAM_CAPTION.most + "</i>"}

    status, body = await call(tg, "sendDocument", over, document=b"data")
    assert (status, body["description"]) == (400, "Bad Request: message caption is too long")
    status, body = await call(tg, "sendDocument", within, document=b"data")
    assert status == 200 and body["result"]["caption"] == "x" * TELEGRAM_CAPTION.most


async def test_callback_data_is_counted_in_bytes(tg: FakeTelegram) -> None:
    data = "é" * 33  # 33 characters, 66 bytes
    assert len(data.encode()) > TELEGRAM_CALLBACK_DATA.most
    status, body = await call(
        tg, "sendMessage", {"chat_id": CHAT, "text": "x", "reply_markup": keyboard(data)}
    )
    assert (status, body["description"]) == (400, "Bad Request: BUTTON_DATA_INVALID")


async def test_an_unchanged_edit_gets_the_full_not_modified_description(tg: FakeTelegram) -> None:
    _, sent = await call(tg, "sendMessage", {"chat_id": CHAT, "text": "same"})
    edit = {"chat_id": CHAT, "message_id": sent["result"]["message_id"], "text": "same"}

    status, body = await call(tg, "editMessageText", edit)

    assert status == 400
    assert body["description"] == NOT_MODIFIED
    assert body["description"].endswith("as a current content and reply markup of the message")


@pytest.mark.parametrize(
    "method",
    [
        "sendMessage",
        "editMessageText",
        "editMessageReplyMarkup",
        "sendDocument",
        "sendPhoto",
        "setMessageReaction",
        "answerCallbackQuery",
        "getChatMember",
        "setMyCommands",
        "sendChatAction",
        "deleteMessage",
    ],
)
async def test_a_call_without_parameters_is_refused_not_crashed(
    tg: FakeTelegram, method: str
) -> None:
    status, body = await call(tg, method, {})

    assert status == 400
    assert body["ok"] is False and body["description"].startswith("Bad Request: ")


@pytest.mark.parametrize(
    ("chat_id", "kind"),
    [(CHAT, "private"), (-4012345, "group"), (-1001234567890, "supergroup")],
)
async def test_a_chat_never_shown_is_typed_by_its_id(
    tg: FakeTelegram, chat_id: int, kind: str
) -> None:
    _, body = await call(tg, "sendMessage", {"chat_id": chat_id, "text": "hi"})

    assert body["result"]["chat"]["type"] == kind


async def test_a_pushed_chat_keeps_its_type_in_answers(tg: FakeTelegram) -> None:
    group = {"id": -1001234567890, "type": "supergroup", "title": "team", "is_forum": True}
    await tg.push({"message": message(group, user(7), "hi", message_id=1)})

    _, body = await call(tg, "sendMessage", {"chat_id": group["id"], "text": "hello"})

    assert body["result"]["chat"] == group


@pytest.mark.parametrize(
    "chat",
    [
        {"id": -1001234567890, "type": "private"},
        {"id": 5, "type": "group", "title": "x"},
        {"id": -4012345, "type": "supergroup", "title": "x"},
    ],
)
async def test_an_update_telegram_never_sends_is_not_pushed(tg: FakeTelegram, chat: JSON) -> None:
    with pytest.raises(ValueError, match="Telegram never sends"):
        await tg.push({"message": message(chat, user(7), "hi", message_id=1)})


async def test_a_callback_on_a_message_of_an_impossible_chat_is_not_pushed(
    tg: FakeTelegram,
) -> None:
    on = message({"id": -1001234567890, "type": "private"}, user(7), "card", message_id=1)

    with pytest.raises(ValueError, match="Telegram never sends"):
        await tg.push(callback("q1", user(7), "ap:x:a", on))


async def test_a_json_body_is_read_and_a_broken_one_refused(tg: FakeTelegram) -> None:
    url = f"{tg.base_url}{TOKEN}/sendMessage"
    async with aiohttp.ClientSession() as http:
        async with http.post(url, json={"chat_id": CHAT, "text": "<b>hi</b>", **HTML}) as sent:
            assert (sent.status, (await sent.json())["result"]["text"]) == (200, "hi")
        headers = {"Content-Type": "application/json"}
        async with http.post(url, data=b"{not json", headers=headers) as broken:
            status, body = broken.status, await broken.json()

    assert (status, body["ok"]) == (400, False)
    assert body["description"] == "Bad Request: can't parse JSON encoded request"


async def test_a_reply_to_an_unknown_message_is_refused_unless_allowed(tg: FakeTelegram) -> None:
    await tg.push(
        {"message": message({"id": CHAT, "type": "private"}, user(CHAT), "hi", message_id=5)}
    )
    reply = {"chat_id": CHAT, "text": "x", "reply_parameters": {"message_id": 6}}

    status, body = await call(tg, "sendMessage", reply)
    assert (status, body["description"]) == (400, "Bad Request: message to be replied not found")

    for allowed in (
        {**reply, "reply_parameters": {"message_id": 5}},
        {**reply, "reply_parameters": {"message_id": 6, "allow_sending_without_reply": True}},
    ):
        status, _ = await call(tg, "sendMessage", allowed)
        assert status == 200
