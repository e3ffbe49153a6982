"""Slack ``message`` / ``app_mention`` payloads → :class:`~bot.envelope.IngressEnvelope`.

Pure functions over untrusted JSON, validated with pydantic; nothing here does I/O.

Contracts:

- ``message_id`` is ``"{channel}:{ts}"``: stable across Slack's retries *and* across the
  ``message`` / ``app_mention`` pair Slack sends for one mention, so the gateway answers once.
- Conversations: ``im`` (DM) is direct; ``channel``, ``group`` (private channel) and ``mpim``
  (group DM) are groups. ``app_mention`` carries no ``channel_type``; the id prefix decides.
- Threads: in groups the conversation continues in the thread of the triggering message, so
  ``thread_id`` is ``thread_ts`` or, for a top-level message, its own ``ts``; answers go there.
  Top-level DMs are answered at top level unless ``dm_replies_in_thread``.
- Commands: a message that is exactly the bot's mention and a command word (``@bot stop``)
  becomes ``/stop`` (:func:`~channels.slack.commands.text_command`). In a thread it acts on
  that thread; at the top level it acts like the slash command (``thread_id`` None, ``/stop``
  on everything the sender started in the conversation), answered where a message would be.
- Not new messages (see :func:`ignore_reason`): the bot's own messages; edits
  (``message_changed``) and deletions (``message_deleted``), which are reported to the host as
  such (:mod:`channels.slack.message_events`), never as new messages; joins, leaves,
  topic/purpose/name changes and other channel housekeeping. Messages of other bots are kept
  with ``sender.is_bot`` so the gateway's policy decides.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.envelope import (
    Attachment,
    Capabilities,
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
)
from channels.slack.commands import scope_of, text_command
from channels.slack.file_hosts import FileRef

ConversationKind = Literal["im", "mpim", "channel", "group"]
_KINDS: dict[str, ConversationKind] = {
    "im": "im",
    "mpim": "mpim",
    "channel": "channel",
    "group": "group",
}

#: Subtypes that are a person (or an app) saying something to read.
_READABLE_SUBTYPES = frozenset({None, "file_share", "thread_broadcast", "me_message"})
_BOT_SUBTYPE = "bot_message"


class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class SlackFile(_Payload):
    id: str = ""
    name: str | None = None
    title: str | None = None
    mimetype: str | None = None
    size: int | None = None
    url_private: str | None = None
    url_private_download: str | None = None
    #: ``slack_audio`` for an audio clip recorded in Slack's app (``slack_video``: a video
    #: clip), with its length in milliseconds
    subtype: str | None = None
    duration_ms: int | None = Field(default=None, ge=0)


class MessageEvent(_Payload):
    """The fields of a ``message`` or ``app_mention`` event the adapter reads."""

    type: Literal["message", "app_mention"]
    channel: str = Field(min_length=1)
    ts: str = Field(min_length=1)
    channel_type: str | None = None
    user: str | None = None
    bot_id: str | None = None
    username: str | None = None
    text: str | None = None
    thread_ts: str | None = None
    parent_user_id: str | None = None
    subtype: str | None = None
    files: list[SlackFile] = Field(default_factory=list)


class EventCallback(_Payload):
    event_id: str = ""
    event: MessageEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class BotIdentity:
    """Who the bot is in this workspace, from ``auth.test``."""

    user_id: str
    bot_id: str = ""
    team_id: str = ""


def parse_message(body: Mapping[str, object]) -> EventCallback | None:
    """The event callback if ``body`` is a well-formed message event, else None."""
    try:
        return EventCallback.model_validate(body)
    except ValidationError:
        return None


def message_key(channel: str, ts: str) -> str:
    return f"{channel}:{ts}"


def ignore_reason(event: MessageEvent, bot: BotIdentity) -> str | None:
    """Why this event is not a message for the gateway, or None when it is."""
    if event.user and event.user == bot.user_id:
        return "own_message"
    if event.bot_id and bot.bot_id and event.bot_id == bot.bot_id:
        return "own_message"
    if event.subtype == "message_changed":
        return "edited"
    if event.subtype == "message_deleted":
        return "deleted"
    if event.subtype not in _READABLE_SUBTYPES and event.subtype != _BOT_SUBTYPE:
        return f"subtype_{event.subtype}"
    if not (event.user or event.bot_id):
        return "no_sender"
    return None


def conversation_kind(event: MessageEvent) -> ConversationKind:
    known = _KINDS.get(event.channel_type or "")
    if known is not None:
        return known
    prefix = event.channel[:1]
    if prefix == "D":
        return "im"
    return "group" if prefix == "G" else "channel"


_ANGLE = re.compile(r"<([^<>\n]+)>")


def clean_text(text: str, bot_user_id: str) -> str:
    """Slack's markup made readable: the bot's own mention removed, other mentions, channel
    links and URLs spelled out, entities unescaped."""

    def angle(match: re.Match[str]) -> str:
        inner = match.group(1)
        target, _, label = inner.partition("|")
        if target.startswith("@"):
            if target[1:] == bot_user_id:
                return ""
            return f"@{label or target[1:]}"
        if target.startswith("#"):
            return f"#{label or target[1:]}"
        if target.startswith("!"):
            if label:
                return label
            return f"@{target[1:].split('^', 1)[0]}"
        if target.startswith("mailto:"):
            return label or target[len("mailto:") :]
        if label and label != target:
            return f"{label} ({target})"
        return target

    plain = _ANGLE.sub(angle, text)
    plain = plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return re.sub(r"[ \t]{2,}", " ", plain).strip()


def is_addressed(event: MessageEvent, kind: ConversationKind, bot: BotIdentity) -> bool:
    """A DM, an ``app_mention``, a mention of the bot, or a reply in the bot's thread."""
    if kind == "im" or event.type == "app_mention":
        return True
    text = event.text or ""
    if f"<@{bot.user_id}>" in text or f"<@{bot.user_id}|" in text:
        return True
    return bool(event.thread_ts and event.parent_user_id == bot.user_id)


