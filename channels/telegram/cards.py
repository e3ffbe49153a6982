"""An approval card as Telegram HTML, with its inline keyboard, and its full view.

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

Keyboards: a pending card that is not cut offers Approve / Deny / Always, then its grant
choices ("♾️ for 1 h", …; :attr:`~bot.cards.ApprovalCard.grant_choices`) as a second row,
then "✏️ Reply instead"; a pending cut card "🔎 Show full and decide", then Deny and
"✏️ Reply instead"; a full view Approve / Deny / Always and the grant choices, marked as
chosen on the full view. A decided card has none.
The buttons' callback data is the core's (:class:`bot.cards.ButtonCodec`).

**The full view** (:func:`full_view_messages`) shows every character of the request, paged
by the core's planner (:func:`bot.cards.plan_full_view`): ``full_text`` whole, HTML escaped
inside ``<pre>`` (literal: Telegram parses no markup, mention or link in it), in pages of at
most :data:`~channels.telegram.markup.TELEGRAM_LIMIT` each, split after a line break where
one is near and never inside an escape or an HTML entity
(:func:`~channels.telegram.markup.split_literal`). Every page says which part it is and ends
after its ``<pre>``, so no whitespace of the request sits where Telegram would trim it. The
last page carries the full view's buttons. A request that would take more than
:data:`MAX_PAGES` messages is sent instead as one text file,
:data:`~bot.cards.DOCUMENT_NAME`, whose caption carries the buttons.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from bot.cards import (
    DOCUMENT_NAME,
    SHOW_FULL_LABEL,
    ApprovalCard,
    Button,
    ButtonCodec,
    CardState,
    CardVerb,
    GrantOption,
    plan_full_view,
)
from channels.telegram.markup import (
    TELEGRAM_LIMIT,
    literal_line,
    literal_pieces,
    split_literal,
    telegram_length,
)

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


def _button(label: str, codec: ButtonCodec, button: Button) -> InlineKeyboardButton:
    return InlineKeyboardButton(label, callback_data=codec.pack(button))


def card_keyboard(card: ApprovalCard, codec: ButtonCodec) -> InlineKeyboardMarkup | None:
    """The buttons of ``card`` as shown (see the module docstring); None once decided."""
    if card.state is not CardState.PENDING:
        return None
    approval_id = card.approval_id

    def button(label: str, verb: CardVerb) -> InlineKeyboardButton:
        return _button(label, codec, Button(approval_id=approval_id, verb=verb))

    reply = button(REPLY_BUTTON, CardVerb.REPLY)
    deny = button(DENY_LABEL, CardVerb.DENY)
    if card.cut:
        return InlineKeyboardMarkup([[button(SHOW_FULL_LABEL, CardVerb.SHOW_FULL)], [deny, reply]])
    approve, always = button(APPROVE_LABEL, CardVerb.APPROVE), button(ALWAYS_LABEL, CardVerb.ALWAYS)
    if not card.always:  # a grant would not be made here (a quorum's approval)
        return InlineKeyboardMarkup([[approve, deny], [reply]])
    choices = _choice_row(card.approval_id, card.grant_choices, codec, full_view=False)
    return InlineKeyboardMarkup([[approve, deny, always], *choices, [reply]])


#: How a grant choice's button reads: the choice's label after the Always sign.
CHOICE_PREFIX = "♾️ "


def _choice_row(
    approval_id: str, choices: tuple[GrantOption, ...], codec: ButtonCodec, *, full_view: bool
) -> list[list[InlineKeyboardButton]]:
    """The grant choices as one keyboard row (none when there are none)."""
    row = [
        _button(
            CHOICE_PREFIX + choice.label,
            codec,
            Button.grant(approval_id, choice.key, full_view=full_view),
        )
        for choice in choices
    ]
    return [row] if row else []


def full_view_keyboard(
    approval_id: str,
    codec: ButtonCodec,
    choices: tuple[GrantOption, ...] = (),
    *,
    always: bool = True,
) -> InlineKeyboardMarkup:
    """Approve / Deny / Always of a full view (no Always where it would make no grant),
    then its grant choices: taps on them carry ``full_view``."""
    verbs = [(APPROVE_LABEL, CardVerb.APPROVE), (DENY_LABEL, CardVerb.DENY)]
    if always:
        verbs.append((ALWAYS_LABEL, CardVerb.ALWAYS))
    buttons = [
        _button(label, codec, Button(approval_id=approval_id, verb=verb, full_view=True))
        for label, verb in verbs
    ]
    return InlineKeyboardMarkup(
        [buttons, *_choice_row(approval_id, choices, codec, full_view=True)]
    )


def approval_in(markup: InlineKeyboardMarkup | None, codec: ButtonCodec) -> str | None:
    """The approval id a card's inline keyboard carries, if ``markup`` is one."""
    for row in markup.inline_keyboard if markup is not None else ():
        for key in row:
            data = key.callback_data if isinstance(key.callback_data, str) else None
            button = codec.unpack(data)
            if isinstance(button, Button):
                return button.approval_id
    return None


