"""The ``Channel`` protocol that every adapter in ``channels/`` implements.

An adapter turns platform events into :class:`~bot.envelope.IngressEnvelope` values and
hands them to its :class:`ChannelHost`; it renders outbound text, progress messages and
approval cards. It decides nothing: no access policy, no LLM, no storage.

A channel is its lifecycle, its health and its sending (:class:`ChannelSending`); what only
some platforms can do is a part it exposes as an attribute, None where the platform has no
such part, the way an httpx client holds its transport: ``cards`` (:class:`CardSending`),
``files`` (:class:`FileSending`),
``downloads`` (:class:`AttachmentDownloads`), ``delivery`` (:class:`DeliveryCheck`),
``members`` (:class:`MemberLookup`), ``history`` (:class:`ThreadHistory`), ``replied``
(:class:`RepliedTo`), ``viewing`` (:class:`PlaceViewed`), ``work_status``
(:class:`WorkStatus`), ``answer_stream`` (:class:`AnswerStream`) and ``live_text``
(:class:`LiveText`). A caller tests the attribute (``if channel.files is not None``), never
the channel's type, and uses the part directly.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from bot.cards import (
    CUT_NOTE,
    MAX_REPLY_CHARS,
    SHOW_FULL_LABEL,
    ApprovalCard,
    ApprovalChoice,
    CardAnswers,
    CardState,
    ClickVerdict,
)
from bot.envelope import (
    Attachment,
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
    SentMessage,
)

__all__ = [
    "CUT_NOTE",
    "MAX_REPLY_CHARS",
    "SHOW_FULL_LABEL",
    "AnswerStream",
    "ApprovalCard",
    "ApprovalChoice",
    "AttachmentDownloads",
    "BackgroundDeliveryCheck",
    "CardSending",
    "CardState",
    "Channel",
    "ChannelHealth",
    "ChannelHost",
    "ChannelSending",
    "ClickVerdict",
    "DeliveryCheck",
    "EarlierMessage",
    "FileSending",
    "HealthState",
    "LiveText",
    "MemberLookup",
    "RepliedTo",
    "SentMessage",
    "ThreadHistory",
    "WorkStatus",
]


class HealthState(enum.StrEnum):
    STARTING = "starting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelHealth:
    """Honest health: ``CONNECTED`` only once the platform accepted the credentials and the
    event stream is live."""

    state: HealthState
    detail: str = ""


class ChannelHost(CardAnswers, Protocol):
    """What the daemon offers an adapter: the way in for messages and answers on approval
    cards (:meth:`~bot.cards.CardAnswers.card_action`)."""

    async def deliver(self, envelope: IngressEnvelope) -> None:
        """Hand over one inbound message. Returns once the message is admitted: written to
        the inbox (or refused, or known as a redelivery), so an adapter that must confirm a
        platform event (a Slack ack, a Telegram offset) confirms it after this returns. The
        turn runs elsewhere."""
        ...

    async def edited(self, envelope: IngressEnvelope) -> None:
        """A message was edited; ``envelope`` is the message as it reads now (same channel
        and ``message_id``). The text of a message whose turn has not started is replaced;
        a message never admitted is handled as if it arrived now (an edit that adds the
        bot's mention is answered); a message whose turn started or ended is left alone
        (docs/reliability.md, "Edited and deleted messages")."""
        ...

    async def deleted(self, channel: ChannelRef, message_id: str) -> None:
        """A message was deleted on the platform: a turn for it that has not started is
        skipped (its inbox entry becomes ``failed``); one that started runs on."""
        ...

    async def lead(
        self,
        channel: ChannelRef,
        role: str,
        work: Callable[[], Awaitable[None]],
        *,
        standby: Callable[[str], None] | None = None,
    ) -> None:
        """Run ``work()`` while this process alone plays ``role`` of ``channel``: the
        platform's single consumer (``poll``: Telegram's ``getUpdates`` loop; ``gateway``:
        a Discord gateway session). Sending needs no role.

        With one process (a SQLite store) ``work()`` is simply awaited. With several
        replicas over one database the role is a lease (``<kind>.<alias>.<role>``): this
        waits until this replica holds it (calling ``standby`` with the reason while it
        cannot have it, again when the reason changes), runs ``work()`` in a task of its
        own, and, when the lease could not be renewed in time, cancels that task and returns
        before any other replica can take the role. The caller then calls again to wait for it;
        ``work`` must start from what the store holds (an offset, a last-seen message), not
        from memory, since another replica may have moved it on. What ``work`` returns or
        raises ends the tenure and is returned or raised."""
        ...


class ChannelSending(Protocol):
    """What a channel sends: markdown-ish text rendered for the platform and split at its
    limit without breaking code fences, edits, reactions and typing. Approval cards are its
    ``cards`` (:class:`CardSending`)."""

    async def send(
        self, target: DeliveryTarget, text: str, *, key: str = ""
    ) -> Sequence[SentMessage]:
        """Post ``text`` (split at the platform's limit); the messages posted, in order.
        ``key`` names a turn's reply so that :class:`DeliveryCheck` can find it again after a
        crash (Slack message metadata, a Discord nonce); adapters without a check ignore
        it."""
        ...

    async def edit(self, message: SentMessage, text: str) -> None: ...

    async def react(self, target: DeliveryTarget, message_id: str, emoji: str) -> None: ...

    async def typing(self, target: DeliveryTarget) -> None: ...


class CardSending(Protocol):
    """A channel's ``cards``, where approval cards can be shown, offered to the approval
    service's card desk: a card posted (to a conversation, or to a user's DM when
    ``target.conversation_id`` is a user id) and edited to the row's state. Answers on them
    come back through :meth:`ChannelHost.card_action`. Both raise
    :class:`~bot.errors.ChannelError` when the platform refuses."""

    async def post_approval_card(
        self, target: DeliveryTarget, card: ApprovalCard
    ) -> SentMessage: ...

    async def update_approval_card(self, message: SentMessage, card: ApprovalCard) -> None: ...


class DeliveryCheck(Protocol):
    """A channel's ``delivery``, where its platform lets a bot find its own posts, offered to
    start-up recovery: whether a reply whose send was begun before a crash (and never confirmed)
    reached the conversation (Slack and Discord read history; Telegram probes with edits,
    :class:`BackgroundDeliveryCheck`). A channel without one (``delivery`` None): recovery
    follows the policy in docs/reliability.md."""

    async def find_delivered(
        self,
        target: DeliveryTarget,
        *,
        key: str,
        text: str,
        after_message_id: str | None,
    ) -> Sequence[SentMessage] | None:
        """The messages this bot posted to ``target`` as the reply ``key`` (sent with
        ``send(..., key=key)``; ``text`` is what was sent, for a platform that keeps no key),
        looking only after the message ``after_message_id`` when given: an empty sequence
        when none is there, None when the platform could not be asked (an error; recovery
        then sends it again, marked as a possible repeat)."""
        ...


@runtime_checkable
class BackgroundDeliveryCheck(DeliveryCheck, Protocol):
    """A :class:`DeliveryCheck` that asks the platform by writing to it (Telegram's edit
    probe) and may wait for the platform: recovery runs it after start-up, in the
    background, never inside the start."""

    def checks_later(self) -> bool:
        """True: the check runs in the background."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class EarlierMessage:
    """One message of a thread read back from the platform (:class:`ThreadHistory`).
    ``at`` is when it was posted (epoch seconds); ``from_this_bot`` marks the bot's own."""

    message_id: str
    sender: Sender
    text: str
    at: float
    from_this_bot: bool = False


