"""Markdown → Discord message markdown, and splitting under Discord's 2,000-character limit.

Discord renders most of CommonMark (emphasis, code spans, fenced blocks, quotes, lists,
``#``–``###`` headings, masked links), so the conversion is small and everything else is
passed through as written: deeper headings become bold lines, thematic breaks become a line
of box-drawing characters, images become their link, a tilde fence becomes a backtick one
(Discord knows only those), and a code span written with three backticks (which Discord would
show as a block) gets one. Parsing is :mod:`channels.render.markdown`'s. Splitting happens after
conversion, so every chunk is within the limit and no code fence is broken.

Discord pairs ```` ``` ```` anywhere, even mid-line, so a stray run would start or end a code
block. Outside code it is escaped with backslashes, which Discord hides; inside code a
backslash would show, so there the run is broken with zero-width spaces (invisible, but
copied along with the code). A chunk that goes on with a line cut by the splitter has its
leading heading, quote or list marker escaped the same way, so it reads as the text it was.

Literal text (approval cards and full views, which show what will run): outside code every
markup and mention character is escaped with a backslash (:func:`escape_text`); inside a code
block (:func:`code_block`) only a run of three backticks needs breaking.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from channels.render import markdown as md
from channels.render.chunking import Chunk, split_chunks

MESSAGE_LIMIT = 2000

_TICK_RUN = re.compile(r"`{3,}")
# where a backslash keeps a line from starting a heading, subtext, quote or list item (the
# ``.`` of ``1. ``), or from reading as a tilde fence to the splitter
_LINE_MARKER = re.compile(r"\s*(?:\d+(?=\.\s)|(?=(?:#{1,3}|-#|>{1,3}|[-*])\s|~~~))")


def _escape_ticks(text: str) -> str:
    """Text outside code with every run of three or more backticks escaped."""
    return _TICK_RUN.sub(lambda run: "\\`" * len(run.group()), text)


def _code_span(code: md.Code) -> str:
    """The span as written, unless it uses three backticks or more: then the shortest run
    Discord reads as inline code (one or two backticks) when the code allows it, padded with
    a space where the code starts or ends with a backtick (which would merge with the run)."""
    if code.source.startswith("```"):
        for ticks in ("`", "``"):
            if ticks not in code.text:
                pad = " " if code.text.startswith("`") or code.text.endswith("`") else ""
                return f"{ticks}{pad}{code.text}{pad}{ticks}"
    return md.defuse_fences(code.source)


def _inline(nodes: Iterable[md.Inline]) -> str:
    out: list[str] = []
    for node in nodes:
        match node:
            case md.Text(text=text) | md.Link(source=text):
                out.append(_escape_ticks(text))
            case md.Code() as code:
                out.append(_code_span(code))
            case md.Image(alt=alt, url=url):
                out.append(_escape_ticks(f"{alt} {url}" if alt else url))
            case md.Styled(marker=marker, children=children):
                out.append(f"{marker}{_inline(children)}{marker}")
    return "".join(out)


def to_discord(text: str) -> str:
    """Convert markdown-ish text to what Discord renders, leaving code blocks alone."""
    out: list[str] = []
    for block in md.parse_blocks(text):
        match block:
            case md.CodeBlock(language=language, code_lines=lines, closer=closer):
                out.append(f"```{language}")
                out.extend(md.defuse_fences(line) for line in lines)
                if closer is not None:
                    out.append("```")
            case md.Heading(level=level, text=title) if level > 3:
                out.append(f"**{_inline(md.parse_inline(title))}**")
            case md.Rule():
                out.append("───")
            case _:
                out.append(_inline(md.parse_inline(block.source)))
    return "\n".join(out)


def _as_sent(chunk: Chunk) -> str:
    """The chunk's text; when it goes on with a cut line, that line's marker escaped."""
    marker = _LINE_MARKER.match(chunk.text) if chunk.continues_line else None
    if marker is None:
        return chunk.text
    return f"{chunk.text[: marker.end()]}\\{chunk.text[marker.end() :]}"


def render_chunks(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """Converted text split into message-sized chunks (never an empty list; never a chunk
    over ``limit``; a code fence cut by a split is closed and reopened)."""
    converted = to_discord(text)
    if not converted.strip():
        return ["\u200b"]  # Discord refuses empty messages
    chunks = split_chunks(converted, limit - 1)  # room for the escape of a cut line
    return [_as_sent(chunk) for chunk in chunks if chunk.text.strip()] or ["\u200b"]


def render_single(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """Text for one message (an edit): the first chunk, marked as cut when there is more."""
    chunks = render_chunks(text, limit)
    if len(chunks) == 1:
        return chunks[0]
    return render_chunks(text, limit - 2)[0] + "\n…"


# -- literal text: values shown as written (approval cards, full views) --------------------

# Everything Discord reads as markup or a mention wherever it stands in a line; a backslash
# before any punctuation shows that character as written, and Discord hides the backslash.
_MARKUP_CHARS = re.compile(r"[\\*_~`|\[\]<>@#-]")
_ORDERED_ITEM = re.compile(r"^(\s*\d+)\.(?=\s)", re.MULTILINE)


def escape_text(text: str) -> str:
    """``text`` to show as written outside code: no emphasis, spoiler, heading, subtext,
    quote, list, masked link, mention, channel, emoji or timestamp can start in it."""
    return _ORDERED_ITEM.sub(r"\1\\.", _MARKUP_CHARS.sub(r"\\\g<0>", text))


def code_text(text: str) -> str:
    """``text`` for inside a code block, where Discord shows everything as written except a
    run of three backticks: those are broken by zero-width spaces
    (:func:`~channels.render.markdown.defuse_fences`)."""
    return md.defuse_fences(text)


def fenced(code: str) -> str:
    """``code`` (already :func:`code_text`) as a code block. The ``text`` language tag keeps
    a first line from being read as a language."""
    return f"```text\n{code}\n```"


def code_block(text: str) -> str:
    """``text`` as a code block that shows it as written."""
    return fenced(code_text(text))
