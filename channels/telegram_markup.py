"""Telegram markup: the bot's markdown-ish text rendered as Telegram HTML, in sized chunks.

Telegram's HTML parse mode accepts a small tag set (``b``, ``i``, ``s``, ``code``, ``pre``,
``a``, ``blockquote``) and rejects a whole message whose tags do not nest. So the renderer
produces only those tags, escapes ``& < >`` everywhere else, and checks the nesting of every
line it built; a line whose inline markers do not pair up cleanly is sent as escaped text.

:func:`render_chunks` splits the markdown first (never inside a code fence, see
:mod:`bot.chunking`) and converts each piece, so every chunk is valid HTML on its own and at
most ``limit`` characters long after conversion.
"""

from __future__ import annotations

import html
import re

from bot.chunking import split_message

TELEGRAM_LIMIT = 4096

_FENCE = re.compile(r"^\s*```\s*([\w+#.-]*)\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(?=\S)")
_QUOTE = re.compile(r"^\s{0,3}>\s?(.*)$")
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC_STAR = re.compile(r"(?<![*\w])\*(?=\S)(.+?)(?<=\S)\*(?![*\w])")
_ITALIC_UNDERSCORE = re.compile(r"(?<![_\w])_(?=\S)(.+?)(?<=\S)_(?![_\w])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_PLACEHOLDER = re.compile("\x00(\\d+)\x00")
_TAG = re.compile(r"<(/?)([a-z]+)(?:\s[^>]*)?>")
_SAFE_SCHEMES = ("http://", "https://", "tg://", "mailto:")


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def _balanced(fragment: str) -> bool:
    """True when the tags of ``fragment`` nest properly (every opened tag closed in order)."""
    stack: list[str] = []
    for match in _TAG.finditer(fragment):
        closing, name = match.group(1), match.group(2)
        if not closing:
            stack.append(name)
        elif not stack or stack.pop() != name:
            return False
    return not stack


def _inline(line: str) -> str:
    """Convert the inline markup of one line outside code blocks."""
    line = line.replace("\x00", "")
    kept: list[str] = []

    def keep(rendered: str) -> str:
        kept.append(rendered)
        return f"\x00{len(kept) - 1}\x00"

    def code(match: re.Match[str]) -> str:
        return keep(f"<code>{_escape(match.group(1))}</code>")

    def link(match: re.Match[str]) -> str:
        label, url = match.group(1), match.group(2)
        if not url.lower().startswith(_SAFE_SCHEMES):
            return match.group(0)
        href = html.escape(url, quote=True)
        return keep(f'<a href="{href}">{_escape(label)}</a>')

    text = _INLINE_CODE.sub(code, line)
    text = _LINK.sub(link, text)
    text = _escape(text)
    text = _BOLD.sub(r"<b>\2</b>", text)
    text = _STRIKE.sub(r"<s>\1</s>", text)
    text = _ITALIC_STAR.sub(r"<i>\1</i>", text)
    text = _ITALIC_UNDERSCORE.sub(r"<i>\1</i>", text)
    if not _balanced(_PLACEHOLDER.sub("", text)):
        text = _escape(_PLACEHOLDER.sub("", _INLINE_CODE.sub(code, line)))
    return _PLACEHOLDER.sub(lambda m: kept[int(m.group(1))], text)


def _block_line(line: str) -> str:
    heading = _HEADING.match(line)
    if heading:
        return f"<b>{_inline(heading.group(1))}</b>"
    bullet = _BULLET.match(line)
    if bullet:
        return f"{bullet.group(1)}• {_inline(line[bullet.end() :])}"
    return _inline(line)


def to_html(markdown: str) -> str:
    """Render markdown-ish text as Telegram HTML (no size limit applied)."""
    out: list[str] = []
    code_lines: list[str] | None = None
    language = ""
    quote: list[str] = []

    def flush_quote() -> None:
        if quote:
            out.append("<blockquote>" + "\n".join(quote) + "</blockquote>")
            quote.clear()

    for line in markdown.split("\n"):
        fence = _FENCE.match(line)
        if code_lines is not None:
            if fence and not fence.group(1):
                body = _escape("\n".join(code_lines))
                attr = f' class="language-{html.escape(language, quote=True)}"' if language else ""
                out.append(f"<pre><code{attr}>{body}</code></pre>")
                code_lines = None
            else:
                code_lines.append(line)
            continue
        if fence:
            flush_quote()
            code_lines, language = [], fence.group(1)
            continue
        quoted = _QUOTE.match(line)
        if quoted:
            quote.append(_block_line(quoted.group(1)))
            continue
        flush_quote()
        out.append(_block_line(line))
    flush_quote()
    if code_lines is not None:  # an unclosed fence still renders as code
        attr = f' class="language-{html.escape(language, quote=True)}"' if language else ""
        out.append(f"<pre><code{attr}>{_escape(chr(10).join(code_lines))}</code></pre>")
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


def _render(markdown: str, limit: int) -> list[str]:
    rendered = to_html(markdown)
    if len(rendered) <= limit:
        return [rendered] if rendered.strip() else []
    # Escaping grew the text past the limit: split the markdown finer, in proportion.
    budget = max(40, min(len(markdown) - 1, int(len(markdown) * limit / len(rendered) * 0.9)))
    pieces = split_message(markdown, budget)
    if len(pieces) == 1:  # cannot split further: escaped text, cut between characters
        return _cut_escaped(markdown, limit)
    return [chunk for piece in pieces for chunk in _render(piece, limit)]


def render_chunks(markdown: str, limit: int = TELEGRAM_LIMIT) -> list[str]:
    """Split ``markdown`` and render each piece: every item is valid HTML of <= ``limit`` chars.

    An empty or blank text yields no chunks (Telegram refuses empty messages).
    """
    return [chunk for piece in split_message(markdown, limit) for chunk in _render(piece, limit)]


def plain_card(text: str) -> str:
    """An approval card's plain text as HTML: first line bold, everything else escaped."""
    head, _, rest = text.partition("\n")
    body = f"<b>{_escape(head)}</b>"
    return f"{body}\n{_escape(rest)}" if rest else body
