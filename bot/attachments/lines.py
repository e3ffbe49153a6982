"""The lines the model reads about each attachment, in the user message's content.

Every attachment gets one line in square brackets, whatever became of it, so nothing a user
sent passes unmentioned: what it is (by content), its attachment id (``view_attachment``
takes it), its size, where it is saved in the workspace, and, when it was not read, why and
what the model can do about it. A line names its file once: a reason that names it too (a
platform's sentence, "report.pdf is larger than …") says "it" instead (:func:`reason`).
A text file's or a PDF's text follows its line, marked as data from the file
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
_UNSHOWN = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")
_BRACKETS = str.maketrans("[]", "()")

#: What the model can do about a file it could not read, by why.
RESEND = "ask the user to send it again"
SMALLER = "ask the user for a smaller file, or to paste the part that matters"
ELSEWHERE = "ask the user to upload the file itself here, or to paste the part that matters"
PASTE = "ask the user to paste the part that matters"
IMAGE_AGAIN = "ask the user to send it again as a PNG or JPEG"
SMALLER_IMAGE = "ask the user for a smaller image (fewer pixels), or a JPEG photo"
SEPARATELY = "ask the user to send it again in a message of its own"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageSight:
    """What the turn's agent can do with an image, so that a line never promises more:
    ``shown``, its model is shown the images a message brings (``[attachments]`` is on and
    a provider of its chain is sent images, :func:`bot.agent.bundles.sees_images`);
    ``viewer``, it is offered ``view_attachment``, which shows a saved image later (not when
    its ``allowed_tools``/``excluded_tools`` or the channel's ``excluded_tools`` leave it
    out). The default, both, is an agent that can do everything."""

    shown: bool = True
    viewer: bool = True


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


def reason(sentence: str, *names: str) -> str:
    """``sentence`` (why a file was not read, maybe a platform's, maybe naming the file) as
    the part of a line after ``was not read:``: the file's ``names`` (as sent, as shown)
    become "it", brackets round ones (the line's own cannot be closed), line breaks spaces,
    no closing full stop. A name that is a plain lowercase word ("notes") is left alone,
    since the sentence may use the word itself ("this file")."""
    text = " ".join(_UNSHOWN.sub(" ", sentence).split())
    for name in sorted({n.strip() for n in names if _replaceable(n.strip())}, key=len)[::-1]:
        text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", "it", text)
    return text.translate(_BRACKETS).rstrip(" .") or "it could not be read"


def _replaceable(name: str) -> bool:
    return bool(name) and not (name.isalpha() and name.islower())


def unread(name: str, size: int | None, why: str, advice: str) -> Note:
    """A file that was not downloaded or not kept: ``[attachment report.pdf (31 MB) was not
    read: files over 20 MB are not accepted; ask the user for a smaller file, …]``. ``why``
    names no file (see :func:`reason`); ``advice`` is what the model can do."""
    shown = f"{name} ({human_size(size)})" if size is not None else name
    return Note(text=f"[attachment {shown} was not read: {why}; {advice}]")


def image_shown(facts: Facts, image: ImagePart, *, viewer: bool = True) -> Note:
    """An image shown with the message; its ``held`` line, for when the message brought more
    images than one takes, names ``view_attachment`` only to an agent offered it
    (``viewer``)."""
    head = facts.head("image")
    later = "view_attachment shows it" if viewer else SEPARATELY
    held = (
        f"[{head} was not shown with this message, which brought more images than one "
        f"message takes; {later}; {facts.where()}]"
    )
    return Note(text=f"[{head} is attached; {facts.where()}]", image=image, held=held)


def image_unseen(facts: Facts) -> Note:
    """An image the agent cannot be shown (no provider of its chain is sent images): said
    so, with where the file tools find it, and no image."""
    return Note(
        text=f"[{facts.head('image')} is not shown: this assistant cannot see images; "
        f"{facts.where()}]"
    )


def not_shown(facts: Facts, noun: str, why: str, advice: str) -> Note:
    """A saved file whose content could not be read (a corrupt image or PDF): why, where it
    is, and what the model can do."""
    return Note(
        text=f"[{facts.head(noun)} could not be read: {reason(why, facts.name)}; "
        f"{facts.where()}; {advice}]"
    )


def refused(facts: Facts, noun: str, why: str, advice: str) -> Note:
    """A saved file not read on purpose (an image with too many pixels to decode safely):
    why, where it is, and what the model can do."""
    return Note(
        text=f"[{facts.head(noun)} is not shown: {reason(why, facts.name)}; "
        f"{facts.where()}; {advice}]"
    )


def binary(facts: Facts) -> Note:
    return Note(text=f"[{facts.head('file')}: its content is not shown; {facts.where()}]")


def text_file(
    facts: Facts, beginning: str, *, chars: int, lines: int, inline_max_chars: int
) -> Note:
    """A text file's line, then its text up to ``inline_max_chars`` characters:
    ``beginning`` is the file's first characters (at least that many, when it has them),
    ``chars`` and ``lines`` how many it has in all."""
    head = facts.head("file", f"{lines:,} line" if lines == 1 else f"{lines:,} lines")
    if not chars:
        return Note(text=f"[{head}: it is empty; {facts.where()}]")
    return Note(text=_with_text(head, facts, beginning, chars, inline_max_chars, "the whole file"))


def pdf_text(
    facts: Facts, text: str, *, pages: int, read: int, complete: bool, inline_max_chars: int
) -> Note:
    """A PDF's line, then its text up to ``inline_max_chars`` characters. ``complete`` is
    false when pages or characters were left out of ``text`` itself."""
    head = facts.head("PDF", f"{pages:,} pages")
    if not has_text(text):
        return Note(text=f"[{head}: it has no text to extract (scanned pages?); {facts.where()}]")
    whole = f"the text of pages 1–{read}" if complete else f"the text of pages 1–{read} (cut)"
    return Note(text=_with_text(head, facts, text, len(text), inline_max_chars, whole))


def has_text(pdf_text: str) -> bool:
    """Whether a PDF's extracted text holds anything besides its ``[page N]`` lines."""
    return bool(_PAGE_MARK.sub("", pdf_text).strip())


def _with_text(head: str, facts: Facts, text: str, chars: int, limit: int, whole: str) -> str:
    """The line and ``text`` (the first characters of ``chars``) up to ``limit`` of them."""
    if limit <= 0:
        return f"[{head}: its content is not shown; {facts.where()}]"
    if chars <= limit:
        return f"[{head}; {facts.where()}; its content follows]\n{untrusted(facts.name, text)}"
    if facts.workspace:
        rest = f"{whole} is in the workspace as {facts.workspace} (read the rest with file_read)"
    else:
        rest = "the rest could not be saved in the workspace"
    shown = f"its first {limit:,} of {chars:,} characters follow; {rest}"
    return f"[{head}; {shown}]\n{untrusted(facts.name, text[:limit])}"
