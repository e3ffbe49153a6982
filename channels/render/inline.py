"""Inline markdown: one line (outside code blocks) as nested nodes, a CommonMark subset of:

* code spans: a backtick run closed by the next run of the same length (```` ```ls -la``` ````
  is inline code); their content is never parsed further;
* links ``[label](url)`` and images ``![alt](url)``: the label has no brackets, the url no
  spaces, brackets or angle brackets, and may hold balanced parentheses (``Foo_(bar)``);
* bare ``http(s)://`` urls are kept as text that emphasis never touches (``/a_b_c/``);
* emphasis: ``*x*`` ``_x_`` (:attr:`Style.EMPHASIS`), ``**x**`` ``__x__`` (STRONG),
  ``***x***`` ``___x___`` (strong around emphasis), ``~~x~~`` (STRIKE). A run opens when the
  next character is not a space and closes when the previous one is not; ``_`` and a single
  ``*`` must also sit at a word boundary on the outside, so ``snake_case`` and ``2*3*4`` stay
  text. The leftmost opening run pairs with the nearest closing run of the same length and
  character; anything unpaired is text. Nodes nest but never cross.

Every step is linear or ``n log n`` in the line length (no backtracking regex over the
text): some seconds for a pathological megabyte of ``*_*_`` (~10 µs per delimiter run).
"""

from __future__ import annotations

import enum
import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass


class Style(enum.Enum):
    EMPHASIS = "emphasis"
    STRONG = "strong"
    STRIKE = "strike"