def attachment_of(file: SlackFile) -> Attachment:
    """The attachment of a shared file; its ``ref`` (:class:`FileRef`) names the file and
    where to download it, for :mod:`channels.slack.files`."""
    mime = file.mimetype or ""
    major = mime.split("/", 1)[0]
    kind = major if major in ("image", "audio", "video") else "file"
    url = file.url_private_download or file.url_private or ""
    clip = file.subtype == "slack_audio"
    return Attachment(
        kind="audio" if clip else kind,
        name=file.name or file.title or "",
        mime_type=mime,
        size=file.size,
        ref=FileRef(file_id=file.id, url=url).encode(),
        voice=clip,
        duration_s=None if file.duration_ms is None else file.duration_ms / 1000,
    )


def build_envelope(
    callback: EventCallback,
    *,
    ref: ChannelRef,
    bot: BotIdentity,
    display_name: str,
    capabilities: Capabilities,
    dm_replies_in_thread: bool = False,
) -> IngressEnvelope:
    """The envelope of a message :func:`ignore_reason` accepted."""
    event = callback.event
    kind = conversation_kind(event)
    is_direct = kind == "im"
    if is_direct and not dm_replies_in_thread:
        thread_id = event.thread_ts
    else:
        thread_id = event.thread_ts or event.ts
    reply_thread = thread_id
    is_bot = bool(event.bot_id) or event.subtype == _BOT_SUBTYPE
    sender_id = event.user or event.bot_id or ""
    text = clean_text(event.text or "", bot.user_id)
    command = text_command(event.text or "", bot.user_id)
    scope: Literal["session", "conversation"] = "session"
    if command is not None:
        text = command
        if not event.thread_ts:
            thread_id, scope = None, scope_of(command)
    return IngressEnvelope(
        channel=ref,
        message_id=message_key(event.channel, event.ts),
        conversation_id=event.channel,
        thread_id=thread_id,
        sender=Sender(
            id=sender_id,
            display_name=display_name or event.username or "",
            is_bot=is_bot,
        ),
        text=text,
        attachments=tuple(attachment_of(f) for f in event.files),
        is_direct=is_direct,
        is_group=not is_direct,
        addressed_to_bot=is_addressed(event, kind, bot),
        reply_target=DeliveryTarget(
            channel=ref,
            conversation_id=event.channel,
            thread_id=reply_thread,
            reply_to_message_id=event.ts,
        ),
        capabilities=capabilities,
        command_scope=scope,
    )
