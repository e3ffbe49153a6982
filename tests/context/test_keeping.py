"""Which messages group context keeps: only unaddressed messages of a group conversation the
alias reads, where it keeps context, never another bot's (while ignored), never a DM, a
scheduled run or a message that would be a turn anyway (``require_mention`` off)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from bot.channel_config import ChannelCommon
from bot.context.keeping import GroupContextKeeper, kept_text
from bot.envelope import Attachment, ChannelRef, DeliveryTarget, IngressEnvelope, Sender

REF = ChannelRef(kind="slack", alias="main")
ROOM = "C1"


def envelope(**changes: Any) -> IngressEnvelope:
    base = IngressEnvelope(
        channel=REF,
        message_id="C1:1.0",
        conversation_id=ROOM,
        sender=Sender(id="U1", display_name="Ann"),
        text="the release is blocked",
        reply_target=DeliveryTarget(channel=REF, conversation_id=ROOM),
        is_group=True,
    )
    return replace(base, **changes)


def channel(**keys: Any) -> ChannelCommon:
    return ChannelCommon.model_validate({"context": {"group_messages": 10}, **keys})


@pytest.mark.parametrize(
    ("message", "keys", "kept"),
    [
        ({}, {}, True),
        ({"addressed_to_bot": True}, {}, False),  # a turn, not context
        ({"is_direct": True, "is_group": False}, {}, False),
        ({"background": True}, {}, False),
        ({"sender": Sender(id="B1", is_bot=True)}, {}, False),
        ({"sender": Sender(id="B1", is_bot=True)}, {"ignore_other_bots": False}, True),
        ({}, {"context": {"group_messages": 0}}, False),  # off, the default
        ({}, {"context": {"group_messages": 10, "off_in": [ROOM]}}, False),
        ({}, {"require_mention": False}, False),  # every message is a turn there
        ({}, {"group_policy": "disabled"}, False),
        ({}, {"group_policy": "allowlist", "allowed_conversations": ["C2"]}, False),
        ({}, {"group_policy": "allowlist", "allowed_conversations": [ROOM]}, True),
        ({"text": "  "}, {}, False),
        ({"text": "", "attachments": (Attachment(kind="image", name="a.png"),)}, {}, True),
    ],
)
def test_what_is_kept(message: dict[str, Any], keys: dict[str, Any], kept: bool) -> None:
    keeper = GroupContextKeeper(store=None)  # type: ignore[arg-type]  # keeps() reads nothing
    assert keeper.keeps(envelope(**message), channel(**keys)) is kept


def test_files_are_named_never_kept() -> None:
    shared = envelope(text="look", attachments=(Attachment(kind="file", name="plan.pdf"),))
    assert kept_text(shared) == "look [file: plan.pdf]"


def test_the_default_keeps_nothing() -> None:
    assert ChannelCommon().context.group_messages == 0
    assert ChannelCommon().context.thread_messages == 0
