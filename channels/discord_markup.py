"""Markdown → Discord message markdown, and splitting under Discord's 2,000-character limit.

Discord renders most of CommonMark (emphasis, code spans, fenced blocks, quotes, lists,
``#``–``###`` headings, masked links), so the conversion is small and everything else is
passed through as written: deeper headings become bold lines, thematic breaks become a line
of box-drawing characters, images become their link, and a code span written with three
backticks (which Discord would show as a block) gets one. Parsing is
:mod:`channels.markdown`'s. Inside a code block nothing changes but a stray run of three
backticks, defused because Discord would end the block there. Splitting happens after
conversion, so every chunk is within the limit and no code fence is broken.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.chunking import split_message
from channels import markdown as md

MESSAGE_LIMIT = 2000


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
            case md.Text(text=text):
                out.append(md.defuse_fences(text))
            case md.Code() as code:
                out.append(_code_span(code))
            case md.Link(source=written):
                out.append(written)
            case md.Image(alt=alt, url=url):
                out.append(f"{alt} {url}" if alt else url)
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
