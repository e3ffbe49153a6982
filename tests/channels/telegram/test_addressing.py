"""Entities are read as Telegram counts them, and one whose bounds split a character is no
crash: python-telegram-bot's own ``parse_entity`` decodes strictly and raised
``UnicodeDecodeError`` out of the adapter for such a payload."""

from __future__ import annotations

from typing import Any

import pytest
from telegram import Message

from bot.envelope import Capabilities, ChannelRef
from channels.telegram.addressing import BotIdentity, mentions_bot
from channels.telegram.commands import typed_command
from channels.telegram.normalise import normalise_message

ME = BotIdentity(id=7000001, username="hatchbot")
GROUP = {"id": -1001, "type": "supergroup", "title": "team"}
PERSON = {"id": 2002, "is_bot": False, "first_name": "Ann"}


def _message(text: str, *entities: dict[str, Any], caption: bool = False) -> Message:
    payload: dict[str, Any] = {"message_id": 5, "date": 0, "chat": GROUP, "from": PERSON}
    payload["caption" if caption else "text"] = text
    payload["caption_entities" if caption else "entities"] = list(entities)
    message = Message.de_json(payload, None)
    assert message is not None
    return message


def _entity(kind: str, offset: int, length: int) -> dict[str, Any]:
    return {"type": kind, "offset": offset, "length": length}


@pytest.mark.parametrize("caption", [False, True])
def test_a_mention_after_astral_characters_is_found(caption: bool) -> None:
    # "𐀀" is two UTF-16 code units: the mention starts at offset 3, not 2
    message = _message("𐀀 @hatchbot hi", _entity("mention", 3, 9), caption=caption)
    assert mentions_bot(message, ME)


@pytest.mark.parametrize("kind", ["mention", "bot_command"])
def test_an_entity_ending_inside_a_surrogate_pair_is_no_crash(kind: str) -> None:
    message = _message("𐀀", _entity(kind, 0, 1))
    assert not mentions_bot(message, ME)
    assert typed_command(message, ME) is None
    ref = ChannelRef(kind="telegram", alias="main")
    envelope = normalise_message(message, ref=ref, me=ME, capabilities=Capabilities())
    assert envelope is not None and not envelope.addressed_to_bot


def test_a_command_after_its_surrogate_pair_reads_whole() -> None:
    message = _message("/new@hatchbot 𐀀", _entity("bot_command", 0, 13))
    command = typed_command(message, ME)
    assert command is not None and command.text == "/new 𐀀" and command.for_us