class ThreadHistory(Protocol):
    """A channel's ``history``, where its platform lets a bot read a thread back, offered to
    a turn: the earlier
    messages of the thread a message was written in (a Slack thread, a Discord thread or
    reply chain), so that a mention in the middle of a discussion is answered knowing it.
    Telegram bots cannot read history (its ``history`` is None, :class:`RepliedTo`)."""

    async def earlier_messages(
        self, envelope: IngressEnvelope, *, limit: int, max_chars: int
    ) -> Sequence[EarlierMessage] | None:
        """The messages before ``envelope`` in its thread, oldest first, ending before the
        bot's own first message there (what came after is in the session's history): at most
        ``limit`` of them and ``max_chars`` characters of text, the newest kept. Empty when
        ``envelope`` is in no thread; None when the platform could not be asked (after its
        rate limit's waits). Must not raise for a platform error."""
        ...


class RepliedTo(Protocol):
    """A channel's ``replied``, where it cannot read history back, offered to a turn instead
    of :class:`ThreadHistory`: the one message a message replied to, as the platform sent it
    with the message (Telegram's ``reply_to_message``). Nothing is fetched."""

    def replied_to(self, envelope: IngressEnvelope) -> EarlierMessage | None:
        """The message ``envelope`` replied to, when someone else wrote it and it was seen
        with ``envelope``; None otherwise. Must not block or raise."""
        ...


