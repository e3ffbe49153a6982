"""A PDF's text for the model, extracted off the event loop in a child process.

:mod:`bot.attachments.pdf_child` does the reading (pypdf) with limits of its own; this side
starts it with an empty environment, waits at most the configured timeout, kills it when it
overruns or when the turn is cancelled, and turns its answer into :class:`PdfText` or an
:class:`~bot.errors.AttachmentError` with a sentence the user may read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import structlog

from bot.errors import AttachmentError

log = structlog.get_logger(__name__)

CHILD = Path(__file__).with_name("pdf_child.py")
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
    try:
        process = await _start(path, max_pages, max_chars, timeout_s)
    except OSError:
        raise AttachmentError("the PDF reader could not be started") from None
    try:
        async with asyncio.timeout(timeout_s):
            out, _ = await process.communicate()
    except TimeoutError:
        raise AttachmentError(
            f"reading its text took longer than {timeout_s:g} s, so it was stopped"
        ) from None
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    return _answer(out, process.returncode)


async def _start(
    path: Path, max_pages: int, max_chars: int, timeout_s: float
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        str(CHILD),
        str(path),
        str(max_pages),
        str(max_chars),
        str(math.ceil(timeout_s) + 1),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={"PATH": os.defpath, "LC_ALL": "C.UTF-8"},
    )


def _answer(out: bytes, returncode: int | None) -> PdfText:
    try:
        result = json.loads(out)
    except ValueError:
        result = None
    if not isinstance(result, dict):
        # killed by its CPU or memory limit before it could answer
        log.warning("pdf_reader_failed", returncode=returncode)
        raise AttachmentError("reading its text needed more memory or time than is allowed")
    if "error" in result:
        raise AttachmentError(str(result["error"]))
    return PdfText(
        text=str(result["text"]),
        pages=int(result["pages"]),
        read=int(result["read"]),
        truncated=bool(result["truncated"]),
    )
