"""An in-process chat channel: a real :class:`~bot.channel.Channel` with no platform behind it.

Used wherever a test or a bench needs a channel but not a platform: approval tests (cards,
clicks as any user), schedule and MCP tests (waiting for a reply), progress tests (edits,
typing, a platform that is down), the throughput bench (timing replies). It records what it
was asked to send, edit and post, and a test clicks on a card it posted as any user with
:meth:`FakeChannel.click`. It has none of a channel's optional parts; each subclass that
has one is its own part (``self.members = self``). :class:`FakeTerminal` answers terminal
prompts from a script; :class:`MemberChannel` knows who is in which conversation
(``members``). :class:`FileChannel` serves files users attach (``downloads``);
:class:`UploadChannel` takes files the bot sends (``files``).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from bot.cards import Actor, CardAction, CardAnswers, CardReply, CardVerb
from bot.channel import (
    AnswerStream,
    ApprovalCard,
    ApprovalChoice,
    AttachmentDownloads,
    CardSending,
    ChannelHealth,
    ChannelHost,
    ClickVerdict,
    DeliveryCheck,
    FileSending,
    HealthState,
    LiveText,
    MemberLookup,
    PlaceViewed,
    RepliedTo,
    SentMessage,
    ThreadHistory,
    WorkStatus,
)
from bot.envelope import Attachment, ChannelRef, DeliveryTarget
from bot.errors import AttachmentError, ChannelError

#: Called with each sent text as it is sent (a bench timing replies); must not block.
SendHook = Callable[[DeliveryTarget, str], None]
T = TypeVar("T")

#: How long a wait for what the bot sends may take before the test fails. The wait ends at the
#: event; the bound is a failure guard, long enough for a loaded machine (at load 23 a wait
#: that needs 3 s took ~30 s), and only a broken test ever waits it out.
GUARD_S = 120.0


@dataclass(frozen=True, slots=True, kw_only=True)
class PostedCard:
    target: DeliveryTarget
    message_id: str
    card: ApprovalCard


class FakeChannel:
    """Records sent and edited text, typing, cards and card edits; always ``CONNECTED``.

    :meth:`run` keeps the host it is given in :attr:`host`, sets :attr:`running` and waits to
    be cancelled. ``on_send`` sees every sent text as it is sent. While :attr:`down`, sending
    and editing text raise :class:`~bot.errors.ChannelError`, as would posting a card to a
    conversation in :attr:`closed_dms`.
    """

    def __init__(
        self, ref: ChannelRef, *, on_send: SendHook | None = None, down: bool = False
    ) -> None:
        self.ref = ref
        self.on_send = on_send
        self.down = down
        self.host: ChannelHost | None = None
        self.running = asyncio.Event()
        self.sent: list[tuple[DeliveryTarget, str]] = []
        self.keys: list[str] = []  # the key of each sent text ("" for none)
        self.text_edits: list[tuple[str, str]] = []  # (message id, new text)
        self.typing_calls = 0
        self.typed = asyncio.Event()
        self.posted: list[PostedCard] = []
        self.edits: list[tuple[str, ApprovalCard]] = []  # (message id, card shown now)
        self.card_posted = asyncio.Event()
        self._posted_more = asyncio.Event()
        #: users whose DM refuses cards (never started the bot, closed their DMs)
        self.closed_dms: set[str] = set()
        self._ids = itertools.count(1)
        self._sent_more = asyncio.Event()
        # the optional parts of a bot.channel.Channel: cards (itself); a subclass sets the
        # others it has
        self.cards: CardSending | None = self
        self.files: FileSending | None = None
        self.downloads: AttachmentDownloads | None = None
        self.delivery: DeliveryCheck | None = None
        self.members: MemberLookup | None = None
        self.history: ThreadHistory | None = None
        self.replied: RepliedTo | None = None
        self.viewing: PlaceViewed | None = None
        self.work_status: WorkStatus | None = None
        self.answer_stream: AnswerStream | None = None
        self.live_text: LiveText | None = None

    @property
    def health(self) -> ChannelHealth:
        return ChannelHealth(state=HealthState.CONNECTED)

    async def run(self, host: ChannelHost) -> None:
        self.host = host
        self.running.set()
        await asyncio.Event().wait()

    @property
    def texts(self) -> list[str]:
        """The sent texts, in order."""
        return [text for _, text in self.sent]

    @property
    def edited_texts(self) -> list[str]:
        """What the sent messages were edited to, in order."""
        return [text for _, text in self.text_edits]

    async def send(
        self, target: DeliveryTarget, text: str, *, key: str = ""
    ) -> Sequence[SentMessage]:
        if self.down:
            raise ChannelError("platform down")
        self.sent.append((target, text))
        self.keys.append(key)
        if self.on_send is not None:
            self.on_send(target, text)
        self._sent_more.set()
        return [SentMessage(target=target, message_id=f"m{next(self._ids)}")]

    async def edit(self, message: SentMessage, text: str) -> None:
        if self.down:
            raise ChannelError("platform down")
        self.text_edits.append((message.message_id, text))

    async def react(self, target: DeliveryTarget, message_id: str, emoji: str) -> None:
        return None

    async def typing(self, target: DeliveryTarget) -> None:
        self.typing_calls += 1
        self.typed.set()

    async def post_approval_card(self, target: DeliveryTarget, card: ApprovalCard) -> SentMessage:
        if target.conversation_id in self.closed_dms:
            raise ChannelError(f"cannot message {target.conversation_id}")
        message_id = f"card{next(self._ids)}"
        self.posted.append(PostedCard(target=target, message_id=message_id, card=card))
        self.card_posted.set()
        self._posted_more.set()
        return SentMessage(target=target, message_id=message_id)

    async def update_approval_card(self, message: SentMessage, card: ApprovalCard) -> None:
        self.edits.append((message.message_id, card))

    async def wait_for(self, needle: str, *, within_s: float = GUARD_S) -> DeliveryTarget:
        """Wait until a sent text contains ``needle``; returns where it was sent."""

        def found() -> DeliveryTarget | None:
            return next((target for target, text in self.sent if needle in text), None)

        return await _until(found, self._sent_more, within_s)

    async def card_to(self, conversation_id: str, *, within_s: float = GUARD_S) -> PostedCard:
        """Wait until a card is posted to ``conversation_id`` (a user id: that user's DM);
        returns the first such card."""

        def found() -> PostedCard | None:
            return next(
                (p for p in self.posted if p.target.conversation_id == conversation_id), None
            )

        return await _until(found, self._posted_more, within_s)

    async def next_card(self) -> PostedCard:
        """Wait for a card posted after the last call."""
        await self.card_posted.wait()
        self.card_posted.clear()
        return self.posted[-1]

    def click(
        self,
        card: PostedCard,
        user_id: str,
        choice: ApprovalChoice = ApprovalChoice.APPROVE,
        *,
        roles: tuple[str, ...] = (),
        replacement_text: str | None = None,
        on: str | None = None,
        full_view: bool = False,
    ) -> CardAction:
        """A click on ``card``, as if on the copy posted as message ``on`` (default: the
        posted message itself)."""
        message = SentMessage(target=card.target, message_id=on or card.message_id)
        return CardAction(
            channel=self.ref,
            approval_id=card.card.approval_id,
            verb=CardVerb(choice),
            actor=Actor(user_id=user_id, roles=roles),
            reply=replacement_text,
            card=message,
            full_view=full_view,
        )


class FakeSurface:
    """The :class:`~bot.cards.CardSurface` of the in-process channel: records what it was
    asked to show; ``whole`` says whether it draws a card whole."""

    def __init__(self, *, whole: bool = True) -> None:
        self.whole = whole
        self.told: list[CardReply] = []
        self.full_views: list[ApprovalCard] = []
        self.reply_forms: list[str] = []

    def shows_whole(self, card: ApprovalCard) -> bool:
        return self.whole

    async def tell(self, reply: CardReply) -> None:
        self.told.append(reply)

    async def show_full(self, card: ApprovalCard) -> None:
        self.full_views.append(card)

    async def open_reply_form(self, approval_id: str) -> None:
        self.reply_forms.append(approval_id)


async def clicked(
    answers: CardAnswers, action: CardAction, surface: FakeSurface | None = None
) -> ClickVerdict:
    """The verdict ``answers`` (the approval service, or a channel host) gives ``action``."""
    return (await answers.card_action(action, surface or FakeSurface())).verdict


async def _until(found: Callable[[], T | None], more: asyncio.Event, within_s: float) -> T:
    """``found()`` once it is not None, checked again each time ``more`` is set."""
    async with asyncio.timeout(within_s):
        while (value := found()) is None:
            more.clear()
            await more.wait()
        return value


class FakeTerminal(FakeChannel):
    """A console-like channel that answers prompts from a script (``None`` = EOF)."""

    def __init__(self, ref: ChannelRef, answers: Sequence[str | None]) -> None:
        super().__init__(ref)
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def ask_line(self, prompt: str) -> str | None:
        self.prompts.append(prompt)
        if not self.answers:
            await asyncio.Event().wait()  # nobody types: only a timeout ends this
        return self.answers.pop(0)


class MemberChannel(FakeChannel):
    """A fake channel that knows who is in which conversation (its ``members``, a
    :class:`bot.channel.MemberLookup`, are itself): ``present`` by conversation; ``None``
    answers for unknown conversations."""

    def __init__(self, ref: ChannelRef, present: dict[str, set[str]]) -> None:
        super().__init__(ref)
        self.present = present
        self.asked: list[tuple[str, str]] = []
        self.members = self

    async def can_see(self, target: DeliveryTarget, user_id: str) -> bool | None:
        self.asked.append((target.conversation_id, user_id))
        present = self.present.get(target.conversation_id)
        return None if present is None else user_id in present


class FileChannel(FakeChannel):
    """A fake channel whose users attach files (its ``downloads``, a
    :class:`bot.channel.AttachmentDownloads`, are itself): it serves the bytes in
    :attr:`attached` (by attachment ref) in chunks of ``chunk_bytes``,
    raises the error in :attr:`failures` for a ref listed there, and says ``limit`` is the
    largest file it lets a bot download. :attr:`served` counts the bytes each ref handed
    out before its download ended, :attr:`closed` the refs whose stream was closed."""

    def __init__(
        self,
        ref: ChannelRef,
        files: dict[str, bytes] | None = None,
        *,
        limit: int = 50 * 1024 * 1024,
        chunk_bytes: int = 64 * 1024,
    ) -> None:
        super().__init__(ref)
        self.attached = dict(files or {})
        self.downloads = self
        self.failures: dict[str, AttachmentError] = {}
        self.limit = limit
        self.chunk_bytes = chunk_bytes
        self.served: dict[str, int] = {}
        self.closed: set[str] = set()

    def download_limit(self) -> int:
        return self.limit

    async def download_attachment(self, attachment: Attachment) -> AsyncIterator[bytes]:
        ref = attachment.ref
        if ref in self.failures:
            raise self.failures[ref]
        if ref not in self.attached:
            raise AttachmentError("the file is no longer available")
        data = self.attached[ref]
        self.served[ref] = 0
        try:
            for start in range(0, len(data), self.chunk_bytes):
                piece = data[start : start + self.chunk_bytes]
                self.served[ref] += len(piece)
                yield piece
                await asyncio.sleep(0)
        finally:
            self.closed.add(ref)


@dataclass(frozen=True, slots=True, kw_only=True)
class Upload:
    """One file a channel was asked to post: where, under which name, its bytes as read at
    the upload, its caption and key."""

    target: DeliveryTarget
    name: str
    data: bytes
    caption: str
    key: str


class UploadChannel(FileChannel):
    """A fake channel that posts files (its ``files``, a :class:`bot.channel.FileSending`,
    are itself) and, like
    :class:`FileChannel`, serves the files its users attach: it reads each file when asked to
    post it and records it in :attr:`uploads`; ``upload_max`` is the largest file it takes
    (in every conversation); while :attr:`refusing` is set, an upload raises
    :class:`~bot.errors.ChannelError` with that sentence."""

    def __init__(
        self,
        ref: ChannelRef,
        files: dict[str, bytes] | None = None,
        *,
        upload_max: int = 50 * 1024 * 1024,
    ) -> None:
        super().__init__(ref, files)
        self.upload_max = upload_max
        self.uploads: list[Upload] = []
        self.refusing = ""
        self.files = self

    def upload_limit(self, target: DeliveryTarget) -> int:
        return self.upload_max

    async def send_file(
        self,
        target: DeliveryTarget,
        path: Path,
        *,
        name: str,
        caption: str = "",
        key: str = "",
    ) -> Sequence[SentMessage]:
        if self.refusing:
            raise ChannelError(self.refusing)
        data = await asyncio.to_thread(path.read_bytes)
        self.uploads.append(Upload(target=target, name=name, data=data, caption=caption, key=key))
        return [SentMessage(target=target, message_id=f"f{next(self._ids)}")]
