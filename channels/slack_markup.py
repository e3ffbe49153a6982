"""Slack markup: the bot's markdown-ish text rendered as Slack ``mrkdwn``, in sized chunks.

Slack's ``mrkdwn`` is not markdown: bold is ``*x*``, italic ``_x_``, strike ``~x~``, links
``<url|label>``, there are no headings or lists, and ``& < >`` must be escaped everywhere
(inside code too, Slack decodes the entities there as well). Code fences are kept, without
the language tag Slack would otherwise show as the first line of the block.

:func:`render_chunks` converts first and then splits the converted text (never inside a code
fence, see :mod:`bot.chunking`), so every chunk is at most ``limit`` characters as sent.
"""

from __future__ import annotations

import re

from bot.chunking import split_message

SLACK_CHUNK_LIMIT = 3000

_FENCE = re.compile(r"^\s*```\s*([\w+#.-]*)\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(?=\S)")
_QUOTE = re.compile(r"^\s{0,3}>\s?(.*)$")
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")
_BOLD_ITALIC = re.compile(r"\*\*\*(?=\S)(.+?)(?<=\S)\*\*\*")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC_STAR = re.compile(r"(?<![*\w])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![*\w])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_PLACEHOLDER = re.compile("\x00(\\d+)\x00")
_SAFE_SCHEMES = ("http://", "https://", "mailto:")
_BOLD_MARK = "\x01"


def escape(text: str) -> str:
    """Escape the three characters Slack treats as control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _inline(line: str) -> str:
    """Convert the inline markup of one line outside code blocks."""
    line = line.replace("\x00", "").replace(_BOLD_MARK, "")
    kept: list[str] = []

    def keep(rendered: str) -> str:
        kept.append(rendered)
        return f"\x00{len(kept) - 1}\x00"

    def code(match: re.Match[str]) -> str:
        return keep(f"`{escape(match.group(1))}`")

    def link(match: re.Match[str]) -> str:
        label, url = match.group(1), match.group(2)
        if not url.lower().startswith(_SAFE_SCHEMES) or "|" in url:
            return match.group(0)
        label = escape(label.replace("|", "/"))
        return keep(f"<{escape(url)}|{label}>")

    text = _INLINE_CODE.sub(code, line)
    text = _LINK.sub(link, text)
    text = escape(text)
    text = _BOLD_ITALIC.sub(lambda m: f"{_BOLD_MARK}_{m.group(1)}_{_BOLD_MARK}", text)
    text = _BOLD.sub(lambda m: f"{_BOLD_MARK}{m.group(2)}{_BOLD_MARK}", text)
    text = _ITALIC_STAR.sub(r"_\1_", text)
    text = _STRIKE.sub(r"~\1~", text)
    text = text.replace(_BOLD_MARK, "*")
    return _PLACEHOLDER.sub(lambda m: kept[int(m.group(1))], text)


def _block_line(line: str) -> str:
    heading = _HEADING.match(line)
    if heading:
        title = _inline(heading.group(1)).strip()
        if len(title) > 1 and title.startswith("*") and title.endswith("*"):
            title = title[1:-1]
        return f"*{title}*"
    bullet = _BULLET.match(line)
    if bullet:
        return f"{bullet.group(1)}• {_inline(line[bullet.end() :])}"
    quote = _QUOTE.match(line)
    if quote:
        return f"> {_inline(quote.group(1))}"
    return _inline(line)


def to_mrkdwn(text: str) -> str:
    """Convert markdown-ish text to Slack ``mrkdwn`` (no size limit applied)."""
    out: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            out.append("```")
            in_fence = not in_fence
        elif in_fence:
            out.append(escape(line))
        else:
            out.append(_block_line(line))
    if in_fence:
        out.append("```")
    return "\n".join(out)


def render_chunks(text: str, limit: int = SLACK_CHUNK_LIMIT) -> list[str]:
    """The text as ``mrkdwn`` chunks of at most ``limit`` characters, code fences intact.

    Empty or whitespace-only text gives no chunks: Slack refuses an empty message.
    """
    if not text.strip():
        return []
    return [chunk for chunk in split_message(to_mrkdwn(text), limit) if chunk.strip()]
