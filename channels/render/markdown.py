"""Markdown tokens: the model's answer split once into code blocks, lines and inline nodes.

The platform converters (:mod:`channels.slack.markup`, :mod:`channels.telegram.markup`,
:mod:`channels.discord.markup`) render these tokens each in their own markup; none of them
re-parses markdown. They import this module only: it holds the block structure and re-exports
the inline nodes of :mod:`channels.render.inline`.

Blocks (:func:`parse_blocks`): fenced code, with backticks or tildes (the fence rule is
:mod:`channels.render.chunking`'s, so the splitter agrees with every converter), then one
token per other line: :class:`Rule`, :class:`Heading`, :class:`ListItem`, :class:`Quote`
or :class:`Plain`.
Nothing here renders anything; :func:`defuse_fences` is the one escape two renderers share.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from channels.render.chunking import Fence, fence_opening
from channels.render.inline import (
    Code,
    Image,
    Inline,
    Link,
    Style,
    Styled,
    Text,
    parse_inline,
    plain_text,
    source,
)

__all__ = [
    "Block",
    "Code",
    "CodeBlock",
    "Heading",
    "Image",
    "Inline",
    "Line",
    "Link",
    "ListItem",
    "Plain",
    "Quote",
    "Rule",
    "Style",
    "Styled",
    "Text",
    "classify",
    "defuse_fences",
    "parse_blocks",
    "parse_inline",
    "plain_text",
    "source",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeBlock:
    """A fenced code block. ``closer`` is None when the text ended inside it."""

    fence: Fence
    lines: tuple[str, ...]
    closer: str | None

    @property
    def language(self) -> str:
        return self.fence.language

    @property
    def code_lines(self) -> tuple[str, ...]:
        """The code shown: text written on the opening fence line (not a language) first."""
        if self.language or not self.fence.info:
            return self.lines
        return (self.fence.info, *self.lines)


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """A thematic break: ``---``, ``***``, ``_ _ _``."""

    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Heading:
    """``# Title`` (levels 1 to 6); ``text`` without the hashes around it."""

    source: str
    level: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ListItem:
    """A bullet (``-``, ``*``, ``+``) line: its indentation and the text after the marker."""

    source: str
    indent: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Quote:
    """A ``>`` line; ``text`` is what follows the marker and one optional space."""

    source: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Plain:
    source: str


Line = Rule | Heading | ListItem | Quote | Plain
Block = CodeBlock | Line

_TICKS = re.compile(r"`{3,}")


def defuse_fences(text: str) -> str:
    """``text`` with every run of three or more backticks broken by zero-width spaces.

    For platforms (Slack, Discord) that pair ```` ``` ```` anywhere, even inside a code block:
    a stray run in prose or in code would end or start a block there. The spaces are copied
    along with the text, so it is the escape of last resort: Slack has no other, Discord
    uses it only in code, where a backslash would show.
    """
    return _TICKS.sub(lambda run: "\u200b".join(run.group()), text)


_BULLET = re.compile(r"(\s*)[-*+]\s+(?=\S)")
_QUOTE = re.compile(r" {0,3}>\s?")


def _heading(line: str) -> Heading | None:
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3:
        return None
    level = len(stripped) - len(stripped.lstrip("#"))
    rest = stripped[level:]
    if not 1 <= level <= 6 or not rest[:1].isspace():
        return None
    text = rest.strip()
    unclosed = text.rstrip("#")  # a closing run of hashes counts only after a space
    if not unclosed or unclosed[-1].isspace():
        text = unclosed.rstrip()
    return Heading(source=line, level=level, text=text) if text else None


def _is_rule(line: str) -> bool:
    marks = line.replace(" ", "").replace("\t", "")
    return len(marks) >= 3 and marks[0] in "-*_" and marks == marks[0] * len(marks)


def classify(line: str) -> Line:
    """The kind of one line outside code blocks."""
    if _is_rule(line):
        return Rule(source=line)
    if heading := _heading(line):
        return heading
    if bullet := _BULLET.match(line):
        return ListItem(source=line, indent=bullet.group(1), text=line[bullet.end() :])
    if quote := _QUOTE.match(line):
        return Quote(source=line, text=line[quote.end() :])
    return Plain(source=line)


def parse_blocks(text: str) -> list[Block]:
    """``text`` as code blocks and classified lines, in order; an unclosed fence runs to the end."""
    blocks: list[Block] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        fence = fence_opening(lines[i])
        if fence is None:
            blocks.append(classify(lines[i]))
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not fence.closed_by(lines[end]):
            end += 1
        closer = lines[end] if end < len(lines) else None
        blocks.append(CodeBlock(fence=fence, lines=tuple(lines[i + 1 : end]), closer=closer))
        i = end + 1
    return blocks
