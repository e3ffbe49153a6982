"""Markdown → Discord message markdown, and splitting under Discord's 2,000-character limit.

Discord renders most of CommonMark (emphasis, code spans, fenced blocks, quotes, lists,
``#``–``###`` headings, masked links), so the conversion is small: deeper headings become
bold lines, thematic breaks become a line of box-drawing characters, and images become their
link. Nothing inside a fenced code block is touched. Conversion never lengthens a line, and
splitting happens after it, so every chunk is within the limit and no code fence is broken.
"""

from __future__ import annotations

import re

from bot.chunking import split_message

MESSAGE_LIMIT = 2000

_DEEP_HEADING = re.compile(r"^ {0,3}#{4,6}\s+(.+?)\s*#*\s*$")
_THEMATIC_BREAK = re.compile(r"^ {0,3}([-*_])(?:\s*\1){2,}\s*$")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def _convert_line(line: str) -> str:
    if m := _DEEP_HEADING.match(line):
        return f"**{m[1]}**"
    if _THEMATIC_BREAK.match(line):
        return "───"
    return _IMAGE.sub(lambda m: f"{m[1]} {m[2]}" if m[1] else m[2], line)


def to_discord(text: str) -> str:
    """Convert markdown-ish text to what Discord renders, leaving code blocks alone."""
    out: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            out.append(line)
            continue
        out.append(line if in_fence else _convert_line(line))
    return "\n".join(out)


def render_chunks(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """Converted text split into message-sized chunks (never an empty list; never a chunk
    over ``limit``; a code fence cut by a split is closed and reopened)."""
    converted = to_discord(text)
    if not converted.strip():
        return ["\u200b"]  # Discord refuses empty messages
    return [chunk for chunk in split_message(converted, limit) if chunk.strip()] or ["\u200b"]


def render_single(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """Text for one message (an edit): the first chunk, marked as cut when there is more."""
    chunks = render_chunks(text, limit)
    if len(chunks) == 1:
        return chunks[0]
    return render_chunks(text, limit - 2)[0] + "\n…"
