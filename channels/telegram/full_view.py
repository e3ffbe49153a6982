"""The full view of an approval on Telegram: every character of the request, and its own
buttons.

A cut card (:attr:`bot.channel.ApprovalCard.cut`) offers "🔎 Show full and decide" instead of
Approve. Pressing it posts the full view as a reply to the card: ``full_text`` whole, HTML
escaped inside ``<pre>`` (literal: Telegram parses no markup, mention or link in it), in
pages of at most :data:`~channels.telegram.markup.TELEGRAM_LIMIT` each, split after a line
break where one is near and never inside an escape or an HTML entity
(:func:`~channels.telegram.markup.split_literal`). Every page says which part it is and ends
after its ``<pre>``, so no whitespace of the request sits where Telegram would trim it. The
last page carries Approve / Deny / Always marked as chosen on the full view.

A request that would take more than :data:`MAX_PAGES` messages is sent instead as one text
file, :data:`DOCUMENT_NAME` (:meth:`~bot.channel.ApprovalCard.render_full_text`, UTF-8),
whose caption carries the buttons.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from bot.channel import ApprovalCard
from channels.telegram.markup import TELEGRAM_LIMIT, literal_line, split_literal, telegram_length

MAX_PAGES = 4
DOCUMENT_NAME = "full-request.txt"
#: Telegram's limit for a caption.
CAPTION_LIMIT = 1024
CONTINUED = "Continued in the next message."
_WIDEST_PART = f" (part {MAX_PAGES} of {MAX_PAGES})"


@dataclass(frozen=True, slots=True, kw_only=True)
class FullViewPlan:
    """How a full view is sent: ``pages`` (HTML messages, the last with the buttons), or,
    when there would be more than :data:`MAX_PAGES`, ``document`` with ``caption``."""

    pages: tuple[str, ...] = ()
    document: bytes = b""
    caption: str = ""


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def _parts(card: ApprovalCard) -> tuple[str, str, list[str]]:
    """The full view's head, body (``full_text``) and closing lines (why, who asked)."""
    head, _, rest = card.render_full_text().partition("\n")
    body = card.full_text or "\n".join(card.lines)
    closing = rest[len(body) + 1 :] if rest.startswith(body + "\n") else rest
    return head, body, closing.split("\n") if closing else []


def _closing_html(lines: list[str]) -> str:
    shown = (
        literal_line(line) if line.startswith("Asked by: ") else _escape(line) for line in lines
    )
    return "\n".join(shown)


def plan_full_view(
    card: ApprovalCard, *, limit: int = TELEGRAM_LIMIT, max_pages: int = MAX_PAGES
) -> FullViewPlan:
    """The pages (or the file) that show every character of ``card``'s request."""
    head, body, closing = _parts(card)
    closing_html = _closing_html(closing)
    overhead = telegram_length(f"<b>{_escape(head)}</b>{_WIDEST_PART}\n<pre></pre>\n") + max(
        telegram_length(closing_html), len(CONTINUED)
    )
    pieces = split_literal(body, limit - overhead) if limit > overhead else []
    if pieces and len(pieces) <= max_pages:
        pages = []
        for index, piece in enumerate(pieces, start=1):
            part = f" (part {index} of {len(pieces)})" if len(pieces) > 1 else ""
            footer = closing_html if index == len(pieces) else CONTINUED
            pages.append(f"<b>{_escape(head)}</b>{part}\n<pre>{piece}</pre>\n{footer}")
        return FullViewPlan(pages=tuple(pages))
    text = card.render_full_text()
    note = (
        f"The request is {len(body):,} characters long: every character of it is in the "
        f"attached file {DOCUMENT_NAME}."
    )
    caption = f"<b>{_escape(head)}</b>\n{_escape(note)}\n{closing_html}"
    if telegram_length(caption) > CAPTION_LIMIT:
        caption = _escape(note)  # the file holds the head and closing lines as well
    return FullViewPlan(document=text.encode("utf-8", "backslashreplace"), caption=caption)
