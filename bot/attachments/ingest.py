"""A turn's user message with what its attachments hold, built when the turn starts.

:class:`AttachmentIngest` is what the turn runner calls for a message that came with files.
Through the channel's ``downloads`` (:class:`~bot.channel.AttachmentDownloads`) it
downloads each file (``attachments.parallel_downloads`` at once) to
``<state_dir>/attachments`` under the smaller of ``attachments.max_bytes`` and the
platform's own limit, reads it by its content (:mod:`bot.attachments.reading`), records a
row per saved file (:mod:`bot.store.attachments`) and returns the user
:class:`~bot.providers.base.ChatMessage`: the user's text, a line per file
(:mod:`bot.attachments.lines`), and the images to show with it this turn. Nothing the user
sent is lost on the way: a file that cannot be downloaded, is too large or cannot be
read becomes a line saying so, and the turn runs.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from bot.attachments import lines
from bot.attachments.lines import ImageSight, Note
from bot.attachments.naming import new_attachment_id, saved_name
from bot.channel import AttachmentDownloads, Channel
from bot.config.attachments import AttachmentsConfig
from bot.envelope import Attachment
from bot.errors import AttachmentError, AttachmentRefused, AttachmentTooLarge, StorageError
from bot.providers.base import ChatMessage, ImagePart
from bot.store import Store
from bot.store.attachments import AttachmentRecord
from bot.turn import TurnIdentity
from bot.visible_text import is_invisible

if TYPE_CHECKING:
    from bot.attachments.reading import Read, Saved

log = structlog.get_logger(__name__)

FOLDER = "attachments"
"""The state directory's folder of saved attachments."""
FOLDER_MODE = 0o700
#: The most images shown with one message, and their most bytes together: within what
#: every provider takes in one request (Anthropic: 32 MB, base64 included).
MAX_IMAGES = 8
MAX_IMAGE_BYTES = 15 * 1024 * 1024
NO_DOWNLOADS = "this channel does not pass files to the bot"
CRASHED = "the bot failed while reading it (its log says why)"
TURNED_OFF = "reading attachments is turned off (attachments.enabled)"


@dataclass(frozen=True, slots=True, kw_only=True)
class SavedFile:
    """A file of the message as it was saved: its position in the envelope, the
    attachment, its name as the model's lines show it, where it is and its size."""

    index: int
    attachment: Attachment
    name: str
    path: Path
    size: int


Listen = Callable[[Sequence[SavedFile]], Awaitable[Sequence[str]]]
"""Told of a message's saved files once all are downloaded; the lines it returns (a voice
note's transcript, :mod:`bot.transcription`) follow the user's text as their words."""

WorkspaceFor = Callable[[TurnIdentity], Path | None]
"""The folder of a turn's workspace that its file tools see (None: none can be used)."""

#: An agent shown images with the message and offered ``view_attachment``.
SEES_ALL = ImageSight()

_UNSHOWN = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\[\]]+")


