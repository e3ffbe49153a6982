"""Telegram markup: the bot's markdown rendered as Telegram HTML, in sized chunks.

Telegram's HTML parse mode accepts a small tag set (``b``, ``i``, ``s``, ``code``, ``pre``,
``a``, ``blockquote``) and rejects a whole message whose tags do not nest. The renderer
produces only those tags, from :mod:`channels.render.markdown`'s tokens (which nest by
construction), and escapes ``& < >`` everywhere else. Telegram lets ``b``/``i``/``s`` hold
anything but no entity may sit inside ``code``, and a link may not hold code: code in a link
label is shown as its text. (MarkdownV2 is not used: HTML needs three escapes, MarkdownV2 eighteen.)

:func:`render_chunks` splits the markdown first (never inside a code fence, see
:mod:`channels.render.chunking`) and converts each piece, so every chunk is valid HTML on
its own and at most ``limit`` characters long after conversion.

**Progress lines are literal** without help from here: the core sends a hint or a failure
reason as a markdown code span (:func:`bot.progress.literal`), which becomes ``<code>``, where
Telegram finds no ``@mention``, link or command.

:func:`split_literal` cuts text shown literally (an approval's full text, in ``<pre>``) into
escaped pieces, never inside an HTML entity or a visible escape (:mod:`bot.visible_text`).
Sizes sent to Telegram are measured by :func:`telegram_length`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import replace

from channels.render import markdown as md
from channels.render.chunking import Chunk, split_chunks

TELEGRAM_LIMIT = 4096

_SAFE_SCHEMES = ("http://", "https://", "tg://", "mailto:")
_TAGS = {md.Style.STRONG: "b", md.Style.EMPHASIS: "i", md.Style.STRIKE: "s"}
# What a cut must not fall inside: a visible escape (bot.visible_text) or one character.
_TAG = re.compile(r"<[^>]+>")
_LITERAL_PIECE = re.compile(r"\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|[tr])|.", re.DOTALL)


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def telegram_length(rendered: str) -> int:
    """The size of ``rendered`` as checked against Telegram's limits: UTF-16 code units of the
    HTML itself, an upper bound of what Telegram counts after parsing it."""
    return len(rendered.encode("utf-16-le")) // 2


def plain_text(rendered: str) -> str:
    """The text of rendered HTML without its markup: what is sent when Telegram cannot parse
    the HTML."""
    return html.unescape(_TAG.sub("", rendered))


def literal_line(text: str) -> str:
    """One line shown as written: escaped, its value (after the line's label) in code."""
    head, sep, value = text.partition(": ")
    if not sep or not value:
        return _escape(text)
    return f"{_escape(head)}: <code>{_escape(value)}</code>"


def _link(url: str, label: str, written: str) -> str:
    if not url.lower().startswith(_SAFE_SCHEMES):
        return _escape(written)
    return f'<a href="{html.escape(url, quote=True)}">{label}</a>'


def _inline(nodes: Iterable[md.Inline], in_link: bool = False) -> str:
    out: list[str] = []
    for node in nodes:
        match node:
            case md.Text(text=text):
                out.append(_escape(text))
            case md.Code(text=text) if in_link:  # Telegram: a link may not hold code
                out.append(_escape(text))
            case md.Code(text=text):
                out.append(f"<code>{_escape(text)}</code>")
            case md.Link(label=label, url=url, source=written):
                out.append(_link(url, _inline(label, in_link=True), written))
            case md.Image(alt=alt, url=url, source=written):
                out.append(_link(url, _escape(alt or url), written))
            case md.Styled(style=style, children=children):
                tag = _TAGS[style]
                out.append(f"<{tag}>{_inline(children, in_link)}</{tag}>")
    return "".join(out)


def _line(line: md.Line) -> str:
    match line:
        case md.Heading(text=title):
            return f"<b>{_inline(md.parse_inline(title))}</b>"
        case md.ListItem(indent=indent, text=item):
            return f"{indent}• {_inline(md.parse_inline(item))}"
        case md.Rule(source=text) | md.Plain(source=text) | md.Quote(source=text):
            return _inline(md.parse_inline(text))


def _pre(block: md.CodeBlock) -> str:
    language = block.language
    attr = f' class="language-{html.escape(language, quote=True)}"' if language else ""
    return f"<pre><code{attr}>{_escape(chr(10).join(block.code_lines))}</code></pre>"


def to_html(markdown: str, *, continues_line: bool = False) -> str:
    """Render markdown-ish text as Telegram HTML (no size limit applied).

    ``continues_line``: the first line is the rest of a line cut by the splitter, shown as
    text even when it starts like a heading, quote, list item or fence (the splitter reads it
    so too).
    """
    out: list[str] = []
    quote: list[str] = []
    if continues_line:
        first, newline, rest = markdown.partition("\n")
        blocks = [md.Plain(source=first), *(md.parse_blocks(rest) if newline else ())]
    else:
        blocks = md.parse_blocks(markdown)
    for block in blocks:
        if isinstance(block, md.Quote):  # a run of quoted lines is one blockquote
            quote.append(_line(md.classify(block.text)))
            continue
        if quote:
            out.append("<blockquote>" + "\n".join(quote) + "</blockquote>")
            quote.clear()
        out.append(_pre(block) if isinstance(block, md.CodeBlock) else _line(block))
    if quote:
        out.append("<blockquote>" + "\n".join(quote) + "</blockquote>")
    return "\n".join(out).strip("\n")


def _cut_escaped(text: str, limit: int) -> list[str]:
    chunks: list[str] = []
    current = ""
    for char in text:
        piece = _escape(char)
        if len(current) + len(piece) > limit:
            chunks.append(current)
            current = ""
        current += piece
    return [*chunks, current] if current else chunks


def _render(chunk: Chunk, limit: int) -> list[str]:
    rendered = to_html(chunk.text, continues_line=chunk.continues_line)
    if not plain_text(rendered).strip():
        # Nothing visible (an empty quote or code block: ">", "```py"): Telegram refuses a
        # message without text, so the markdown is shown as written.
        return _cut_escaped(chunk.text.strip(), limit)
    if len(rendered) <= limit:
        return [rendered]
    # Escaping grew the text past the limit: split the markdown finer, in proportion.
    markdown = chunk.text
    budget = max(40, min(len(markdown) - 1, int(len(markdown) * limit / len(rendered) * 0.9)))
    pieces = split_chunks(markdown, budget)
    # Recurse only on shorter pieces, so this ends. A piece can be as long as the whole when a
    # fence marker over a quarter of the budget is closed short (not a closer: still open).
    if len(pieces) == 1 or any(len(piece.text) >= len(markdown) for piece in pieces):
        return _cut_escaped(markdown, limit)  # escaped text, cut between characters
    first = replace(pieces[0], continues_line=chunk.continues_line)
    return [html for piece in (first, *pieces[1:]) for html in _render(piece, limit)]


def render_chunks(markdown: str, limit: int = TELEGRAM_LIMIT) -> list[str]:
    """Split ``markdown`` and render each piece: every item is valid HTML of <= ``limit`` chars.

    An empty or blank text yields no chunks (Telegram refuses empty messages); a piece that
    renders to nothing visible (an empty quote or code block) is shown as written.
    """
    return [html for chunk in split_chunks(markdown, limit) for html in _render(chunk, limit)]


def literal_pieces(text: str) -> list[str]:
    """``text`` as the pieces a cut may fall between: a visible escape (``\\u202e``) is one
    piece, every other character another."""
    return _LITERAL_PIECE.findall(text)


def split_literal(text: str, budget: int) -> list[str]:
    """``text`` escaped, in pieces of at most ``budget`` (:func:`telegram_length`) each.

    A piece ends after a line break when one lies in its second half, else between two
    characters; never inside an HTML entity (``&amp;``) or a visible escape (``\\u202e``).
    The pieces joined and unescaped give ``text`` back, every character of it.
    """
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    last_break = -1  # index in ``current`` after the latest line break
    for raw in literal_pieces(text):
        piece = _escape(raw)
        length = telegram_length(piece)
        while current and size + length > budget:
            cut = last_break if last_break * 2 >= len(current) else len(current)
            pieces.append("".join(current[:cut]))
            current = current[cut:]
            size = sum(telegram_length(p) for p in current)
            last_break = -1
        current.append(piece)
        size += length
        if piece == "\n":
            last_break = len(current)
    if current:
        pieces.append("".join(current))
    return pieces
