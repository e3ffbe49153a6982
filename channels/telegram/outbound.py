"""Everything the Telegram channel sends: messages, edits, reactions, typing, approval cards.

Text is rendered as Telegram HTML in chunks of at most 4,096 characters
(:mod:`channels.telegram.markup`); a chunk Telegram cannot parse is sent again as plain text.
Every call honours ``RetryAfter`` (:mod:`channels.telegram.ratelimit`). Answers go to the
target's forum topic and, for the first chunk, reply to the target message. Edits are safe to
repeat: an unchanged text is not sent again, and "message is not modified" counts as success.
Reactions and typing are best effort: a refusal is logged, never raised.

Every message is recorded before its request and sends to one chat wait for each other
(:class:`~channels.telegram.send_record.SendRecord`, here in :meth:`TelegramOutbound._send_one`,
the one layer every text, card and full-view page goes through, and for a file's message
in :mod:`channels.telegram.files`), so a send a crash cut off can be checked
(:mod:`channels.telegram.delivery_check`). A request Telegram refused made no message and its
record goes; one that failed otherwise (a timeout, a lost connection, a server error) may
have made one, and its record stays to be checked before the chat's next send.

Cards and full views are rendered by :mod:`channels.telegram.cards` (literal, fitted to
one message, cut when they cannot fit; full views paged or sent as a file). Every posted card
and every full-view message is recorded in the :class:`~channels.common.card_index.CardIndex`. When
a card is edited to its outcome it is marked closed, and the full views of its approval lose
their buttons (their text stays). A full-view message named in an outcome edit (a late tap
on it) likewise only loses its buttons: its text is the request, not a card.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import structlog
from telegram import (
    Bot,
    InlineKeyboardMarkup,
    InputFile,
    Message,
    ReactionTypeEmoji,
    ReplyParameters,
)
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, NetworkError, RetryAfter, TelegramError

from bot.cards import DOCUMENT_NAME, ButtonCodec
from bot.channel import ApprovalCard, CardState, SentMessage
from bot.crashpoints import crash_point
from bot.envelope import ChannelRef, DeliveryTarget
from bot.errors import ChannelError
from channels.common.card_index import CardEntry, CardIndex, ViewMessage
from channels.telegram.cards import (
    card_keyboard,
    fit_card,
    full_view_keyboard,
    full_view_messages,
)
from channels.telegram.config import TelegramChannelConfig
from channels.telegram.markup import TELEGRAM_LIMIT, plain_text, render_chunks
from channels.telegram.normalise import message_key, parse_message_id
from channels.telegram.ratelimit import with_retry_after
from channels.telegram.send_record import SendRecord, Slot

log = structlog.get_logger(__name__)

T = TypeVar("T")

# Telegram accepts only a fixed set of reaction emoji; map the core's to allowed ones.
_REACTION_ALIASES = {"✅": "👍", "❌": "👎", "⏳": "👀", "🔐": "🤔"}


# Memory bound of the per-message cache of last edited texts.
REMEMBERED = 2048


def _remember(cache: dict[str, str], key: str, value: str) -> None:
    cache.pop(key, None)
    cache[key] = value
    while len(cache) > REMEMBERED:
        cache.pop(next(iter(cache)))


def _not_modified(exc: BadRequest) -> bool:
    return "not modified" in exc.message.lower()


def _unparsable(exc: BadRequest) -> bool:
    return "can't parse entities" in exc.message.lower()


def may_have_made(exc: BaseException) -> bool:
    """Whether a send that failed with ``exc`` may have made its message anyway: a timeout,
    a lost connection or a server error; not a request Telegram refused (a bad request,
    403, flood control)."""
    cause = exc if isinstance(exc, TelegramError) else exc.__cause__
    return isinstance(cause, NetworkError) and not isinstance(cause, BadRequest)


class TelegramOutbound:
    """Outbound calls of one bot. Holds the approval keyboard codec and the index of posted
    cards."""

    def __init__(
        self,
        *,
        ref: ChannelRef,
        config: TelegramChannelConfig,
        bot: Bot,
        cards: CardIndex,
        record: SendRecord,
    ) -> None:
        self._ref = ref
        self._config = config
        self._bot = bot
        self.record = record
        self.codec = ButtonCodec()
        self.cards = cards
        self._last_edit: dict[str, str] = {}

    async def _call(self, method: str, call: Callable[[], Awaitable[T]]) -> T:
        try:
            return await with_retry_after(
                method,
                call,
                attempts=self._config.send_attempts,
                max_wait_s=self._config.retry_after_max_s,
            )
        except BadRequest:
            raise
        except TelegramError as exc:
            raise ChannelError(f"telegram {method} failed: {exc.message}") from exc

    async def _send_one(
        self,
        target: DeliveryTarget,
        rendered: str,
        *,
        reply: bool,
        markup: InlineKeyboardMarkup | None = None,
        key: str = "",
        part: int = 0,
    ) -> Message:
        """Post one message, recorded first (module docstring); ``key`` and ``part`` name
        it as a part of a reply."""
        chat_id = int(target.conversation_id)
        thread = int(target.thread_id) if target.thread_id else None
        reply_to = (
            ReplyParameters(
                message_id=parse_message_id(target.reply_to_message_id),
                allow_sending_without_reply=True,
            )
            if reply and target.reply_to_message_id
            else None
        )

        async def send(text: str, parse_mode: str | None) -> Message:
            return await self._call(
                "sendMessage",
                lambda: self._bot.send_message(
                    chat_id=chat_id,
                    text=text,
                    parse_mode=parse_mode,
                    message_thread_id=thread,
                    reply_parameters=reply_to,
                    reply_markup=markup,
                ),
            )

        async with self.record.sending(
            chat_id,
            key=key,
            part=part,
            text=rendered,
            parse_mode=ParseMode.HTML,
            markup=None if markup is None else markup.to_json(),
        ) as slot:
            crash_point("before_request")
            try:
                message = await self._html_or_plain(send, rendered, slot)
            except (ChannelError, TelegramError) as exc:
                if not may_have_made(exc):
                    await slot.refused()
                raise
            crash_point("after_request")
            await slot.sent(message.message_id)
        return message

    async def _html_or_plain(
        self,
        send: Callable[[str, str | None], Awaitable[Message]],
        rendered: str,
        slot: Slot,
    ) -> Message:
        """Send ``rendered`` as HTML, and as plain text when Telegram cannot parse it."""
        try:
            return await send(rendered, ParseMode.HTML)
        except BadRequest as exc:
            if not _unparsable(exc):
                raise ChannelError(f"telegram sendMessage refused: {exc.message}") from exc
            log.warning("telegram_html_refused", channel=str(self._ref), error=exc.message)
        plain = plain_text(rendered)
        await slot.retext(plain, None)
        try:
            return await send(plain, None)
        except BadRequest as exc:
            raise ChannelError(f"telegram sendMessage refused: {exc.message}") from exc

    async def send(
        self, target: DeliveryTarget, text: str, *, key: str = ""
    ) -> Sequence[SentMessage]:
        sent: list[SentMessage] = []
        for index, chunk in enumerate(render_chunks(text, TELEGRAM_LIMIT)):
            message = await self._send_one(target, chunk, reply=index == 0, key=key, part=index + 1)
            sent.append(
                SentMessage(
                    target=target, message_id=message_key(message.chat_id, message.message_id)
                )
            )
        return sent

    def message_count(self, text: str) -> int:
        """How many messages :meth:`send` posts for ``text``."""
        return len(render_chunks(text, TELEGRAM_LIMIT))

    async def post_rendered(
        self, target: DeliveryTarget, rendered: str, *, reply: bool
    ) -> SentMessage:
        """Post one message of Telegram HTML (``reply``: as a reply to the target's message)."""
        message = await self._send_one(target, rendered, reply=reply)
        return SentMessage(
            target=target, message_id=message_key(message.chat_id, message.message_id)
        )

    async def _edit_html(
        self, message: SentMessage, rendered: str, markup: InlineKeyboardMarkup | None
    ) -> None:
        key = message_key(message.target.conversation_id, parse_message_id(message.message_id))
        if markup is None and self._last_edit.get(key) == rendered:
            return

        async def edit(text: str, parse_mode: str | None) -> None:
            await self._call(
                "editMessageText",
                lambda: self._bot.edit_message_text(
                    chat_id=int(message.target.conversation_id),
                    message_id=parse_message_id(message.message_id),
                    text=text,
                    parse_mode=parse_mode,
                    reply_markup=markup,
                ),
            )

        try:
            await edit(rendered, ParseMode.HTML)
        except BadRequest as exc:
            if _unparsable(exc):
                await self._editplain_text(edit, rendered)
            elif not _not_modified(exc):
                raise ChannelError(f"telegram editMessageText refused: {exc.message}") from exc
        _remember(self._last_edit, key, rendered)

    async def _editplain_text(
        self, edit: Callable[[str, str | None], Awaitable[None]], rendered: str
    ) -> None:
        try:
            await edit(plain_text(rendered), None)
        except BadRequest as exc:
            if not _not_modified(exc):
                raise ChannelError(f"telegram editMessageText refused: {exc.message}") from exc

    async def edit(self, message: SentMessage, text: str) -> None:
        chunks = render_chunks(text, TELEGRAM_LIMIT)
        if len(chunks) > 1:  # an edited message cannot grow into several; cut it short
            chunks = [render_chunks(text, TELEGRAM_LIMIT - 2)[0] + "\n…"]
        await self._edit_html(message, chunks[0] if chunks else "…", None)

    async def react(self, target: DeliveryTarget, message_id: str, emoji: str) -> None:
        emoji = _REACTION_ALIASES.get(emoji, emoji)
        try:
            await self._call(
                "setMessageReaction",
                lambda: self._bot.set_message_reaction(
                    chat_id=int(target.conversation_id),
                    message_id=parse_message_id(message_id),
                    reaction=[ReactionTypeEmoji(emoji)],
                ),
            )
        except (BadRequest, ChannelError) as exc:
            log.warning("telegram_reaction_refused", channel=str(self._ref), error=str(exc))

    async def typing(self, target: DeliveryTarget) -> None:
        thread = int(target.thread_id) if target.thread_id else None
        try:
            await self._bot.send_chat_action(
                chat_id=int(target.conversation_id),
                action=ChatAction.TYPING,
                message_thread_id=thread,
            )
        except RetryAfter:
            return  # a skipped typing pulse is harmless; the next one comes in seconds
        except TelegramError as exc:
            log.debug("telegram_typing_failed", channel=str(self._ref), error=exc.message)

    async def post_approval_card(self, target: DeliveryTarget, card: ApprovalCard) -> SentMessage:
        shown = fit_card(card)
        markup = card_keyboard(shown.card, self.codec)
        message = await self._send_one(target, shown.html, reply=True, markup=markup)
        if markup is not None:
            entry = CardEntry(
                approval_id=card.approval_id, thread_id=target.thread_id, cut=shown.card.cut
            )
            await self.cards.remember(message.chat_id, message.message_id, entry)
        return SentMessage(
            target=target, message_id=message_key(message.chat_id, message.message_id)
        )

    def card_message(self, chat_id: int, message_id: int) -> SentMessage:
        """The card posted as this message, in the form the approval service edits."""
        target = DeliveryTarget(channel=self._ref, conversation_id=str(chat_id))
        return SentMessage(target=target, message_id=message_key(chat_id, message_id))

    async def update_approval_card(self, message: SentMessage, card: ApprovalCard) -> None:
        """Show the card's new state; a decided card loses its buttons, and so do the full
        views of its approval. A full-view message keeps its text."""
        pending = card.state is CardState.PENDING
        chat = message.target.conversation_id
        number = parse_message_id(message.message_id)
        entry = await self.cards.find(chat, number)
        if entry is not None and entry.full_view:
            if not pending:
                await self._remove_buttons(int(chat), number)
                await self.cards.close(chat, number, card.approval_id)
                await self._close_views(card.approval_id)
            return
        shown = fit_card(card)
        # Editing the text without a keyboard removes the buttons.
        await self._edit_html(message, shown.html, card_keyboard(shown.card, self.codec))
        if not pending:
            await self.cards.close(chat, number, card.approval_id)
            await self._close_views(card.approval_id)

    # -- full views ---------------------------------------------------------------------

    async def post_full_view(self, where: DeliveryTarget, card: ApprovalCard) -> None:
        """Post every character of ``card``'s request
        (:func:`~channels.telegram.cards.full_view_messages`), each message a reply to
        ``where.reply_to_message_id`` (the card), the last one with Approve / Deny / Always
        marked as chosen on the full view."""
        plan = full_view_messages(card)
        keyboard = full_view_keyboard(
            card.approval_id, self.codec, card.grant_choices, always=card.always
        )
        views: list[ViewMessage] = []
        if plan.diff_file:
            lines = plan.diff_file.count(b"\n")
            caption = f"The change, {lines:,} diff lines: every one of them is in this file."
            sent = await self._send_document(where, plan.diff_file, plan.diff_name, caption)
            views.append(
                ViewMessage(
                    conversation=str(sent.chat_id), message=str(sent.message_id), buttons=False
                )
            )
        if plan.document:
            sent = await self._send_document(
                where, plan.document, DOCUMENT_NAME, plan.caption, keyboard
            )
            views.append(
                ViewMessage(
                    conversation=str(sent.chat_id), message=str(sent.message_id), buttons=True
                )
            )
        for index, page in enumerate(plan.pages, start=1):
            last = index == len(plan.pages)
            sent = await self._send_one(where, page, reply=True, markup=keyboard if last else None)
            views.append(
                ViewMessage(
                    conversation=str(sent.chat_id), message=str(sent.message_id), buttons=last
                )
            )
        await self.cards.add_views(card.approval_id, views)
        log.info(
            "telegram_full_view_posted",
            channel=str(self._ref),
            approval_id=card.approval_id,
            messages=len(views),
            document=bool(plan.document),
        )

    async def _send_document(
        self,
        where: DeliveryTarget,
        data: bytes,
        name: str,
        caption: str,
        markup: InlineKeyboardMarkup | None = None,
    ) -> Message:
        reply_to = (
            ReplyParameters(
                message_id=parse_message_id(where.reply_to_message_id),
                allow_sending_without_reply=True,
            )
            if where.reply_to_message_id
            else None
        )
        document = InputFile(data, filename=name)
        chat_id = int(where.conversation_id)
        async with self.record.sending(
            chat_id, key="", part=0, text=None, parse_mode=None, markup=None
        ) as slot:
            try:
                message = await self._call(
                    "sendDocument",
                    lambda: self._bot.send_document(
                        chat_id=chat_id,
                        document=document,
                        caption=caption,
                        parse_mode=ParseMode.HTML,
                        message_thread_id=int(where.thread_id) if where.thread_id else None,
                        reply_parameters=reply_to,
                        reply_markup=markup,
                    ),
                )
            except (ChannelError, TelegramError) as exc:
                if not may_have_made(exc):
                    await slot.refused()
                if isinstance(exc, BadRequest):
                    raise ChannelError(f"telegram sendDocument refused: {exc.message}") from exc
                raise
            await slot.sent(message.message_id)
        return message

    async def _remove_buttons(self, chat_id: int, message_id: int) -> None:
        try:
            await self._call(
                "editMessageReplyMarkup",
                lambda: self._bot.edit_message_reply_markup(chat_id=chat_id, message_id=message_id),
            )
        except BadRequest as exc:
            if not _not_modified(exc):
                raise ChannelError(
                    f"telegram editMessageReplyMarkup refused: {exc.message}"
                ) from exc

    async def _close_views(self, approval_id: str) -> None:
        """Take the buttons off every full view of a decided approval. A view that cannot
        be edited keeps them; a tap on it is answered "already decided"."""
        for view in await self.cards.take_views(approval_id):
            if view.buttons:
                try:
                    await self._remove_buttons(int(view.conversation), int(view.message))
                except ChannelError as exc:
                    log.warning(
                        "telegram_full_view_close_failed",
                        channel=str(self._ref),
                        approval_id=approval_id,
                        error=str(exc),
                    )
            await self.cards.close(view.conversation, view.message, approval_id)