@dataclass(frozen=True, slots=True)
class ViewedPlace:
    """The conversation a person has open beside the one they ask the bot in (Slack's
    assistant pane: the channel they were viewing). ``name`` is what the platform's users
    named it (``""`` when unknown); ``workspace_id`` the workspace it is in."""

    conversation_id: str
    name: str = ""
    workspace_id: str = ""


class PlaceViewed(Protocol):
    """A channel's ``viewing``, where the platform says which conversation a person is
    looking at while they talk to the bot, offered to a turn (:mod:`bot.context`)."""

    async def viewed_place(self, envelope: IngressEnvelope) -> ViewedPlace | None:
        """The conversation the author of ``envelope`` was viewing when last said; None
        when the platform said nothing for ``envelope``'s conversation. Must not raise for
        a platform or storage failure."""
        ...


class WorkStatus(Protocol):
    """A channel's ``work_status``, where it shows a status line beside a conversation while
    the bot works, offered to the progress sink (Slack's assistant threads: "is thinking…",
    then the running tool). The status is shown in addition to progress lines, never instead
    of them."""

    def shows_status(self, target: DeliveryTarget) -> bool:
        """Whether a status line can be shown for ``target``. Must not block."""
        ...

    async def show_status(self, target: DeliveryTarget, *, tool: str | None) -> None:
        """Show that the bot works on ``target``: running ``tool`` (a tool's name, nothing
        of its arguments), or thinking when None. Raises only
        :class:`~bot.errors.ChannelError`; a status that cannot be shown is no failure of
        the turn."""
        ...


class AnswerStream(Protocol):
    """A channel's ``answer_stream``, where it streams an answer into a message of its own,
    offered to the progress sink (Slack's ``chat.startStream`` in assistant threads). The
    streamed message belongs to the turn's reply: the channel's keyed
    :meth:`ChannelSending.send` to the same target finishes that message with the whole reply
    (and whatever the channel finds its replies by after a crash) instead of posting a new
    one, also when recovery sends it after a restart."""

    def streams_to(self, target: DeliveryTarget) -> bool:
        """Whether an answer to ``target`` can be streamed. Must not block."""
        ...

    async def append(self, target: DeliveryTarget, text: str) -> None:
        """Add ``text`` to the answer streamed to ``target``, starting the stream at the
        first call. Raises :class:`~bot.errors.ChannelError` when it cannot: the sink then
        shows the rest as before (the progress message's draft)."""
        ...


class LiveText(Protocol):
    """A channel's ``live_text``, where it shows a reply's text as the model writes it,
    offered to the progress sink where its conversation's capabilities say ``streams_text``
    (the terminal of ``hatchway chat``). The deltas of one model call come in order; the
    turn's answer is still sent whole afterwards, and the channel shows only what its deltas
    did not (all of it, on a line of its own, when they differ). A progress line sent
    meanwhile ends the streamed line."""

    def stream_text(self, delta: str) -> None:
        """Show ``delta`` at once. Must not block and must not raise."""
        ...


