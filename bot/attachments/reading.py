"""A downloaded file read by what its content is, copied to the workspace, and its note.

An image is checked and resized (:mod:`bot.attachments.images`) and shown (to an agent that
cannot see images, only named: :class:`~bot.attachments.lines.ImageSight`); a text file is
decoded and inlined up to ``attachments.inline_max_chars``; a PDF's text is extracted in a
child process (:mod:`bot.attachments.pdf`) and inlined the same way; anything else is only
named. Each gets one file in the conversation's workspace under ``attachments/``, the one
the file tools should read: the image or binary as it came, a text file as UTF-8, a PDF's
extracted text (or the PDF, when it has none). Decoding and copying run on worker threads,
a piece at a time (:mod:`bot.attachments.kinds`): no file is held whole by the daemon.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import structlog

from bot.attachments import lines
from bot.attachments.images import prepare_image
from bot.attachments.kinds import (
    Detected,
    contradiction,
    copy_as_utf8,
    detect_file,
    text_beginning,
)
from bot.attachments.lines import Facts, ImageSight, Note
from bot.attachments.naming import saved_name
from bot.attachments.pdf import read_pdf
from bot.config.attachments import AttachmentsConfig
from bot.errors import AttachmentError, AttachmentTooLarge
from bot.store.attachments import AttachmentKind

log = structlog.get_logger(__name__)

WORKSPACE_DIR = "attachments"
"""The folder of the conversation's workspace that saved attachments go to."""
FOLDER_MODE = 0o700


@dataclass(frozen=True, slots=True, kw_only=True)
class Saved:
    """A downloaded file: its ``id``, its ``name`` as sent, where it is (``path``) and how
    big (``size``)."""

    id: str
    name: str
    path: Path
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Read:
    """What became of a saved file: what it is, its ``note`` for the model, and its copy in
    the workspace (``workspace_path``, None when it could not be made)."""

    detected: Detected
    note: Note
    workspace_path: Path | None


async def read_saved(
    saved: Saved, config: AttachmentsConfig, workspace: Path | None, sight: ImageSight
) -> Read:
    """Read ``saved`` (see the module doc); an image's line says what ``sight`` lets the
    agent do with it. Never raises for what the file holds."""
    detected = await asyncio.to_thread(detect_file, saved.path, name=saved.name)
    base = saved_name(saved.id, saved.name)
    facts = Facts(
        name=saved.name,
        id=saved.id,
        size=saved.size,
        what=detected.label,
        contradiction=contradiction(saved.name, detected),
    )
    if detected.kind is AttachmentKind.IMAGE:
        copy = await _copy(workspace, base, saved.path)
        note = await _image(_placed(facts, workspace, copy), saved.path, sight)
    elif detected.kind is AttachmentKind.TEXT:
        copy = await _place(
            workspace,
            base,
            lambda target: copy_as_utf8(saved.path, detected.encoding, target),
        )
        beginning = await asyncio.to_thread(
            text_beginning, saved.path, detected.encoding, config.inline_max_chars
        )
        note = lines.text_file(
            _placed(facts, workspace, copy),
            beginning,
            chars=detected.chars,
            lines=detected.lines,
            inline_max_chars=config.inline_max_chars,
        )
    elif detected.kind is AttachmentKind.PDF:
        note, copy = await _pdf(saved, facts, config, workspace, base)
    else:
        copy = await _copy(workspace, base, saved.path)
        note = lines.binary(_placed(facts, workspace, copy))
    return Read(detected=detected, note=note, workspace_path=copy)


async def _image(facts: Facts, path: Path, sight: ImageSight) -> Note:
    try:
        prepared = await prepare_image(path, name=facts.name)
    except AttachmentTooLarge as exc:
        log.warning("attachment_refused", kind="image", error=str(exc))
        return lines.refused(facts, "image", str(exc), lines.SMALLER_IMAGE)
    except AttachmentError as exc:
        log.warning("attachment_unreadable", kind="image", error=str(exc))
        return lines.not_shown(facts, "image", str(exc), lines.IMAGE_AGAIN)
    if not sight.shown:
        return lines.image_unseen(replace(facts, what=prepared.describe(shown_to_model=False)))
    shown = replace(facts, what=prepared.describe())
    return lines.image_shown(shown, prepared.part, viewer=sight.viewer)


async def _pdf(
    saved: Saved, facts: Facts, config: AttachmentsConfig, workspace: Path | None, base: str
) -> tuple[Note, Path | None]:
    try:
        extracted = await read_pdf(
            saved.path, max_pages=config.pdf_max_pages, timeout_s=config.pdf_timeout_s
        )
    except AttachmentError as exc:
        log.warning("attachment_unreadable", kind="pdf", error=str(exc))
        copy = await _copy(workspace, base, saved.path)
        placed = _placed(facts, workspace, copy)
        return lines.not_shown(placed, "PDF", str(exc), lines.PASTE), copy
    if not lines.has_text(extracted.text):
        copy = await _copy(workspace, base, saved.path)
    else:
        copy = await _write(workspace, f"{base}.txt", extracted.text)
    note = lines.pdf_text(
        _placed(facts, workspace, copy),
        extracted.text,
        pages=extracted.pages,
        read=extracted.read,
        complete=not extracted.truncated,
        inline_max_chars=config.inline_max_chars,
    )
    return note, copy


def _placed(facts: Facts, workspace: Path | None, copy: Path | None) -> Facts:
    """``facts`` with where the workspace has the file, relative to the workspace folder
    (the path ``file_read`` takes)."""
    if workspace is None or copy is None:
        return facts
    return replace(facts, workspace=copy.relative_to(workspace).as_posix())


async def _copy(workspace: Path | None, name: str, source: Path) -> Path | None:
    return await _place(workspace, name, lambda target: shutil.copyfile(source, target))


async def _write(workspace: Path | None, name: str, text: str) -> Path | None:
    return await _place(workspace, name, lambda target: target.write_text(text, "utf-8"))


async def _place(workspace: Path | None, name: str, make: Callable[[Path], object]) -> Path | None:
    """``<workspace>/attachments/<name>`` made by ``make``; None (logged) when the disk
    refuses, or when the folder is not a plain directory (a symlink a tool left there)."""
    if workspace is None:
        return None
    folder = workspace / WORKSPACE_DIR
    target = folder / name
    try:
        await asyncio.to_thread(_ensure_folder, folder)
        await asyncio.to_thread(make, target)
    except OSError as exc:
        log.warning("attachment_workspace_copy_failed", error=type(exc).__name__)
        return None
    return target


def _ensure_folder(folder: Path) -> None:
    try:
        os.mkdir(folder, FOLDER_MODE)
    except FileExistsError:
        if folder.is_symlink() or not folder.is_dir():
            raise NotADirectoryError(folder) from None
