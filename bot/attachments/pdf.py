"""A PDF's text for the model, extracted off the event loop in a child process.

:mod:`bot.attachments.pdf_child` does the reading (pypdf) with limits of its own; this side
starts it with an empty environment, waits at most the configured timeout, kills it when it
overruns or when the turn is cancelled, and turns its answer into :class:`PdfText` or an
:class:`~bot.errors.AttachmentError` with a sentence the user may read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from bot.errors import AttachmentError
from bot.limited_child import ChildWords, ask_child

CHILD = Path(__file__).with_name("pdf_child.py")

_WORDS = ChildWords(
    error=AttachmentError,
    unstartable="the PDF reader could not be started",
    took_too_long="reading its text took longer than {timeout_s} s, so it was stopped",
    overran="reading its text needed more memory or time than is allowed",
    log_event="pdf_reader_failed",
)
#: The most text taken from one PDF (what the workspace copy holds; the model is shown
#: ``attachments.inline_max_chars`` of it).
MAX_CHARS = 2_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class PdfText:
    """``text`` of the first ``read`` of ``pages`` pages; ``truncated`` when pages or
    characters were left out."""

    text: str
    pages: int
    read: int
    truncated: bool


async def read_pdf(
    path: Path, *, max_pages: int, timeout_s: float, max_chars: int = MAX_CHARS
) -> PdfText:
    """The text of the PDF at ``path`` (see the module doc). Raises AttachmentError."""
    args = [str(path), str(max_pages), str(max_chars), str(math.ceil(timeout_s) + 1)]
    result = (await ask_child(CHILD, args, timeout_s=timeout_s, words=_WORDS)).answer
    if "error" in result:
        raise AttachmentError(str(result["error"]))
    return PdfText(
        text=str(result["text"]),
        pages=int(result["pages"]),
        read=int(result["read"]),
        truncated=bool(result["truncated"]),
    )
