"""What the Bot API refuses in a request, for the fake Telegram to refuse it the same way.

:func:`refusal` returns Telegram's answer to a request it refuses (``400`` and the exact
``description``: ``Bad Request: …``), or None; the server answers it as
``{"ok": false, "error_code": 400, "description": …}``. The limits are
:mod:`tests.fakes.limits`'s: a missing ``chat_id``, text or message id; text of 1 to 4,096
UTF-16 code units after entity parsing and captions of at most 1,024; HTML the parse mode
refuses (:mod:`tests.fakes.telegram_html`); callback data of 1 to 64 bytes; callback answers of
at most 200 characters; one reaction, from the allowed emoji; the command menu's rules.

:func:`chat_of` is the chat Telegram shows for an id it has not been told about, and
:func:`chat_problem` says what is wrong with a chat object Telegram would never send (its
type inconsistent with its id).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tests.fakes.limits import (
    TELEGRAM_BOT_REACTIONS,
    TELEGRAM_CALLBACK_ANSWER,
    TELEGRAM_CALLBACK_DATA,
    TELEGRAM_CAPTION,
    TELEGRAM_COMMAND_DESCRIPTION,
    TELEGRAM_COMMAND_NAME,
    TELEGRAM_COMMANDS,
    TELEGRAM_REACTION_EMOJI,
    TELEGRAM_TEXT,
)
from tests.fakes.telegram_html import HtmlRefused, parse_html, utf16_len

JSON = dict[str, Any]
Refusal = tuple[int, str]

NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup "
    "are exactly the same as a current content and reply markup of the message"
)
TO_EDIT_NOT_FOUND = "Bad Request: message to edit not found"
CANT_BE_EDITED = "Bad Request: message can't be edited"
NO_TEXT_TO_EDIT = "Bad Request: there is no text in the message to edit"
#: Methods that name a chat with ``chat_id``.
_CHAT_METHODS = frozenset(
    {
        "sendMessage",
        "sendPhoto",
        "sendDocument",
        "sendChatAction",
        "editMessageText",
        "editMessageReplyMarkup",
        "deleteMessage",
        "setMessageReaction",
        "getChatMember",
        "getChat",
    }
)
_MESSAGE_METHODS = frozenset(
    {"editMessageText", "editMessageReplyMarkup", "deleteMessage", "setMessageReaction"}
)
_COMMAND_NAME = re.compile(r"[a-z0-9_]+")
#: Supergroups and channels have ids of the form -100…; other negative ids are groups.
_SUPERGROUP_PREFIX = "-100"


def is_supergroup(chat_id: int) -> bool:
    """Whether ``chat_id`` is a supergroup's or a channel's (their ids are -100…)."""
    return str(chat_id).startswith(_SUPERGROUP_PREFIX)


def _bad(description: str) -> Refusal:
    return 400, f"Bad Request: {description}"


def formatted(value: object, parse_mode: object) -> tuple[str, list[JSON]]:
    """The text and entities Telegram makes of ``value`` under ``parse_mode`` (raises
    :class:`HtmlRefused` for markup it refuses)."""
    text = "" if value is None else str(value)
    return parse_html(text) if parse_mode == "HTML" else (text, [])


def refusal(method: str, params: Mapping[str, Any]) -> Refusal | None:
    """Telegram's refusal of this call, or None when Telegram would carry it out."""
    if method in _CHAT_METHODS and "inline_message_id" not in params:
        chat_id = params.get("chat_id")
        if chat_id is None or chat_id == "":
            return _bad("chat_id is empty")
        if not isinstance(chat_id, int) and not str(chat_id).startswith("@"):
            return _bad("chat not found")
    targeted = method in _MESSAGE_METHODS and "inline_message_id" not in params
    if targeted and not isinstance(params.get("message_id"), int):
        return _bad("message identifier is not specified")
    parse_mode = params.get("parse_mode")
    if parse_mode not in (None, "", "HTML", "MarkdownV2", "Markdown"):
        return _bad(f"unsupported parse_mode {parse_mode}")
    if method in ("sendMessage", "editMessageText"):
        problem = _text_problem(params.get("text"), parse_mode)
    elif method in ("sendPhoto", "sendDocument"):
        field = "photo" if method == "sendPhoto" else "document"
        if params.get(field) in (None, ""):
            return _bad(f"there is no {field} in the request")
        problem = _caption_problem(params.get("caption"), parse_mode)
    elif method == "answerCallbackQuery":
        problem = _callback_answer_problem(params)
    elif method == "setMessageReaction":
        problem = _reaction_problem(params.get("reaction"))
    elif method == "setMyCommands":
        problem = commands_problem(params.get("commands"))
    else:
        problem = None
    return problem or _markup_problem(params.get("reply_markup"))


