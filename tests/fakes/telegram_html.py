"""Telegram's HTML parse mode, as the Bot API parses it: :func:`parse_html` turns markup into
plain text and entities (offsets and lengths in UTF-16 code units) or refuses it with the
description Telegram answers (``can't parse entities: …``: an unsupported or unclosed tag, an
end tag that does not match, a tag never closed). The tags are
:data:`tests.fakes.limits.TELEGRAM_HTML_TAGS`; ``&lt;``, ``&gt;``, ``&amp;``, ``&quot;`` and
numeric character references are decoded, any other ``&`` is kept as it is, as Telegram does.

:func:`balanced` and :func:`well_formed` judge the HTML a renderer makes without a server.
"""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.limits import TELEGRAM_HTML_TAGS

JSON = dict[str, Any]
_TAG = re.compile(r"<(/?)([a-z]+)[^>]*>")
_ALLOWED = {"b", "i", "s", "code", "pre", "a", "blockquote"}
_CHARACTER = re.compile(r"&(lt|gt|amp|quot|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_ATTRIBUTE = re.compile(r"\s*([a-zA-Z0-9_-]+)\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s>\"']+)|\s+")


class HtmlRefused(ValueError):
    """Markup Telegram would refuse; ``str()`` is the part of the description after
    ``Bad Request: can't parse entities: ``."""


def utf16_len(text: str) -> int:
    """Length as the Bot API counts it: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def _decoded(match: re.Match[str]) -> str:
    name = match[1]
    if name in _NAMED:
        return _NAMED[name]
    code = int(name[2:], 16) if name.startswith("#x") else int(name[1:])
    return chr(code) if 0 < code <= 0x10FFFF else match[0]


class _Parser:
    def __init__(self, markup: str) -> None:
        self.markup = markup
        self.text: list[str] = []
        self.length = 0  # UTF-16 units of the text so far
        self.entities: list[JSON] = []
        #: open tags: (name, start offset, entity or None when it makes none)
        self.open: list[tuple[str, int, JSON | None]] = []

    def at(self, index: int) -> int:
        """The byte offset of ``index``, as Telegram's errors give it."""
        return len(self.markup[:index].encode())

    def add(self, text: str) -> None:
        self.text.append(text)
        self.length += utf16_len(text)

    def run(self) -> tuple[str, list[JSON]]:
        markup, i, n = self.markup, 0, len(self.markup)
        while i < n:
            char = markup[i]
            if char == "&":
                match = _CHARACTER.match(markup, i)
                self.add(_decoded(match) if match else "&")
                i = match.end() if match else i + 1
            elif char != "<":
                end = min(p for p in (markup.find("<", i), markup.find("&", i), n) if p >= 0)
                self.add(markup[i:end])
                i = end
            elif i + 1 < n and markup[i + 1] == "/":
                i = self._end_tag(i)
            else:
                i = self._start_tag(i)
        if self.open:
            raise HtmlRefused(
                f'Can\'t find end tag corresponding to start tag "{self.open[-1][0]}"'
            )
        entities = sorted(self.entities, key=lambda e: (e["offset"], -e["length"]))
        return "".join(self.text), entities

    def _start_tag(self, begin: int) -> int:
        markup, n = self.markup, len(self.markup)
        i = begin + 1
        while i < n and not markup[i].isspace() and markup[i] != ">":
            i += 1
        if i >= n:
            raise HtmlRefused(f"Unclosed start tag at byte offset {self.at(begin)}")
        name = markup[begin + 1 : i].lower()
        if name not in TELEGRAM_HTML_TAGS:
            raise HtmlRefused(f'Unsupported start tag "{name}" at byte offset {self.at(begin)}')
        attributes: dict[str, str] = {}
        while i < n and markup[i] != ">":
            match = _ATTRIBUTE.match(markup, i)
            if match is None or match.end() == i:
                raise HtmlRefused(f"Unclosed start tag at byte offset {self.at(begin)}")
            if match[1]:
                value = match[2].strip("\"'")
                attributes[match[1].lower()] = _CHARACTER.sub(_decoded, value)
            i = match.end()
        if i >= n:
            raise HtmlRefused(f"Unclosed start tag at byte offset {self.at(begin)}")
        self.open.append((name, self.length, self._entity(name, attributes, begin)))
        return i + 1

    def _entity(self, name: str, attributes: dict[str, str], begin: int) -> JSON | None:
        kind = TELEGRAM_HTML_TAGS[name]
        if name == "span" and attributes.get("class") != "tg-spoiler":
            raise HtmlRefused(
                f'Tag "span" must have class "tg-spoiler" at byte offset {self.at(begin)}'
            )
        entity: JSON = {"type": kind}
        if name == "a":
            entity["url"] = attributes.get("href", "")
        if name == "tg-emoji":
            entity["custom_emoji_id"] = attributes.get("emoji-id", "")
        if name == "code" and self.open and self.open[-1][0] == "pre":
            language = attributes.get("class", "").removeprefix("language-")
            pre = self.open[-1][2]
            if language and pre is not None:
                pre["language"] = language
                return None  # the language belongs to the pre; no code entity of its own
        return entity

    def _end_tag(self, begin: int) -> int:
        markup, n = self.markup, len(self.markup)
        if not self.open:
            raise HtmlRefused(f"Unexpected end tag at byte offset {self.at(begin)}")
        i = begin + 2
        while i < n and not markup[i].isspace() and markup[i] != ">":
            i += 1
        name = markup[begin + 2 : i].lower()
        while i < n and markup[i].isspace():
            i += 1
        if i >= n or markup[i] != ">":
            raise HtmlRefused(f"Unclosed end tag at byte offset {self.at(begin)}")
        expected = self.open[-1][0]
        if name != expected:
            raise HtmlRefused(
                f"Unmatched end tag at byte offset {self.at(begin)}, "
                f'expected "</{expected}>", found "</{name}>"'
            )
        _, start, entity = self.open.pop()
        if entity is not None and self.length > start:
            self.entities.append({**entity, "offset": start, "length": self.length - start})
        return i + 1


def parse_html(markup: str) -> tuple[str, list[JSON]]:
    """The text and entities Telegram makes of ``markup``; raises :class:`HtmlRefused`."""
    return _Parser(markup).run()


def balanced(rendered: str) -> bool:
    """Every tag closed, in order."""
    stack: list[str] = []
    for closing, name in _TAG.findall(rendered):
        if not closing:
            stack.append(name)
        elif not stack or stack.pop() != name:
            return False
    return not stack


def well_formed(rendered: str) -> bool:
    """Only Telegram's tags, properly nested, and no bare ``<``/``>``/``&`` outside them."""
    if any(name not in _ALLOWED for _, name in _TAG.findall(rendered)):
        return False
    text = _TAG.sub("", rendered)
    bare_amp = re.search(r"&(?!amp;|lt;|gt;|quot;)", text)
    return balanced(rendered) and "<" not in text and ">" not in text and bare_amp is None
