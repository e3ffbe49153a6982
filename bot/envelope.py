"""The ingress envelope: one inbound message, normalised by a channel adapter.

Adapters build envelopes and nothing else; the gateway and the agent turn read them. Every
value here is frozen so that a turn cannot change what it was asked.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any, Literal


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelRef:
    """A configured channel: its platform ``kind`` and the config ``alias`` (``telegram.main``)."""

    kind: str
    alias: str

    def __str__(self) -> str:
        return f"{self.kind}.{self.alias}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Sender:
    """Who wrote the message, as the platform names them.

    ``roles`` are the sender's roles as the platform's own event gave them with the message
    (Discord: the member's role ids and names), in the form ``approver_roles`` is matched
    against when the same person answers an approval card; never read from the message's
    text. Empty where the platform gives none with a message (Telegram, Slack, a DM, a
    scheduled run)."""

    id: str
    display_name: str = ""
    is_bot: bool = False
    roles: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Attachment:
    """Metadata of a file sent with a message; contents are downloaded on demand.
    ``voice`` marks a message recorded in the platform's app as a voice (or video) note;
    ``duration_s`` is its length, where the platform says."""

    kind: str  # "image", "file", "audio", "video", ...
    name: str = ""
    mime_type: str = ""
    size: int | None = None
    ref: str = ""  # platform file id or URL, opaque to the core
    voice: bool = False
    duration_s: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveryTarget:
    """Where answers go: a conversation, optionally a thread, optionally replying to a message.

    ``private_to``: the user (platform id) an answer here is for alone (a Discord
    application command used in a server: ``/usage``, ``/status``, a refusal). It is kept
    with the target wherever the target is kept (the outbox ledger), so a reply sent again
    after a restart, when the adapter no longer remembers the command, still goes where that
    user alone sees it, or nowhere: never in the conversation for everyone."""

    channel: ChannelRef
    conversation_id: str
    thread_id: str | None = None
    reply_to_message_id: str | None = None
    private_to: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """What the channel can do in this conversation.

    ``approval_backchannel`` is true only when an approval card can be posted here *and* an
    approver can reach it; ``terminal_prompt`` when a person at a terminal can answer directly.
    ``command_prefix`` is how a user types a chat command here (``/`` on most platforms,
    ``/hatchway `` on Slack, whose client keeps ``/word`` for slash commands); the gateway's
    ``/help`` spells commands with it. ``replay_on_restart`` is false where a message means
    nothing once the process that read it has gone (the console): recovery drops such a
    message instead of answering it in a later run. ``streams_text``: the channel shows a
    reply's text as the model writes it, by itself (a terminal:
    :class:`bot.channel.LiveText`), not in an edited draft.
    """

    can_edit: bool = False
    can_react: bool = False
    inline_buttons: bool = False
    typing: bool = False
    max_message_chars: int = 4000
    approval_backchannel: bool = False
    terminal_prompt: bool = False
    command_prefix: str = "/"
    replay_on_restart: bool = True
    commands_in_order: bool = False
    streams_text: bool = False


def _new_id() -> str:
    return uuid.uuid4().hex


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressEnvelope:
    """One inbound message, normalised.

    ``message_id`` is the platform's id and the idempotency key: the gateway answers each
    (channel, message_id) once. ``addressed_to_bot`` is true for a mention, a reply to the
    bot, or a direct message. ``background`` marks turns no person started (schedules); they
    never prompt for approval. ``announce`` False means the turn's final answer is kept in
    history but not sent (a scheduled job with delivery mode ``none``).

    Chat commands arrive as text the adapter normalised to ``/name args`` (a Telegram
    ``/stop@thisbot``, a Slack ``/hatchway stop`` or ``@bot stop``, a Discord application
    command). ``command_scope`` says what a command acts on: ``session`` (the session the
    message belongs to) or ``conversation`` (every session of the conversation the sender
    started, threads included: a Slack slash command names the channel, never the thread).

    ``private_reply``: the platform shows the answer to this message to its sender alone (a
    Slack slash command, a Discord application command), so a private answer may go where
    every other answer goes.

    ``guild_id`` is the Discord server the conversation belongs to (None elsewhere). ``agent``
    and ``route`` are filled in by the gateway as the message arrives (:mod:`bot.routing`):
    the agent that answers and why (``agents.ops.routes[0]``, ``channels.slack.work.agent``).

    ``conversation_title`` and ``thread_title`` are what the platform calls the conversation
    and the thread, where it names them (a Slack channel's name, a Discord channel's and
    thread's, a Telegram group's title; "" otherwise): kept for the web console to show
    beside the ids (:mod:`bot.gateway.names`), never matched on.
    """

    channel: ChannelRef
    message_id: str
    conversation_id: str
    sender: Sender
    text: str
    reply_target: DeliveryTarget
    thread_id: str | None = None
    attachments: tuple[Attachment, ...] = ()
    is_direct: bool = False
    is_group: bool = False
    addressed_to_bot: bool = False
    capabilities: Capabilities = field(default_factory=Capabilities)
    background: bool = False
    envelope_id: str = field(default_factory=_new_id)
    received_at: datetime = field(default_factory=_now)
    announce: bool = True
    command_scope: Literal["session", "conversation"] = "session"
    private_reply: bool = False
    guild_id: str | None = None
    agent: str = "default"
    route: str = ""
    conversation_title: str = ""
    thread_title: str = ""


def envelope_to_json(envelope: IngressEnvelope) -> str:
    """Serialise an envelope for the inbox (so a restart can resume or answer it): an object
    of its fields in field order, each nested dataclass an object of its own fields,
    ``received_at`` in ISO 8601."""
    data = _envelope_fields(envelope)
    data["channel"] = _ref_fields(envelope.channel)
    data["sender"] = _sender_fields(envelope.sender)
    data["reply_target"] = _target_fields(envelope.reply_target)
    data["attachments"] = [_attachment_fields(a) for a in envelope.attachments]
    data["capabilities"] = _capabilities_fields(envelope.capabilities)
    data["received_at"] = envelope.received_at.isoformat()
    return _ENCODER.encode(data)


def with_route(envelope: IngressEnvelope, agent: str, route: str) -> IngressEnvelope:
    """``envelope`` with its ``agent`` and ``route`` set (:mod:`bot.routing`): the copy
    ``dataclasses.replace`` makes, field by field as the class's own unpickling does, at
    about a fifth of its cost (every message is routed as it arrives)."""
    copy = object.__new__(IngressEnvelope)
    for name, value in zip(_ENVELOPE_NAMES, _envelope_values(envelope), strict=True):
        _set_field(copy, name, value)
    _set_field(copy, "agent", agent)
    _set_field(copy, "route", route)
    return copy


def _field_getter(cls: type) -> tuple[tuple[str, ...], Callable[[Any], Any]]:
    """The field names of dataclass ``cls`` and a getter of their values as a tuple (one C
    call: a turn's encoding pays no Python call per field)."""
    names = tuple(f.name for f in fields(cls))
    if len(names) < 2:  # attrgetter of one name returns the value, not a tuple
        raise TypeError(f"{cls.__name__}: fewer than two fields")
    return names, attrgetter(*names)


def _as_dict(cls: type) -> Callable[[Any], dict[str, Any]]:
    """A function giving a ``cls`` instance's fields as a dict, in field order."""
    names, values = _field_getter(cls)

    def as_dict(value: Any) -> dict[str, Any]:
        return dict(zip(names, values(value), strict=True))

    return as_dict


_set_field = object.__setattr__
_ENVELOPE_NAMES, _envelope_values = _field_getter(IngressEnvelope)
_envelope_fields = _as_dict(IngressEnvelope)
_ref_fields = _as_dict(ChannelRef)
_sender_fields = _as_dict(Sender)
_attachment_fields = _as_dict(Attachment)
_capabilities_fields = _as_dict(Capabilities)
_delivery_fields = _as_dict(DeliveryTarget)


def _target_fields(target: DeliveryTarget) -> dict[str, Any]:
    data = _delivery_fields(target)
    data["channel"] = _ref_fields(target.channel)
    return data


def _encode_value(value: object) -> object:
    """What the JSON encoder is left with if a field holding a dataclass or a datetime is
    added without its line above: the frozen dataclasses as objects of their fields, in
    field order, a ``datetime`` in ISO 8601."""
    if isinstance(value, datetime):
        return value.isoformat()
    if not is_dataclass(value) or isinstance(value, type):
        raise TypeError(f"{type(value).__name__} is not part of an envelope")
    return {f.name: getattr(value, f.name) for f in fields(value)}


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=_encode_value)


