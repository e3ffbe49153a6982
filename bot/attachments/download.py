"""One attachment's bytes, streamed from its channel to a file under a size cap.

The channel fetches from its platform (:class:`~bot.channel.AttachmentDownloads`); this side
decides how much it takes. A file whose size the platform already gave is refused before a
byte is fetched when it is over the cap; otherwise reading stops at the first chunk past the
cap, the stream is closed and the partial file deleted. The bytes go to ``<name>.part`` and
are renamed into place only once whole, so a half-written file never carries the final name.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TypeVar

import structlog

from bot.attachments.naming import human_size
from bot.channel import AttachmentDownloads
from bot.envelope import Attachment
from bot.errors import AttachmentError, AttachmentTooLarge

log = structlog.get_logger(__name__)

FILE_MODE = 0o600
T = TypeVar("T")


def too_large(limit: int) -> AttachmentTooLarge:
    """The refusal of a file over ``limit`` bytes, as the user reads it."""
    return AttachmentTooLarge(f"files over {human_size(limit)} are not accepted")


async def download(
    source: AttachmentDownloads,
    attachment: Attachment,
    dest: Path,
    *,
    limit: int,
    timeout_s: float,
) -> int:
    """Save ``attachment`` at ``dest`` (mode 0600) and return its size in bytes.

    Raises :class:`~bot.errors.AttachmentError` with a sentence the user may read:
    :class:`~bot.errors.AttachmentTooLarge` past ``limit`` bytes, the channel's own error
    (a refused host, an expired link), or a plain one for a download that failed, took
    longer than ``timeout_s`` or could not be written. Nothing is left at ``dest`` (nor a
    partial file) when it raises."""
    if attachment.size is not None and attachment.size > limit:
        raise too_large(limit)
    partial = dest.with_name(dest.name + ".part")
    try:
        async with asyncio.timeout(timeout_s):
            size = await _stream(source.download_attachment(attachment), partial, limit)
        os.replace(partial, dest)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        if isinstance(exc, AttachmentError) or not isinstance(exc, Exception):
            raise
        raise _plain(exc, timeout_s) from None
    return size


async def _stream(chunks: AsyncIterator[bytes], partial: Path, limit: int) -> int:
    written = 0
    try:
        out = _saving(lambda: os.fdopen(os.open(partial, _CREATE, FILE_MODE), "wb"))
        with out:
            async for chunk in chunks:
                written += len(chunk)
                if written > limit:
                    raise too_large(limit)
                _saving(functools.partial(out.write, chunk))
    finally:
        # stop the platform's transfer now, not when the generator is collected
        close = getattr(chunks, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await close()
    return written


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC


def _saving(write: Callable[[], T]) -> T:
    """``write()``, a failure of the disk (full, read-only) as a sentence for the user."""
    try:
        return write()
    except OSError as exc:
        log.warning("attachment_save_failed", error=type(exc).__name__, errno=exc.errno)
        raise AttachmentError("it could not be saved on the bot's disk") from None


def _plain(exc: Exception, timeout_s: float) -> AttachmentError:
    """An error no channel should raise (its contract is AttachmentError) as a sentence the
    user may read; the event names only its type, never its text (which could hold a
    signed URL)."""
    if isinstance(exc, TimeoutError):
        return AttachmentError(f"the download took longer than {timeout_s:g} s")
    log.warning("attachment_download_crashed", error=type(exc).__name__)
    return AttachmentError("the download failed")
