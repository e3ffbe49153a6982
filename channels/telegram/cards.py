"""An approval card as Telegram HTML, with its inline keyboard.

What the card shows is literal: the head in bold, the argument lines in one ``<pre>`` block,
the requester's display name in ``<code>``, everything escaped. Telegram parses no
markup, ``@mention``, link or command inside ``pre`` and ``code``, so an argument cannot
change how the card renders or ping anyone.

**Never cut blind.** A card must fit in one message (:data:`TELEGRAM_LIMIT`, measured by
:func:`~channels.telegram.markup.telegram_length`). One that does not is shown with each
long argument line shortened to its head and tail around :data:`SHORTENED` (never inside a
visible escape), and counts as **cut** from then on: whatever the approval row says, the card
offers "🔎 Show full and decide" instead of Approve / Always and says so
(:data:`~bot.channel.CUT_NOTE`), and the card index records it as cut, so an approve reaction
on it does not count either.

Keyboards: a pending card that is not cut offers Approve / Deny / Always, then "✏️ Reply
instead"; a pending cut card "🔎 Show full and decide", then Deny and "✏️ Reply instead"; a
full view (:mod:`channels.telegram.full_view`) Approve / Deny / Always marked as chosen on
the full view. A decided card has none.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from bot.channel import SHOW_FULL_LABEL, ApprovalCard, ApprovalChoice, CardState
from channels.telegram.markup import TELEGRAM_LIMIT, literal_line, literal_pieces, telegram_length
from channels.telegram.normalise import CallbackCodec

APPROVE_LABEL = "✅ Approve"
DENY_LABEL = "❌ Deny"
ALWAYS_LABEL = "♾️ Always"
REPLY_BUTTON = "✏️ Reply instead"
SHORTENED = " …[shortened to fit a Telegram message]… "
#: Shown instead of the argument lines when even their shortest form does not fit.
NOT_SHOWN = "(too long for a Telegram message: press “Show full and decide”)"
_NAMED = "Asked by: "  # the requester's display name: theirs to choose, so shown in code
_MIN_WIDTH = 40


@dataclass(frozen=True, slots=True, kw_only=True)
class ShownCard:
    """A card as it is shown: ``card`` with ``cut`` set when the adapter shortened it too,
    and its HTML."""

    card: ApprovalCard
    html: str


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def _prose(line: str) -> str:
    return literal_line(line) if line.startswith(_NAMED) else _escape(line)


def _render(card: ApprovalCard) -> str:
    head, _, rest = card.render_text().partition("\n")
    parts = [f"<b>{_escape(head)}</b>"]
    body = "\n".join(card.lines)
    if card.lines and rest.startswith(body + "\n"):
        parts.append(f"<pre>{_escape(body)}</pre>")
        rest = rest[len(body) + 1 :]
    parts.extend(_prose(line) for line in rest.split("\n") if rest)
    return "\n".join(parts)


def _take(pieces: list[str], width: int) -> list[str]:
    taken: list[str] = []
    size = 0
    for piece in pieces:
        size += len(piece)
        if size > width and taken:
            break
        taken.append(piece)
    return taken


def _shorten(line: str, width: int) -> str:
    """``line`` as its head and tail around :data:`SHORTENED`, cut between escapes."""
    if len(line) <= width:
        return line
    pieces = literal_pieces(line)
    head = _take(pieces, width // 2)
    tail = _take(pieces[len(head) :][::-1], width // 4)
    return "".join(head) + SHORTENED + "".join(reversed(tail))


def fit_card(card: ApprovalCard, limit: int = TELEGRAM_LIMIT) -> ShownCard:
    """``card`` rendered to fit one message; shortened, and then cut, when it does not."""
    rendered = _render(card)
    if telegram_length(rendered) <= limit:
        return ShownCard(card=card, html=rendered)
    width = max(len(line) for line in card.lines) if card.lines else 0
    while width > _MIN_WIDTH:
        width //= 2
        shown = replace(card, lines=tuple(_shorten(line, width) for line in card.lines), cut=True)
        rendered = _render(shown)
        if telegram_length(rendered) <= limit:
            return ShownCard(card=shown, html=rendered)
    # Still too long (a huge tool name or name): nothing of the arguments is shown. If even
    # that does not fit, Telegram refuses the card and the request is not asked at all.
    shown = replace(card, lines=(NOT_SHOWN,), cut=True)
    return ShownCard(card=shown, html=_render(shown))


def card_keyboard(card: ApprovalCard, codec: CallbackCodec) -> InlineKeyboardMarkup | None:
    """The buttons of ``card`` as shown (see the module docstring); None once decided."""
    if card.state is not CardState.PENDING:
        return None
    approval_id = card.approval_id
    reply = InlineKeyboardButton(REPLY_BUTTON, callback_data=codec.encode_reply(approval_id))
    deny = InlineKeyboardButton(
        DENY_LABEL, callback_data=codec.encode(approval_id, ApprovalChoice.DENY)
    )
    if card.cut:
        show = InlineKeyboardButton(
            SHOW_FULL_LABEL, callback_data=codec.encode_show_full(approval_id)
        )
        return InlineKeyboardMarkup([[show], [deny, reply]])
    approve = InlineKeyboardButton(
        APPROVE_LABEL, callback_data=codec.encode(approval_id, ApprovalChoice.APPROVE)
    )
    always = InlineKeyboardButton(
        ALWAYS_LABEL, callback_data=codec.encode(approval_id, ApprovalChoice.ALWAYS)
    )
    return InlineKeyboardMarkup([[approve, deny, always], [reply]])


def full_view_keyboard(approval_id: str, codec: CallbackCodec) -> InlineKeyboardMarkup:
    """Approve / Deny / Always of a full view: taps on them carry ``full_view``."""
    buttons = [
        InlineKeyboardButton(label, callback_data=codec.encode(approval_id, c, full_view=True))
        for label, c in (
            (APPROVE_LABEL, ApprovalChoice.APPROVE),
            (DENY_LABEL, ApprovalChoice.DENY),
            (ALWAYS_LABEL, ApprovalChoice.ALWAYS),
        )
    ]
    return InlineKeyboardMarkup([buttons])
