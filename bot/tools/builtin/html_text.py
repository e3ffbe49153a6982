"""Readable text from HTML, with the standard library's parser.

Scripts, styles, templates and other non-content elements are dropped with everything inside
them; block elements become line breaks; runs of whitespace collapse. The result is for a
model to read, not a faithful rendering.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

SKIPPED = frozenset(
    {"script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "head"}
)
BLOCKS = frozenset(
    {
        "p",
        "div",
        "br",
        "li",
        "ul",
        "ol",
        "tr",
        "table",
        "section",
        "article",
        "header",
        "footer",
        "nav",
        "aside",
        "main",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "pre",
        "blockquote",
        "hr",
        "dd",
        "dt",
        "dl",
        "form",
        "figure",
        "figcaption",
        "title",
        "address",
    }
)
VOID = frozenset(
    {
        "br",
        "hr",
        "img",
        "input",
        "meta",
        "link",
        "area",
        "base",
        "col",
        "embed",
        "source",
        "track",
        "wbr",
    }
)


class _TextCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._skip_depth = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in SKIPPED and tag not in VOID:
            self._skip_depth += 1
        if tag in BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in SKIPPED and self._skip_depth:
            self._skip_depth -= 1
        if tag in BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._skip_depth:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """The visible text of ``html``, title first (as ``# title``), paragraphs on their own
    lines."""
    collector = _TextCollector()
    collector.feed(html)
    collector.close()
    lines = []
    for line in "".join(collector.parts).split("\n"):
        flat = re.sub(r"[ \t\r\f\v\u00a0]+", " ", line).strip()
        if flat:
            lines.append(flat)
    title = " ".join("".join(collector.title).split())
    body = "\n".join(lines)
    return f"# {title}\n{body}" if title else body