class AttachmentDownloads(Protocol):
    """A channel's ``downloads``, where its users attach files, offered to the turn that
    answers them: the file's bytes, fetched through the platform's own API with the bot's
    credentials, and only from the platform's own hosts (a redirect is checked at every hop).
    The core streams them to the state directory under ``attachments.max_bytes``."""

    def download_limit(self) -> int:
        """The largest file the platform lets a bot download, in bytes (Telegram's Bot API
        serves 20 MB)."""
        ...

    def download_attachment(self, attachment: Attachment) -> AsyncIterator[bytes]:
        """The bytes of ``attachment`` (one of this channel's envelopes carried it), in
        chunks as they arrive. Raises :class:`bot.errors.AttachmentError`: a refused host
        (:class:`~bot.errors.AttachmentRefused`), a failed or expired download, or a file
        the platform says is over :meth:`download_limit`
        (:class:`~bot.errors.AttachmentTooLarge`). The caller stops reading (and closes
        the iterator) once it has read more than it allows."""
        ...


class FileSending(Protocol):
    """A channel's ``files``, where it can post files, offered to the ``send_file`` tool and
    to long answers sent as a file."""

    def upload_limit(self, target: DeliveryTarget) -> int:
        """The largest file the bot may post to ``target``, in bytes."""
        ...

    async def send_file(
        self,
        target: DeliveryTarget,
        path: Path,
        *,
        name: str,
        caption: str = "",
        key: str = "",
    ) -> Sequence[SentMessage]:
        """Post the file at ``path`` as ``name`` (an image as a photo where the platform
        shows one), with ``caption`` rendered like :meth:`ChannelSending.send`'s text;
        ``key`` as there. Raises :class:`bot.errors.ChannelError` with a plain sentence
        when the platform refuses it."""
        ...


class MemberLookup(Protocol):
    """A channel's ``members``, where its platform can tell whether a user can see a
    conversation, offered to the approval service before it posts a card
    (:mod:`bot.approval.reach`)."""

    async def can_see(self, target: DeliveryTarget, user_id: str) -> bool | None:
        """True or False when the platform says; None when it cannot tell (an unknown
        user, a failed request). Must not raise for a platform failure."""
        ...


@runtime_checkable
class Channel(ChannelSending, Protocol):
    """A platform adapter.

    ``run`` connects and lives until cancelled, delivering envelopes to the host; it must set
    ``health`` honestly. Its sending methods are :class:`ChannelSending`'s. Its optional
    parts are attributes, each None when the platform has none (the module doc); they exist
    from construction on and never change.
    """

    ref: ChannelRef

    @property
    def health(self) -> ChannelHealth: ...

    @property
    def cards(self) -> CardSending | None:
        """Approval cards (posted and edited; without them a request cannot be answered
        here)."""
        ...

    @property
    def files(self) -> FileSending | None:
        """Posting files (the ``send_file`` tool, long answers as a file)."""
        ...

    @property
    def downloads(self) -> AttachmentDownloads | None:
        """The files users attach to their messages."""
        ...

    @property
    def delivery(self) -> DeliveryCheck | None:
        """Whether a reply cut off by a crash reached the conversation."""
        ...

    @property
    def members(self) -> MemberLookup | None:
        """Whether a user can see a conversation."""
        ...

    @property
    def history(self) -> ThreadHistory | None:
        """A thread's earlier messages."""
        ...

    @property
    def replied(self) -> RepliedTo | None:
        """The message a message replied to, where ``history`` is None."""
        ...

    @property
    def viewing(self) -> PlaceViewed | None:
        """The conversation a person was viewing when they asked."""
        ...

    @property
    def work_status(self) -> WorkStatus | None:
        """A status line beside a conversation while the bot works."""
        ...

    @property
    def answer_stream(self) -> AnswerStream | None:
        """An answer streamed into a message of its own as the model writes it."""
        ...

    @property
    def live_text(self) -> LiveText | None:
        """A reply's text shown as the model writes it."""
        ...

    async def run(self, host: ChannelHost) -> None: ...
