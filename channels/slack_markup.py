"""Slack markup: the bot's markdown rendered as Slack ``mrkdwn``, in sized chunks.

Slack's ``mrkdwn`` is not markdown: bold is ``*x*``, italic ``_x_``, strike ``~x~``, links
``<url|label>``, there are no headings or lists, and ``& < >`` must be escaped everywhere
(inside code too, Slack decodes the entities there as well). Code fences are kept, without
the language tag Slack would otherwise show as the first line of the block. Parsing is
:mod:`channels.markdown`'s; this module only renders its tokens.

:func:`render_chunks` converts first and then splits the converted text (never inside a code
fence, see :mod:`bot.chunking`), so every chunk is at most ``limit`` characters as sent.

``mrkdwn`` has no escape character, so two things are broken with a zero-width space, which
is invisible but copied along with the text: a stray ```` ``` ```` (in prose and in code), and
a chunk that goes on with a cut line but would start as a quote (or, by the fence rule of
:mod:`bot.chunking`, as a tilde fence).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from bot.chunking import Chunk, split_chunks
from channels import markdown as md

SLACK_CHUNK_LIMIT = 3000

_SAFE_SCHEMES = ("http://", "https://", "mailto:")
_MARKS = {md.Style.STRONG: "*", md.Style.EMPHASIS: "_", md.Style.STRIKE: "~"}


def escape(text: str) -> str:
    """Escape the three characters Slack treats as control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _text(text: str) -> str:
    """Escaped, and a stray ```` ``` ```` defused: Slack would pair it with the next fence of
    the message (``mrkdwn`` has no escape character)."""
    return md.defuse_fences(escape(text))


def _link(url: str, label: str, written: str) -> str:
    if not url.lower().startswith(_SAFE_SCHEMES) or "|" in url:
        return _text(written)
    return f"<{escape(url)}|{_text(label.replace('|', '/'))}>"


def _inline(nodes: Iterable[md.Inline], active: frozenset[md.Style] = frozenset()) -> str:
    """Render inline nodes; a style already around them is not repeated (Slack cannot nest
    bold in bold)."""
    out: list[str] = []
    for node in nodes:
        match node:
            case md.Text(text=text):
                out.append(_text(text))
            case md.Code(text=text):
                out.append(f"`{_text(text)}`")
            case md.Link(label=label, url=url, source=written):
                # Slack shows link labels as typed: no markup inside them
                out.append(_link(url, md.plain_text(label), written))
            case md.Image(alt=alt, url=url, source=written):
                out.append(_link(url, alt or url, written))
            case md.Styled(style=style, children=children) if style in active:
                out.append(_inline(children, active))
            case md.Styled(style=style, children=children):
                mark = _MARKS[style]
                out.append(f"{mark}{_inline(children, active | {style})}{mark}")
    return "".join(out)


def _line(text: str) -> str:
    return _inline(md.parse_inline(text))


def to_mrkdwn(text: str) -> str:
    """Convert markdown-ish text to Slack ``mrkdwn`` (no size limit applied)."""
    out: list[str] = []
    for block in md.parse_blocks(text):
        match block:
            case md.CodeBlock(code_lines=lines):
                out.extend(("```", *(_text(line) for line in lines), "```"))
            case md.Heading(text=title):
                out.append(f"*{_inline(md.parse_inline(title), frozenset({md.Style.STRONG}))}*")
            case md.ListItem(indent=indent, text=item):
                out.append(f"{indent}• {_line(item)}")
            case md.Quote(text=quoted):
                out.append(f"> {_line(quoted)}")
            case md.Rule(source=line):
                out.append(_text(line))
            case md.Plain(source=line):
                out.append(_line(line))
    return "\n".join(out)


# Slack quotes a line that starts with ``>`` (escaped, as every ``>`` in text is); one that
# starts with ``~~~`` would read as a fence by the splitter's rule
_LINE_MARKER = re.compile(r"\s*(?=&gt;|~~~)")


def _as_sent(chunk: Chunk) -> str:
    """The chunk's text; when it goes on with a cut line, a zero-width space keeps that line
    from starting a quote or a fence."""
    marker = _LINE_MARKER.match(chunk.text) if chunk.continues_line else None
    if marker is None:
        return chunk.text
    return f"{chunk.text[: marker.end()]}\u200b{chunk.text[marker.end() :]}"


def render_chunks(text: str, limit: int = SLACK_CHUNK_LIMIT) -> list[str]:
    """The text as ``mrkdwn`` chunks of at most ``limit`` characters, code fences intact.

    Empty or whitespace-only text gives no chunks: Slack refuses an empty message.
    """
    if not text.strip():
        return []
    chunks = split_chunks(to_mrkdwn(text), limit - 1)  # room for the zero-width space
    return [_as_sent(chunk) for chunk in chunks if chunk.text.strip()]