@dataclass(frozen=True, slots=True, kw_only=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Code:
    """A code span: ``text`` as shown, ``source`` as written (backticks included)."""

    text: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    label: tuple[Inline, ...]
    url: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Image:
    alt: str
    url: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Styled:
    """Emphasis, strong or strike around ``children``; ``marker`` is the run as written."""

    style: Style
    marker: str
    children: tuple[Inline, ...]


Inline = Text | Code | Link | Image | Styled

_STYLES = {1: Style.EMPHASIS, 2: Style.STRONG}
_SPECIAL = re.compile(r"`+|!?\[|https?://")
_LABEL_STOP = re.compile(r"[\[\]]|`+")
_URL_STOP = re.compile(r"[\s\[\]<>()]")
_BARE_URL = re.compile(r"https?://[^\s<>`]+")
_URL_TRAILER = ".,:;!?*_~'\""
_DELIMITER = re.compile(r"\*+|_+|~+")
_BACKTICKS = re.compile(r"`+")
_MARKUP = re.compile(r"[*_~`\[]|https?://")


def plain_text(nodes: Iterable[Inline]) -> str:
    """What the nodes read as, markers dropped (code and link labels included)."""
    return "".join(_plain(node) for node in nodes)


def _plain(node: Inline) -> str:
    match node:
        case Text(text=text) | Code(text=text):
            return text
        case Image(alt=alt):
            return alt
        case Link(label=label):
            return plain_text(label)
        case Styled(children=children):
            return plain_text(children)


def source(nodes: Iterable[Inline]) -> str:
    """The markdown the nodes were parsed from: ``source(parse_inline(s)) == s``."""
    return "".join(_source(node) for node in nodes)


def _source(node: Inline) -> str:
    match node:
        case Text(text=text):
            return text
        case Code(source=written) | Link(source=written) | Image(source=written):
            return written
        case Styled(marker=marker, children=children):
            return marker + source(children) + marker


class _Atoms:
    """Code spans, links, images and bare urls of one line: the parts emphasis cannot enter."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.width: dict[int, int] = {}  # backtick run start -> its length
        self.starts: dict[int, list[int]] = {}  # backtick run length -> run starts
        for run in _BACKTICKS.finditer(line) if "`" in line else ():
            self.width[run.start()] = len(run.group())
            self.starts.setdefault(len(run.group()), []).append(run.start())

    def code_end(self, start: int) -> int | None:
        """The end of the code span opened by the backtick run at ``start``, if it closes."""
        width = self.width[start]
        starts = self.starts[width]
        k = bisect_right(starts, start)
        return starts[k] + width if k < len(starts) else None

    def code(self, start: int, end: int) -> Code:
        width = self.width[start]
        text = self.line[start + width : end - width]
        if text[:1] == " " == text[-1:] and text.strip(" "):
            text = text[1:-1]
        return Code(text=text, source=self.line[start:end])

    def link_end(self, start: int) -> tuple[int, int] | None:
        """For ``[`` or ``![`` at ``start``: the position of the label's ``]``, and the end of
        the link. The label may hold code spans but no brackets; the url no spaces, brackets
        or angle brackets, and only balanced parentheses."""
        line = self.line
        pos = start + (2 if line[start] == "!" else 1)
        while (stop := _LABEL_STOP.search(line, pos)) and stop.group()[0] == "`":
            pos = self.code_end(stop.start()) or stop.end()
        if stop is None or stop.group() == "[" or line[stop.end() : stop.end() + 1] != "(":
            return None
        close, pos, depth = stop.start(), stop.end() + 1, 0
        while (stop := _URL_STOP.search(line, pos)) and stop.group() in "()":
            if stop.group() == "(":
                depth += 1
            elif depth:
                depth -= 1
            else:
                return (close, stop.end()) if stop.start() > close + 2 else None
            pos = stop.end()
        return None

    def atom_at(self, special: re.Match[str]) -> tuple[Inline | None, int]:
        """The atom starting where ``special`` matched (None when it is text) and where the
        scan goes on."""
        line, start, found = self.line, special.start(), special.group()
        if found[0] == "`":
            end = self.code_end(start)
            return (None, special.end()) if end is None else (self.code(start, end), end)
        if found[0] in "![":
            bounds = self.link_end(start)
            return (None, start + 1) if bounds is None else (self.link(start, *bounds), bounds[1])
        url = _bare_url(line, start) if start == 0 or not line[start - 1].isalnum() else ""
        return (Text(text=url), start + len(url)) if url else (None, special.end())

    def link(self, start: int, close: int, end: int) -> Inline | None:
        url, written = self.line[close + 2 : end - 1], self.line[start:end]
        if self.line[start] == "!":
            return Image(alt=self.line[start + 2 : close], url=url, source=written)
        label = self.line[start + 1 : close]
        return Link(label=parse_inline(label), url=url, source=written) if label else None

    def scan(self) -> list[Inline | str]:
        """The line as atoms (nodes) and the raw text between them (``str``, never empty)."""
        out: list[Inline | str] = []
        pos = text_from = 0
        while special := _SPECIAL.search(self.line, pos):
            atom, pos = self.atom_at(special)
            if atom is not None:
                if special.start() > text_from:
                    out.append(self.line[text_from : special.start()])
                out.append(atom)
                text_from = pos
        if text_from < len(self.line):
            out.append(self.line[text_from:])
        return out


def _bare_url(line: str, start: int) -> str:
    """The bare url at ``start`` without trailing punctuation or an unbalanced ``)``; ``""``
    when nothing follows the scheme."""
    match = _BARE_URL.match(line, start)
    url = match.group() if match else ""
    end, unbalanced = len(url), url.count(")") - url.count("(")
    while end and (url[end - 1] in _URL_TRAILER or (url[end - 1] == ")" and unbalanced > 0)):
        unbalanced -= url[end - 1] == ")"
        end -= 1
    return url[:end] if not url[:end].endswith("://") else ""


@dataclass(slots=True)
class _Run:
    marker: str
    can_open: bool
    can_close: bool


def _delimiter_runs(pieces: list[Inline | str]) -> list[Inline | _Run | str]:
    """Text pieces cut into delimiter runs and text; beside an atom a run sees punctuation."""
    items: list[Inline | _Run | str] = []
    for n, piece in enumerate(pieces):
        if not isinstance(piece, str):
            items.append(piece)
            continue
        before = "." if n > 0 else " "
        after = "." if n + 1 < len(pieces) else " "
        pos = 0
        for run in _DELIMITER.finditer(piece):
            if run.start() > pos:
                items.append(piece[pos : run.start()])
            prev = piece[run.start() - 1] if run.start() else before
            nxt = piece[run.end()] if run.end() < len(piece) else after
            marker = run.group()
            # `**`, `***` and `~~` may sit inside a word; `_` and a single `*` may not
            inner = marker[0] == "~" or (marker[0] == "*" and len(marker) > 1)
            usable = len(marker) == 2 if marker[0] == "~" else len(marker) <= 3
            opens = usable and not nxt.isspace() and (inner or not prev.isalnum())
            closes = usable and not prev.isspace() and (inner or not nxt.isalnum())
            items.append(_Run(marker=marker, can_open=opens, can_close=closes))
            pos = run.end()
        if pos < len(piece):
            items.append(piece[pos:])
    return items


def _styled(marker: str, children: tuple[Inline, ...]) -> Styled:
    if marker[0] == "~":
        return Styled(style=Style.STRIKE, marker=marker, children=children)
    if len(marker) == 3:
        inner = Styled(style=Style.EMPHASIS, marker=marker[0], children=children)
        return Styled(style=Style.STRONG, marker=marker[:2], children=(inner,))
    return Styled(style=_STYLES[len(marker)], marker=marker, children=children)


def _pair(items: list[Inline | _Run | str]) -> tuple[Inline, ...]:
    """Nest the runs: the leftmost opener takes the nearest closer of the same marker.

    Inside a pair no closer of its marker is left, so pairs nest at most seven deep and each
    item is visited a bounded number of times: ``n log n`` for the whole line.
    """
    closers: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        if isinstance(item, _Run) and item.can_close:
            closers.setdefault(item.marker, []).append(index)

    def build(lo: int, hi: int) -> tuple[Inline, ...]:
        out: list[Inline] = []
        text: list[str] = []
        i = lo
        while i < hi:
            item = items[i]
            i += 1
            if isinstance(item, _Run):
                candidates = closers.get(item.marker, [])
                k = bisect_right(candidates, i - 1)
                if not (item.can_open and k < len(candidates) and candidates[k] < hi):
                    text.append(item.marker)
                    continue
                item, i = _styled(item.marker, build(i, candidates[k])), candidates[k] + 1
            if isinstance(item, str):
                text.append(item)
                continue
            if isinstance(item, Text):
                text.append(item.text)
                continue
            if text:
                out.append(Text(text="".join(text)))
                text.clear()
            out.append(item)
        if text:
            out.append(Text(text="".join(text)))
        return tuple(out)

    return build(0, len(items))


def parse_inline(line: str) -> tuple[Inline, ...]:
    """One line of text (outside code blocks) as inline nodes."""
    if not _MARKUP.search(line):
        return (Text(text=line),) if line else ()
    return _pair(_delimiter_runs(_Atoms(line).scan()))
