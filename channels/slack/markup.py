"""Slack markup: the bot's markdown rendered as Slack ``mrkdwn``, in sized chunks.

Slack's ``mrkdwn`` is not markdown: bold is ``*x*``, italic ``_x_``, strike ``~x~``, links
``<url|label>``, there are no headings or lists, and ``& < >`` must be escaped everywhere
(inside code too, Slack decodes the entities there as well). Code fences are kept, without
the language tag Slack would otherwise show as the first line of the block. Parsing is
:mod:`channels.render.markdown`'s; this module only renders its tokens.

:func:`render_chunks` converts first and then splits the converted text (never inside a code
fence, see :mod:`channels.render.chunking`), so every chunk is at most ``limit`` characters as sent.

``mrkdwn`` has no escape character, so two things are broken with a zero-width space, which
is invisible but copied along with the text: a stray ```` ``` ```` (in prose and in code), and
a chunk that goes on with a cut line but would start as a quote (or, by the fence rule of
:mod:`channels.render.chunking`, as a tilde fence).

Text that must be shown exactly as it is (what an approval card or the full view says will
run, who asked) is never parsed as markdown: :func:`code_blocks` and :func:`code_span` put
it in code, where Slack applies no ``* _ ~`` styling and no ``:emoji:`` codes, with
``& < >`` escaped (no mention, ``<!channel>`` or link can form) and runs of three backticks
broken, so nothing in the text can end the code early. :func:`code_blocks` splits long text
into as many blocks as needed and never drops a character.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from channels.render import markdown as md
from channels.render.chunking import Chunk, split_chunks

SLACK_CHUNK_LIMIT = 3000
#: The most characters Slack takes in one ``mrkdwn`` text object (a section's text).
SECTION_LIMIT = 3000

_SAFE_SCHEMES = ("http://", "https://", "mailto:")
_MARKS = {md.Style.STRONG: "*", md.Style.EMPHASIS: "_", md.Style.STRIKE: "~"}


def escape(text: str) -> str:
    """Escape the three characters Slack treats as control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


#: What escaping and fence-breaking may make of one character, at most (see :func:`literal`).
_LITERAL_COST = {"&": 5, "<": 4, ">": 4, "`": 2}
_FENCE = "```"


def literal(text: str) -> str:
    """``text`` for the inside of code: ``& < >`` escaped and every run of three or more
    backticks broken (Slack would end the code there)."""
    return md.defuse_fences(escape(text))


def _cost(text: str) -> int:
    """An upper bound of ``len(literal(text))``."""
    return sum(_LITERAL_COST.get(char, 1) for char in text)


def _cut_line(line: str, budget: int) -> tuple[str, str]:
    """The longest head of ``line`` whose literal fits ``budget``, and the rest."""
    used = 0
    for index, char in enumerate(line):
        used += _LITERAL_COST.get(char, 1)
        if used > budget:
            return line[:index], line[index:]
    return line, ""


def split_literal(text: str, budget: int) -> list[str]:
    """``text`` in pieces whose :func:`literal` is at most ``budget`` characters each.

    Pieces end at line breaks where they can (the break itself is not repeated); a line
    longer than ``budget`` is cut between characters. Joining the pieces with the line
    breaks they were cut at gives ``text`` back: no character is dropped.
    """
    if budget < max(_LITERAL_COST.values()):
        raise ValueError("budget too small for one character")
    pieces: list[str] = []
    lines: list[str] = []
    used = -1  # the line break before the first line of a piece is not sent
    for line in text.split("\n"):
        cost = _cost(line)
        if used + 1 + cost <= budget:
            lines.append(line)
            used += 1 + cost
            continue
        if lines:
            pieces.append("\n".join(lines))
        while cost > budget:
            head, line = _cut_line(line, budget)
            pieces.append(head)
            cost -= _cost(head)  # the cost is a sum per character: no second pass over the rest
        lines, used = [line], cost
    pieces.append("\n".join(lines))
    return pieces


def code_blocks(text: str, limit: int = SECTION_LIMIT) -> list[str]:
    """``text`` as literal code blocks of at most ``limit`` characters each, in order."""
    budget = limit - 2 * (len(_FENCE) + 1)
    return [f"{_FENCE}\n{literal(piece)}\n{_FENCE}" for piece in split_literal(text, budget)]


def code_span(text: str) -> str:
    """``text`` shown literally inline (a name, a tool). Inline code cannot hold a backtick
    or a line break: such text gets a code block of its own line instead."""
    if not text.strip():
        return escape(text)
    if "`" in text or "\n" in text:
        return f"\n{_FENCE}\n{literal(text)}\n{_FENCE}\n"
    return f"`{escape(text)}`"


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
