"""The lines the model reads about each attachment, in the user message's content.

Every attachment gets one line in square brackets, whatever became of it, so nothing a user
sent passes unmentioned: what it is (by content), its attachment id (``view_attachment``
takes it), its size, where it is saved in the workspace, and why it was not read when it was
not. A text file's or a PDF's text follows its line, marked as data from the file
(:func:`bot.untrusted.untrusted`). History keeps these lines; an image's bytes go to the
model only with the message they came with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.attachments.naming import human_size
from bot.providers.base import ImagePart
from bot.untrusted import untrusted

_PAGE_MARK = re.compile(r"^\[page \d+\]$", re.MULTILINE)


@dataclass(frozen=True, slots=True, kw_only=True)
class Note:
    """What the model is told of one attachment: ``text`` joins the message's content,
    ``image`` (when set) is shown with it."""

    text: str
    image: ImagePart | None = None
    held: str = ""
    """The text instead of ``text`` when ``image`` is not sent with this message after all
    (more images came with it than one message takes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    """What every line of a saved file says: its ``name`` as sent, its ``id``, its
    ``size`` in bytes, what its content is (``what``: ``PNG image, 2400×1600``, ``text``),
    where the workspace has it (``workspace``: a path relative to the workspace folder the
    file tools see; empty when it could not be saved there) and, when the name claims
    another kind, the ``contradiction``."""

    name: str
    id: str
    size: int
    what: str
    workspace: str = ""
    contradiction: str = ""

    def head(self, noun: str, *more: str) -> str:
        """``file report.csv (attachment 3f…; text, 40 lines, 2 KB, named .png, but …)``,
        with ``more`` details after what it is."""
        details = [self.what, *more, human_size(self.size)]
        if self.contradiction:
            details.append(self.contradiction)
        return f"{noun} {self.name} (attachment {self.id}; {', '.join(details)})"

    def where(self) -> str:
        if not self.workspace:
            return "it could not be saved in the workspace"
        return f"saved in the workspace as {self.workspace}"


def content(text: str, notes: list[Note]) -> str:
    """The user message's content: what the user wrote, then each attachment's lines."""
    parts = [text] if text else []
    parts += [note.text for note in notes]
    return "\n\n".join(parts)


def unread(name: str, size: int | None, reason: str) -> Note:
    """A file that was not downloaded or not kept: ``[attachment report.pdf (31 MB) was not
    read: files over 20 MB are not accepted]``."""
    shown = f"{name} ({human_size(size)})" if size is not None else name
    return Note(text=f"[attachment {shown} was not read: {reason}]")


def image_shown(facts: Facts, image: ImagePart) -> Note:
    head = facts.head("image")
    held = (
        f"[{head} was not shown with this message, which brought more images than one "
        f"message takes; view_attachment shows it; {facts.where()}]"
    )
    return Note(text=f"[{head} is attached; {facts.where()}]", image=image, held=held)


def not_shown(facts: Facts, noun: str, reason: str) -> Note:
    """A saved file whose content could not be read (a corrupt image or PDF)."""
    return Note(text=f"[{facts.head(noun)} could not be read: {reason}; {facts.where()}]")


def binary(facts: Facts) -> Note:
    return Note(text=f"[{facts.head('file')}: its content is not shown; {facts.where()}]")


def text_file(facts: Facts, text: str, *, inline_max_chars: int) -> Note:
    """A text file's line, then its text up to ``inline_max_chars`` characters."""
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    head = facts.head("file", f"{lines:,} line" if lines == 1 else f"{lines:,} lines")
    if not text:
        return Note(text=f"[{head}: it is empty; {facts.where()}]")
    return Note(text=_with_text(head, facts, text, inline_max_chars, "the whole file"))


def pdf_text(
    facts: Facts, text: str, *, pages: int, read: int, complete: bool, inline_max_chars: int
) -> Note:
    """A PDF's line, then its text up to ``inline_max_chars`` characters. ``complete`` is
    false when pages or characters were left out of ``text`` itself."""
    head = facts.head("PDF", f"{pages:,} pages")
    if not has_text(text):
        return Note(text=f"[{head}: it has no text to extract (scanned pages?); {facts.where()}]")
    whole = f"the text of pages 1–{read}" if complete else f"the text of pages 1–{read} (cut)"
    return Note(text=_with_text(head, facts, text, inline_max_chars, whole))


def has_text(pdf_text: str) -> bool:
    """Whether a PDF's extracted text holds anything besides its ``[page N]`` lines."""
    return bool(_PAGE_MARK.sub("", pdf_text).strip())


def _with_text(head: str, facts: Facts, text: str, limit: int, whole: str) -> str:
    if limit <= 0:
        return f"[{head}: its content is not shown; {facts.where()}]"
    if len(text) <= limit:
        return f"[{head}; {facts.where()}; its content follows]\n{untrusted(facts.name, text)}"
    if facts.workspace:
        rest = f"{whole} is in the workspace as {facts.workspace} (read the rest with file_read)"
    else:
        rest = "the rest could not be saved in the workspace"
    shown = f"its first {limit:,} of {len(text):,} characters follow; {rest}"
    return f"[{head}; {shown}]\n{untrusted(facts.name, text[:limit])}"
