"""A long answer sent as a file: ``[channels.<kind>.<alias>.delivery] long_answer = "file"``.

An answer (a send with a reply key: a turn's reply or its notice) that the platform would
split into more than ``long_answer_max_messages`` messages goes as one Markdown file,
:data:`ANSWER_NAME`, through the adapter's :class:`~bot.channel.FileSending`, with the same
key (so a platform's :class:`~bot.channel.DeliveryCheck` still finds it after a restart) and
a caption made of the answer's first lines (:func:`caption_of`). Nothing else changes: a
short answer, a send without a key (``send_message``, notices of the approval desk), a
channel whose adapter cannot post files or count its messages, an answer over the upload
limit and an answer only its user sees (:class:`AnswersPrivately`) are sent as messages.
When the platform refuses the file, the answer is sent as messages after all: it is never
lost to the choice.

The file is written to a private temporary directory and removed once sent.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from bot.channel import FileSending, SentMessage
from bot.envelope import DeliveryTarget
from channels.render.chunking import fence_opening

ANSWER_NAME = "answer.md"
CAPTION_LINES = 3
CAPTION_CHARS = 280
ELLIPSIS = "…"


@runtime_checkable
class CountsMessages(Protocol):
    """An adapter's outbound module that can tell how many messages a text takes."""

    def message_count(self, text: str) -> int:
        """How many messages ``send`` posts for ``text``."""
        ...


@runtime_checkable
class AnswersPrivately(Protocol):
    """An outbound module some of whose targets see answers alone (a Slack slash command's,
    answered only to the user who typed it): a file would be posted for everyone there, so
    their long answers stay messages."""

    def answers_privately(self, target: DeliveryTarget) -> bool:
        """Whether answers to ``target`` are shown to one user only."""
        ...


def caption_of(text: str) -> str:
    """The answer's first lines, as the file's caption: at most :data:`CAPTION_LINES` lines
    of its first paragraph and :data:`CAPTION_CHARS` characters (cut at a word, with
    :data:`ELLIPSIS`), stopping before a code block; then where the rest is."""
    lines: list[str] = []
    budget = CAPTION_CHARS
    cut = False
    for line in text.strip().splitlines():
        if not line.strip() or fence_opening(line) is not None or len(lines) == CAPTION_LINES:
            cut = True
            break
        if len(line) > budget:
            head = line[:budget].rsplit(" ", 1)[0] if " " in line[:budget] else line[:budget]
            lines.append(head.rstrip() + ELLIPSIS)
            cut = False  # the ellipsis says it already
            break
        lines.append(line)
        budget -= len(line) + 1
    else:
        cut = False
    intro = "\n".join(lines)
    if cut and intro:
        intro += " " + ELLIPSIS
    note = f"(The whole answer is in {ANSWER_NAME}.)"
    return f"{intro}\n\n{note}" if intro else note


def _write(directory: str, text: str) -> Path:
    path = Path(directory) / ANSWER_NAME
    path.write_text(text, encoding="utf-8")
    return path


async def send_as_file(
    channel: FileSending, target: DeliveryTarget, text: str, *, key: str
) -> Sequence[SentMessage]:
    """Post ``text`` as :data:`ANSWER_NAME` with :func:`caption_of` it, named ``key``."""
    with tempfile.TemporaryDirectory(prefix="hatchway-answer-") as directory:
        path = await asyncio.to_thread(_write, directory, text)
        return await channel.send_file(
            target, path, name=ANSWER_NAME, caption=caption_of(text), key=key
        )
