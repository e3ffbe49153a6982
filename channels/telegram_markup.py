"""Telegram markup: the bot's markdown rendered as Telegram HTML, in sized chunks.

Telegram's HTML parse mode accepts a small tag set (``b``, ``i``, ``s``, ``code``, ``pre``,
``a``, ``blockquote``) and rejects a whole message whose tags do not nest. The renderer
produces only those tags, from :mod:`channels.markdown`'s tokens (which nest by construction),
and escapes ``& < >`` everywhere else. Telegram lets ``b``/``i``/``s`` hold anything but no
entity may sit inside ``code``, and a link may not hold code: code in a link label is shown
as its text. (MarkdownV2 is not used: HTML needs three escapes, MarkdownV2 eighteen.)

:func:`render_chunks` splits the markdown first (never inside a code fence, see
:mod:`bot.chunking`) and converts each piece, so every chunk is valid HTML on its own and at
most ``limit`` characters long after conversion.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import replace

from bot.chunking import Chunk, split_chunks
from channels import markdown as md

TELEGRAM_LIMIT = 4096

_SAFE_SCHEMES = ("http://", "https://", "tg://", "mailto:")
_TAGS = {md.Style.STRONG: "b", md.Style.EMPHASIS: "i", md.Style.STRIKE: "s"}


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


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
    if len(rendered) <= limit:
        return [rendered] if rendered.strip() else []
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

    An empty or blank text yields no chunks (Telegram refuses empty messages).
    """
    return [html for chunk in split_chunks(markdown, limit) for html in _render(chunk, limit)]


def plain_card(text: str) -> str:
    """An approval card's plain text as HTML: first line bold, everything else escaped."""
    head, _, rest = text.partition("\n")
    body = f"<b>{_escape(head)}</b>"
    return f"{body}\n{_escape(rest)}" if rest else body