def target_to_json(target: DeliveryTarget) -> str:
    """Serialise a delivery target (the outbox ledger keeps where each reply went)."""
    return _ENCODER.encode(_target_fields(target))


def target_from_json(text: str) -> DeliveryTarget:
    return _target(json.loads(text))


def _target(data: dict[str, Any]) -> DeliveryTarget:
    return DeliveryTarget(
        channel=ChannelRef(**data["channel"]),
        conversation_id=data["conversation_id"],
        thread_id=data["thread_id"],
        reply_to_message_id=data["reply_to_message_id"],
        private_to=data.get("private_to"),
    )


def _sender(data: dict[str, Any]) -> Sender:
    """A sender as the inbox kept it; a row from before ``roles`` reads as no roles."""
    return Sender(
        id=data["id"],
        display_name=data.get("display_name", ""),
        is_bot=data.get("is_bot", False),
        roles=tuple(str(role) for role in data.get("roles", ())),
    )


def envelope_from_json(text: str) -> IngressEnvelope:
    data = json.loads(text)
    return IngressEnvelope(
        channel=ChannelRef(**data["channel"]),
        message_id=data["message_id"],
        conversation_id=data["conversation_id"],
        sender=_sender(data["sender"]),
        text=data["text"],
        reply_target=_target(data["reply_target"]),
        thread_id=data["thread_id"],
        attachments=tuple(Attachment(**a) for a in data["attachments"]),
        is_direct=data["is_direct"],
        is_group=data["is_group"],
        addressed_to_bot=data["addressed_to_bot"],
        capabilities=Capabilities(**data["capabilities"]),
        background=data["background"],
        envelope_id=data["envelope_id"],
        received_at=datetime.fromisoformat(data["received_at"]),
        announce=data.get("announce", True),
        command_scope=data.get("command_scope", "session"),
        private_reply=data.get("private_reply", False),
        guild_id=data.get("guild_id"),
        agent=data.get("agent", "default"),
        route=data.get("route", ""),
        conversation_title=data.get("conversation_title", ""),
        thread_title=data.get("thread_title", ""),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SentMessage:
    """A message the adapter posted, enough to edit it later."""

    target: DeliveryTarget
    message_id: str
