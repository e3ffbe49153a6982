"""Files the bot posts on Telegram: ``sendPhoto`` for a picture Telegram can show as one,
``sendDocument`` for everything else.

A file goes as a photo when it is a JPEG, PNG or WebP of at most 10 MB whose sides add up to
at most 10,000 pixels with a ratio of at most 20 (Telegram's limits for photos; Pillow reads
the header only, decoding nothing, and is imported only when a file is sent); anything else,
and a photo Telegram refuses, goes as a document with its name. Files over
``upload_max_bytes`` (the Bot API takes 50 MB) are refused before anything is sent.

The caption is Markdown rendered as Telegram HTML like a message's text (sent again as plain
text when Telegram cannot parse it). Telegram allows 1,024 characters in a caption: a longer
caption is cut, and the rest follows in messages of their own, in the same topic. The file's
message is recorded before its upload like every message (:mod:`channels.telegram.send_record`),
as part 1 of the reply ``key`` when it is one; a check cannot compare a file, so one a crash
cut off is undecided (:mod:`channels.telegram.delivery_check`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import structlog
from telegram import Bot, InputFile, Message, ReplyParameters
from telegram.constants import ParseMode
from telegram.error import BadRequest, TelegramError

from bot.attachments.naming import sent_file_name
from bot.channel import SentMessage
from bot.envelope import ChannelRef, DeliveryTarget
from bot.errors import ChannelError
from channels.telegram.config import MB, TelegramChannelConfig
from channels.telegram.markup import TELEGRAM_LIMIT, plain_text, render_chunks
from channels.telegram.media import human_size
from channels.telegram.normalise import message_key, parse_message_id
from channels.telegram.outbound import TelegramOutbound, may_have_made
from channels.telegram.ratelimit import with_retry_after

log = structlog.get_logger(__name__)

#: Telegram's limit for a caption.
CAPTION_LIMIT = 1024
PHOTO_MAX_BYTES = 10 * MB
PHOTO_MAX_SIDES = 10_000  # width + height
PHOTO_MAX_RATIO = 20
PHOTO_FORMATS = frozenset({"JPEG", "PNG", "WEBP"})
#: An upload of up to 50 MB can take a while on a slow link.
UPLOAD_TIMEOUT_S = 300.0


def shows_as_photo(path: Path, size: int) -> bool:
    """Whether the file at ``path`` (``size`` bytes) is a picture Telegram takes as a photo."""
    if size > PHOTO_MAX_BYTES:
        return False
    # imported here: only a file sent needs it, and Pillow is no small import for a text turn
    from PIL import Image

    try:
        with Image.open(path) as image:
            kind, (width, height) = image.format, image.size
    except (OSError, ValueError, Image.DecompressionBombError):
        return False
    if kind not in PHOTO_FORMATS or min(width, height) < 1:
        return False
    return width + height <= PHOTO_MAX_SIDES and max(width, height) <= PHOTO_MAX_RATIO * min(
        width, height
    )


def caption_parts(caption: str) -> tuple[str, list[str]]:
    """``caption`` rendered: the part that fits a caption, and the rest as messages (pieces
    joined up to a message's limit)."""
    chunks = render_chunks(caption, CAPTION_LIMIT)
    if not chunks:
        return "", []
    rest: list[str] = []
    for chunk in chunks[1:]:
        if rest and len(rest[-1]) + 1 + len(chunk) <= TELEGRAM_LIMIT:
            rest[-1] += "\n" + chunk
        else:
            rest.append(chunk)
    return chunks[0], rest


def _load(path: Path, name: str, limit: int) -> tuple[bytes, bool]:
    """The file's bytes, and whether it goes as a photo; too large or unreadable: refused."""
    try:
        size = path.stat().st_size
        if size > limit:
            raise ChannelError(
                f"{name} is {human_size(size)}; Telegram takes files of at most "
                f"{human_size(limit)} from a bot."
            )
        with path.open("rb") as handle:
            data = handle.read(limit + 1)  # it may have grown since: never held past the limit
    except OSError as exc:
        raise ChannelError(f"{name} cannot be read: {exc.strerror or exc}") from exc
    if len(data) > limit:
        raise ChannelError(
            f"{name} is over {human_size(limit)}; Telegram takes files of at most "
            f"{human_size(limit)} from a bot."
        )
    return data, shows_as_photo(path, len(data))


def _unparsable(exc: BadRequest) -> bool:
    return "can't parse entities" in exc.message.lower()


class TelegramFiles:
    """:class:`~bot.channel.FileSending` for one bot."""

    def __init__(
        self,
        *,
        ref: ChannelRef,
        config: TelegramChannelConfig,
        bot: Bot,
        outbound: TelegramOutbound,
    ) -> None:
        self._ref = ref
        self._config = config
        self._bot = bot
        self._outbound = outbound

    def upload_limit(self, target: DeliveryTarget) -> int:
        return self._config.upload_max_bytes

    async def send_file(
        self,
        target: DeliveryTarget,
        path: Path,
        *,
        name: str,
        caption: str = "",
        key: str = "",
    ) -> Sequence[SentMessage]:
        name = sent_file_name(name) or "file"  # nothing in it can make it read as another
        data, photo = await asyncio.to_thread(_load, path, name, self.upload_limit(target))
        head, rest = caption_parts(caption)
        async with self._outbound.record.sending(
            int(target.conversation_id), key=key, part=1, text=None, parse_mode=None, markup=None
        ) as slot:
            try:
                message = await self._upload(target, data, name, head, photo=photo)
            except (ChannelError, TelegramError) as exc:
                if not may_have_made(exc):
                    await slot.refused()
                raise
            await slot.sent(message.message_id)
        sent = [
            SentMessage(target=target, message_id=message_key(message.chat_id, message.message_id))
        ]
        for page in rest:
            sent.append(await self._outbound.post_rendered(target, page, reply=False))
        log.info(
            "telegram_file_sent",
            channel=str(self._ref),
            bytes=len(data),
            photo=bool(message.photo),
            messages=len(sent),
        )
        return sent

    async def _upload(
        self, target: DeliveryTarget, data: bytes, name: str, caption: str, *, photo: bool
    ) -> Message:
        """Post ``data``: as a photo when ``photo`` (a refused photo goes as a document),
        with the caption as HTML (as plain text when Telegram cannot parse it)."""
        parse_mode: str | None = ParseMode.HTML
        while True:
            try:
                return await self._post(target, data, name, caption, parse_mode, photo=photo)
            except BadRequest as exc:
                if _unparsable(exc) and parse_mode is not None:
                    log.warning("telegram_html_refused", channel=str(self._ref), error=exc.message)
                    caption, parse_mode = plain_text(caption), None
                elif photo:
                    log.info("telegram_photo_refused", channel=str(self._ref), error=exc.message)
                    photo = False
                else:
                    raise ChannelError(f"telegram sendDocument refused: {exc.message}") from exc

    async def _post(
        self,
        target: DeliveryTarget,
        data: bytes,
        name: str,
        caption: str,
        parse_mode: str | None,
        *,
        photo: bool,
    ) -> Message:
        chat_id = int(target.conversation_id)
        thread = int(target.thread_id) if target.thread_id else None
        reply_to = (
            ReplyParameters(
                message_id=parse_message_id(target.reply_to_message_id),
                allow_sending_without_reply=True,
            )
            if target.reply_to_message_id
            else None
        )
        upload = InputFile(data, filename=name)
        method = "sendPhoto" if photo else "sendDocument"

        async def call() -> Message:
            if photo:
                return await self._bot.send_photo(
                    chat_id=chat_id,
                    photo=upload,
                    caption=caption or None,
                    parse_mode=parse_mode,
                    message_thread_id=thread,
                    reply_parameters=reply_to,
                    write_timeout=UPLOAD_TIMEOUT_S,
                )
            return await self._bot.send_document(
                chat_id=chat_id,
                document=upload,
                caption=caption or None,
                parse_mode=parse_mode,
                message_thread_id=thread,
                reply_parameters=reply_to,
                write_timeout=UPLOAD_TIMEOUT_S,
            )

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
