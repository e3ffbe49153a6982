"""What one Slack ``message`` / ``app_mention`` event is to the host: a new message, an edit,
a deletion, or nothing.

Slack reports an edit as a ``message`` event of subtype ``message_changed``: the message as it
reads now in ``message`` (with the original's ``ts``), the one before in ``previous_message``;
the conversation (``channel``, ``channel_type``) is on the outer event only. A deletion is
subtype ``message_deleted`` naming ``deleted_ts``; a deleted thread parent that has replies
stays as a ``tombstone`` instead, reported as a ``message_changed`` whose message has that
subtype.

- An **edit** is reported (:meth:`~bot.channel.ChannelHost.edited`) only when the text
  changed: Slack also sends ``message_changed`` when a link unfurls, a thread gains a reply
  (the parent's reply count) or language detection tags the message. An event without
  ``previous_message`` cannot show a change and is dropped. The envelope is the one the
  message would give had it been sent as it reads now, under the original's ``message_id``
  (``channel:ts``, :func:`~channels.slack.normalise.message_key`).
- A **deletion** (or a tombstone) is reported (:meth:`~bot.channel.ChannelHost.deleted`) with
  the deleted message's ``message_id``.
- The bot's own messages are never reported (it edits its progress messages all the time),
  nor are edits of messages :func:`~channels.slack.normalise.ignore_reason` would not deliver
  (channel housekeeping).

Pure functions over untrusted JSON, validated with pydantic; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from channels.slack.normalise import (
    BotIdentity,
    EventCallback,
    MessageEvent,
    ignore_reason,
    message_key,
    parse_message,
)

CHANGED = "message_changed"
DELETED = "message_deleted"
_TOMBSTONE = "tombstone"


@dataclass(frozen=True, slots=True, kw_only=True)
class NewMessage:
    """A message to deliver."""

    callback: EventCallback


@dataclass(frozen=True, slots=True, kw_only=True)
class Edit:
    """A message whose text changed: ``callback`` holds it as it reads now."""

    callback: EventCallback


@dataclass(frozen=True, slots=True, kw_only=True)
class Deletion:
    """A deleted message, by its envelope ``message_id``."""

    message_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Ignored:
    """Nothing for the host; ``reason`` is logged."""

    reason: str


MessageEventKind = NewMessage | Edit | Deletion | Ignored


class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Author(_Payload):
    """Who wrote a message, and what it said (``previous_message``)."""

    user: str | None = None
    bot_id: str | None = None
    text: str | None = None


class _Changed(_Payload):
    channel: str = Field(min_length=1)
    channel_type: str | None = None
    message: dict[str, Any]
    previous_message: _Author | None = None


class _Deleted(_Payload):
    channel: str = Field(min_length=1)
    deleted_ts: str = Field(min_length=1)
    previous_message: _Author | None = None


def _is_own(author: _Author, bot: BotIdentity) -> bool:
    return bool(
        (author.user and author.user == bot.user_id)
        or (author.bot_id and bot.bot_id and author.bot_id == bot.bot_id)
    )


def classify(body: Mapping[str, Any], bot: BotIdentity) -> MessageEventKind:
    """What the event callback ``body`` (a ``message`` or ``app_mention`` event) is."""
    event = body.get("event")
    if not isinstance(event, Mapping):
        return Ignored(reason="malformed")
    subtype = event.get("subtype")
    try:
        if subtype == CHANGED:
            return _edit(str(body.get("event_id") or ""), _Changed.model_validate(event), bot)
        if subtype == DELETED:
            return _deletion(_Deleted.model_validate(event), bot)
    except ValidationError:
        return Ignored(reason="malformed")
    callback = parse_message(body)
    if callback is None:
        return Ignored(reason="malformed")
    reason = ignore_reason(callback.event, bot)
    return NewMessage(callback=callback) if reason is None else Ignored(reason=reason)


def _edit(event_id: str, changed: _Changed, bot: BotIdentity) -> MessageEventKind:
    try:
        message = MessageEvent.model_validate(
            {
                **changed.message,
                "type": "message",
                "channel": changed.channel,
                "channel_type": changed.channel_type,
            }
        )
    except ValidationError:
        return Ignored(reason="malformed")
    author = _Author(user=message.user, bot_id=message.bot_id)
    previous = changed.previous_message
    if _is_own(author, bot) or (previous is not None and _is_own(previous, bot)):
        return Ignored(reason="own_message")
    if message.subtype == _TOMBSTONE:
        return Deletion(message_id=message_key(changed.channel, message.ts))
    if previous is None:
        return Ignored(reason="edit_without_previous_message")
    if (previous.text or "") == (message.text or ""):
        return Ignored(reason="edit_without_text_change")
    reason = ignore_reason(message, bot)
    if reason is not None:
        return Ignored(reason=f"edited_{reason}")
    return Edit(callback=EventCallback(event_id=event_id, event=message))


def _deletion(deleted: _Deleted, bot: BotIdentity) -> MessageEventKind:
    previous = deleted.previous_message
    if previous is not None and _is_own(previous, bot):
        return Ignored(reason="own_message")
    return Deletion(message_id=message_key(deleted.channel, deleted.deleted_ts))