class AttachmentIngest:
    """Builds the user message of a turn whose message came with files (see the module
    doc). ``config`` is read at each turn, so a reload applies to the next one; ``folder``
    is ``<state_dir>/attachments``; ``workspace_for`` names the turn's workspace folder."""

    def __init__(
        self,
        *,
        store: Store,
        config: Callable[[], AttachmentsConfig],
        folder: Path,
        workspace_for: WorkspaceFor,
    ) -> None:
        self._store = store
        self._config = config
        # rows keep absolute paths, which a later change of working directory cannot break
        self.folder = folder.absolute()
        self._workspace_for = workspace_for

    async def user_message(
        self,
        turn: TurnIdentity,
        channel: Channel | None,
        sight: ImageSight = SEES_ALL,
        listen: Listen | None = None,
    ) -> ChatMessage:
        """The user message of ``turn``: the envelope's text, a line per attachment, and
        the images to show. ``channel`` is the message's channel (None when it is gone);
        files are downloaded only through its ``downloads``. ``sight`` is what
        the turn's agent can do with an image: its lines promise no more. ``listen``, when
        given, is told of the saved files and its lines join the user's text. Raises
        nothing for what the files are or how they fail."""
        envelope = turn.envelope
        config = self._config()
        attachments = envelope.attachments
        words: Sequence[str] = ()
        if not attachments:
            return ChatMessage(role="user", content=envelope.text)
        downloads = channel.downloads if channel is not None else None
        if not config.enabled or downloads is None:
            why = TURNED_OFF if not config.enabled else NO_DOWNLOADS
            notes = [
                lines.unread(_name(a, i), a.size, why, lines.PASTE)
                for i, a in enumerate(attachments)
            ]
        else:
            try:
                notes, words = await self._read_all(turn, downloads, config, sight, listen)
            except Exception:
                # Boundary: a bug here must not cost the user their message; it is logged
                # and the model is told each file's name.
                log.exception("attachment_ingest_crashed", channel=turn.channel)
                notes = [
                    lines.unread(_name(a, i), a.size, CRASHED, lines.RESEND)
                    for i, a in enumerate(attachments)
                ]
        shown, notes = _shown_images(notes)
        text = "\n\n".join(part for part in (envelope.text, *words) if part)
        return ChatMessage(role="user", content=lines.content(text, notes), images=shown)

    async def _read_all(
        self,
        turn: TurnIdentity,
        channel: AttachmentDownloads,
        config: AttachmentsConfig,
        sight: ImageSight,
        listen: Listen | None,
    ) -> tuple[list[Note], Sequence[str]]:
        limit = min(config.max_bytes, channel.download_limit())
        workspace = self._workspace_for(turn)
        await asyncio.to_thread(os.makedirs, self.folder, FOLDER_MODE, True)
        slots = asyncio.Semaphore(config.parallel_downloads)
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(
                    self._read_one(
                        turn,
                        channel,
                        attachment,
                        _name(attachment, index),
                        limit=limit,
                        config=config,
                        workspace=workspace,
                        slots=slots,
                        sight=sight,
                    )
                )
                for index, attachment in enumerate(turn.envelope.attachments)
            ]
        done = [task.result() for task in tasks]
        # one time for the message, its files a microsecond apart: listed in the order sent
        now = time.time()
        records = [
            _record(turn, *kept, created_at=now + index / 1e6)
            for index, (kept, _) in enumerate(done)
            if kept is not None
        ]
        try:
            await self._store.attachments.record(*records)
        except StorageError as exc:
            # the files stay until the sweep of old files; this turn still sees them
            log.warning("attachment_rows_not_recorded", error=str(exc), files=len(records))
        words: Sequence[str] = ()
        if listen is not None:
            attachments = turn.envelope.attachments
            saved = [
                SavedFile(
                    index=index,
                    attachment=attachments[index],
                    name=kept[0].name,
                    path=kept[0].path,
                    size=kept[0].size,
                )
                for index, (kept, _) in enumerate(done)
                if kept is not None
            ]
            words = await listen(saved)
        return [note for _, note in done], words

    async def _read_one(
        self,
        turn: TurnIdentity,
        channel: AttachmentDownloads,
        attachment: Attachment,
        name: str,
        *,
        limit: int,
        config: AttachmentsConfig,
        workspace: Path | None,
        slots: asyncio.Semaphore,
        sight: ImageSight,
    ) -> tuple[tuple[Saved, Read] | None, Note]:
        # the readers (PDF, images, text sniffing) with a message's first file: a plain
        # text turn has no use for them
        from bot.attachments.download import download
        from bot.attachments.reading import Saved, read_saved

        attachment_id = new_attachment_id()
        path = self.folder / saved_name(attachment_id, name)
        async with slots:
            try:
                size = await download(
                    channel, attachment, path, limit=limit, timeout_s=config.download_timeout_s
                )
            except AttachmentError as exc:
                log.warning(
                    "attachment_not_read",
                    channel=turn.channel,
                    attachment_kind=attachment.kind,
                    reason=type(exc).__name__,
                    error=str(exc),
                )
                why = lines.reason(str(exc), attachment.name, name)
                return None, lines.unread(name, attachment.size, why, _advice(exc))
            saved = Saved(id=attachment_id, name=name, path=path, size=size)
            read = await read_saved(saved, config, workspace, sight)
        log.info(
            "attachment_saved",
            channel=turn.channel,
            kind=read.detected.kind.value,
            mime_type=read.detected.mime_type,
            size=size,
        )
        return (saved, read), read.note


def _record(turn: TurnIdentity, saved: Saved, read: Read, *, created_at: float) -> AttachmentRecord:
    envelope = turn.envelope
    return AttachmentRecord(
        id=saved.id,
        session_key=turn.session_key,
        turn_id=turn.turn_id,
        channel=turn.channel,
        conversation_id=envelope.conversation_id,
        user_id=envelope.sender.id,
        name=saved.name,
        kind=read.detected.kind,
        mime_type=read.detected.mime_type,
        size=saved.size,
        path=str(saved.path),
        workspace_path=None if read.workspace_path is None else str(read.workspace_path),
        created_at=created_at,
    )


def _name(attachment: Attachment, index: int) -> str:
    """The attachment's name as the model's line shows it: on one line, without brackets
    (a name cannot end its line early) or any character that could make it read as another
    (a bidi override, a zero-width space: :func:`bot.visible_text.is_invisible`), at most
    120 characters; ``<kind>-<n>`` for a file the platform gave no name (a Telegram
    photo)."""
    # each invisible character as a NUL, so a run of them and of brackets is one space
    visible = "".join("\x00" if c != " " and is_invisible(c) else c for c in attachment.name)
    name = _UNSHOWN.sub(" ", visible).strip()[:120].strip()
    return name or f"{attachment.kind or 'file'}-{index + 1}"


def _advice(error: AttachmentError) -> str:
    """What the model can do about a file that was not downloaded, by why."""
    if isinstance(error, AttachmentTooLarge):
        return lines.SMALLER
    if isinstance(error, AttachmentRefused):
        return lines.ELSEWHERE
    return lines.RESEND


def _shown_images(notes: list[Note]) -> tuple[tuple[ImagePart, ...], list[Note]]:
    """The images shown with the message (at most MAX_IMAGES, MAX_IMAGE_BYTES together, in
    the order sent), and the notes with those left out saying so."""
    shown: list[ImagePart] = []
    total = 0
    kept: list[Note] = []
    for note in notes:
        image = note.image
        if image is None:
            kept.append(note)
        elif len(shown) < MAX_IMAGES and total + len(image.data) <= MAX_IMAGE_BYTES:
            shown.append(image)
            total += len(image.data)
            kept.append(note)
        else:
            kept.append(Note(text=note.held or note.text))
    return tuple(shown), kept