# -- the full view ---------------------------------------------------------------------------

MAX_PAGES = 4
#: Telegram's limit for a caption.
CAPTION_LIMIT = 1024
CONTINUED = "Continued in the next message."
_WIDEST_PART = f" (part {MAX_PAGES} of {MAX_PAGES})"


@dataclass(frozen=True, slots=True, kw_only=True)
class FullViewMessages:
    """A full view as Telegram messages: ``pages`` (HTML, the last with the buttons), or
    ``document`` with ``caption``."""

    pages: tuple[str, ...] = ()
    document: bytes = b""
    caption: str = ""
    #: A long diff sent as its own document before the pages (which say so where it was).
    diff_file: bytes = b""
    diff_name: str = ""


def _full_parts(card: ApprovalCard) -> tuple[str, str, list[str]]:
    """The full view's head, body (``full_text``) and closing lines (why, who asked)."""
    head, _, rest = card.render_full_text().partition("\n")
    body = card.full_text or "\n".join(card.lines)
    closing = rest[len(body) + 1 :] if rest.startswith(body + "\n") else rest
    return head, body, closing.split("\n") if closing else []


def full_view_messages(
    card: ApprovalCard, *, limit: int = TELEGRAM_LIMIT, max_pages: int = MAX_PAGES
) -> FullViewMessages:
    """The pages (or the file) that show every character of ``card``'s request."""
    head, body, closing = _full_parts(card)
    closing_html = "\n".join(_prose(line) for line in closing)
    overhead = telegram_length(f"<b>{_escape(head)}</b>{_WIDEST_PART}\n<pre></pre>\n") + max(
        telegram_length(closing_html), len(CONTINUED)
    )
    plan = plan_full_view(
        card, page_chars=limit - overhead, max_pages=max_pages, split=split_literal
    )
    if plan.pages:
        pages = []
        for index, piece in enumerate(plan.pages, start=1):
            part = f" (part {index} of {len(plan.pages)})" if len(plan.pages) > 1 else ""
            footer = closing_html if index == len(plan.pages) else CONTINUED
            pages.append(f"<b>{_escape(head)}</b>{part}\n<pre>{piece}</pre>\n{footer}")
        return FullViewMessages(
            pages=tuple(pages), diff_file=plan.diff_file, diff_name=plan.diff_name
        )
    note = (
        f"The request is {len(body):,} characters long: every character of it is in the "
        f"attached file {DOCUMENT_NAME}."
    )
    caption = f"<b>{_escape(head)}</b>\n{_escape(note)}\n{closing_html}"
    if telegram_length(caption) > CAPTION_LIMIT:
        caption = _escape(note)  # the file holds the head and closing lines as well
    return FullViewMessages(document=plan.document, caption=caption)
