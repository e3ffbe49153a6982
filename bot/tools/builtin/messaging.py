"""The ``send_message`` tool and the :class:`Outbox` it posts through.

``send_message`` is channel-aware: the pipeline fills a missing ``channel`` / ``to`` /
``thread`` from the envelope's reply target, and the handler falls back to
``ToolContext.delivery`` the same way when called directly. Posting into the conversation the
request came from needs no approval; any other conversation does (``approval_check``), and
must be one the :class:`Outbox` knows and allows. The text is scrubbed before it is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import structlog
from pydantic import Field

from bot.envelope import ChannelRef, DeliveryTarget
from bot.scrub import scrub_text
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.observation import ToolFailed, ToolRefused
from bot.tools.spec import ToolContext, ToolKind, ToolResult, ToolSpec

log = structlog.get_logger(__name__)

MAX_MESSAGE_CHARS = 20_000


class Outbox(Protocol):
    """Where ``send_message`` posts. The daemon provides one over the live channels.

    :meth:`allows` is asked first and must answer from configuration alone (the channel is
    configured and running, and the conversation is one the bot may post to); :meth:`send`
    delivers (splitting long text as the platform needs) and raises on a delivery failure.
    Neither may ask for approval: that already happened.
    """

    def allows(self, target: DeliveryTarget) -> bool: ...

    async def send(self, target: DeliveryTarget, text: str) -> None: ...


class Addressed(Protocol):
    """Arguments that name a conversation, each part optional (``send_message``,
    ``send_file``)."""

    @property
    def channel(self) -> str | None: ...

    @property
    def to(self) -> str | None: ...

    @property
    def thread(self) -> str | None: ...


class SendMessageArguments(ToolArguments):
    text: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS, description="Message text.")
    channel: str | None = Field(
        default=None, description="Channel as kind.alias (e.g. slack.main); default: this one."
    )
    to: str | None = Field(default=None, description="Conversation id; default: this one.")
    thread: str | None = Field(default=None, description="Thread id; default: this thread.")


def _origin(context: ToolContext) -> tuple[str, str]:
    return str(context.delivery.channel), context.delivery.conversation_id


def _parse_channel(text: str) -> ChannelRef:
    kind, dot, alias = text.partition(".")
    if not dot or not kind or not alias:
        raise ToolFailed(f"channel must look like kind.alias (e.g. slack.main), not {text!r}")
    return ChannelRef(kind=kind, alias=alias)


def resolve_target(args: Addressed, context: ToolContext) -> DeliveryTarget:
    """The target of a call: explicit arguments first, the originating conversation for what
    is missing. The origin's thread is used only when the conversation is the origin's."""
    origin_channel, origin_conversation = _origin(context)
    channel = args.channel or origin_channel
    conversation = args.to or origin_conversation
    if not channel or not conversation:
        raise ToolFailed("no target: set channel (kind.alias) and to (conversation id)")
    thread = args.thread
    same = (channel, conversation) == (origin_channel, origin_conversation)
    origin_thread = context.delivery.thread_id
    if thread is None and same:
        thread = origin_thread
    elif not same and thread is not None and thread == origin_thread:
        # The delivery defaults fill the origin's thread even when the model named another
        # conversation; that thread does not exist there.
        thread = None
    return DeliveryTarget(
        channel=_parse_channel(channel), conversation_id=conversation, thread_id=thread
    )


def is_origin(target: DeliveryTarget, context: ToolContext) -> bool:
    """Whether ``target`` is the conversation the request came from (any thread of it)."""
    return (str(target.channel), target.conversation_id) == _origin(context)


def needs_approval(arguments: Mapping[str, object], context: ToolContext) -> bool:
    """Approval is needed when the message would go to another conversation than the one the
    request came from (a different channel or conversation id; a thread of the same
    conversation does not count)."""
    origin = _origin(context)
    channel = arguments.get("channel") or origin[0]
    conversation = arguments.get("to") or origin[1]
    return (str(channel), str(conversation)) != origin


def send_message_tool(outbox: Outbox) -> ToolSpec:
    """Build ``send_message`` over ``outbox``."""

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(SendMessageArguments, arguments)
        target = resolve_target(args, context)
        # The conversation the request came from is always allowed: its sender was let in,
        # and its id may be of a shape the outbox cannot classify (every Discord channel).
        if not is_origin(target, context) and not outbox.allows(target):
            raise ToolRefused(
                f"{target.channel}:{target.conversation_id} is not a conversation this bot "
                "can post to"
            )
        await outbox.send(target, scrub_text(args.text))
        where = f"{target.channel}:{target.conversation_id}"
        if target.thread_id:
            where += f" (thread {target.thread_id})"
        log.info("send_message_sent", channel=str(target.channel), chars=len(args.text))
        return f"sent to {where}"

    return ToolSpec(
        name="send_message",
        description=(
            "Post a message to a chat. Without channel/to it goes to the current "
            "conversation; another conversation needs approval."
        ),
        parameters=schema_of(SendMessageArguments),
        handler=handler,
        requires_approval=True,
        approval_check=needs_approval,
        kind=ToolKind.WRITE,
        channel_aware=True,
    )