def _text_problem(value: object, parse_mode: object) -> Refusal | None:
    try:
        text, _ = formatted(value, parse_mode)
    except HtmlRefused as refused:
        return _bad(f"can't parse entities: {refused}")
    if not text.strip():
        return _bad("message text is empty")
    if utf16_len(text) > TELEGRAM_TEXT.most:
        return _bad("message is too long")
    return None


def _caption_problem(value: object, parse_mode: object) -> Refusal | None:
    try:
        caption, _ = formatted(value, parse_mode)
    except HtmlRefused as refused:
        return _bad(f"can't parse entities: {refused}")
    if utf16_len(caption) > TELEGRAM_CAPTION.most:
        return _bad("message caption is too long")
    return None


def _callback_answer_problem(params: Mapping[str, Any]) -> Refusal | None:
    if not params.get("callback_query_id"):
        return _bad("QUERY_ID_INVALID")
    if len(str(params.get("text") or "")) > TELEGRAM_CALLBACK_ANSWER.most:
        return _bad("MESSAGE_TOO_LONG")
    return None


def _reaction_problem(reaction: object) -> Refusal | None:
    if reaction is None:
        return None  # no reaction: the bot's reaction is removed
    if not isinstance(reaction, list):
        return _bad("can't parse reaction types JSON object")
    if len(reaction) > TELEGRAM_BOT_REACTIONS.most:
        return _bad("REACTIONS_TOO_MANY")
    for item in reaction:
        if not isinstance(item, dict) or item.get("type") != "emoji":
            return _bad("REACTION_INVALID")
        if str(item.get("emoji", "")).replace("\ufe0f", "") not in TELEGRAM_REACTION_EMOJI:
            return _bad("REACTION_INVALID")
    return None


def _markup_problem(markup: object) -> Refusal | None:
    if markup is None or markup == "":
        return None
    if not isinstance(markup, dict):
        return _bad("can't parse reply keyboard markup JSON object")
    rows = markup.get("inline_keyboard")
    if rows is None:
        return None
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        return _bad('field "inline_keyboard" of the InlineKeyboardMarkup must be an Array')
    for row in rows:
        for button in row:
            if not isinstance(button, dict) or not isinstance(button.get("text"), str):
                return _bad(
                    'can\'t parse inline keyboard button: Field "text" must be of type String'
                )
            data = button.get("callback_data")
            if data is not None:
                size = len(str(data).encode())
                if not TELEGRAM_CALLBACK_DATA.holds(size):
                    return _bad("BUTTON_DATA_INVALID")
    return None


def commands_problem(commands: object) -> Refusal | None:
    """Telegram's refusal of a ``setMyCommands`` list, or None when it is valid."""
    if not isinstance(commands, list):
        return _bad("can't parse BotCommand array JSON object")
    if len(commands) > TELEGRAM_COMMANDS.most:
        return _bad("BOT_COMMANDS_TOO_MUCH")
    for command in commands:
        if not isinstance(command, dict):
            return _bad("BOT_COMMAND_INVALID")
        name = str(command.get("command", ""))
        if not TELEGRAM_COMMAND_NAME.holds(len(name)) or not _COMMAND_NAME.fullmatch(name):
            return _bad("BOT_COMMAND_INVALID")
        description = str(command.get("description", "")).strip()
        if not TELEGRAM_COMMAND_DESCRIPTION.holds(len(description)):
            return _bad("BOT_COMMAND_DESCRIPTION_INVALID")
    return None


def chat_of(chat_id: int) -> JSON:
    """The chat Telegram shows for ``chat_id`` when nothing else is known of it: a private
    chat for a positive id, a supergroup for ``-100…``, a group for another negative id."""
    if chat_id > 0:
        return {"id": chat_id, "type": "private", "first_name": "Ann"}
    kind = "supergroup" if str(chat_id).startswith(_SUPERGROUP_PREFIX) else "group"
    return {"id": chat_id, "type": kind, "title": "team"}


def chat_problem(chat: Mapping[str, Any]) -> str | None:
    """What makes ``chat`` a chat Telegram never sends, or None."""
    chat_id, kind = chat.get("id"), chat.get("type")
    if not isinstance(chat_id, int) or isinstance(chat_id, bool):
        return f"a chat id is an integer, not {chat_id!r}"
    if (kind == "private") != (chat_id > 0):
        return f"chat {chat_id} cannot be of type {kind!r}: only private chats have positive ids"
    if kind in ("supergroup", "channel") and not str(chat_id).startswith(_SUPERGROUP_PREFIX):
        return f"a {kind}'s id starts with {_SUPERGROUP_PREFIX}, not {chat_id}"
    if kind not in ("private", "group", "supergroup", "channel"):
        return f"no chat type {kind!r}"
    return None
