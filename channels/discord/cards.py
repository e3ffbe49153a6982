"""An approval card's message on Discord: its text, its buttons and its reactions.

The text is the shared rendering (:meth:`~bot.channel.ApprovalCard.render_text`) laid out
for Discord: the headline in bold, the argument summary in a code block (where nothing is
markup) and the other lines escaped (:func:`~channels.discord.markup.escape_text`), so a
value shows as written; cards are sent with no mentions allowed and link previews off, so
nothing in one pings anyone or unfurls.

Nothing is cut blind. A card whose text would pass Discord's 2,000 characters shows as much
of the summary as fits, says that the rest is not shown, and counts as cut here even when
the core did not cut it (:attr:`CardMessage.cut`). A pending cut card — cut by the core or
here — offers "🔎 Show full and decide", Deny and "✏️ Reply instead", never Approve or
Always, says so (:data:`~bot.channel.CUT_NOTE`), and gets only the ❌ reaction; approving it
takes the full view (:mod:`channels.discord.full_view`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import discord

from bot.channel import ApprovalCard, ApprovalChoice, CardState
from bot.visible_text import visible
from channels.discord.buttons import (
    CARD_REACTIONS,
    CHOICES,
    CUT_CARD_REACTIONS,
    ApprovalButton,
    ReplyButton,
    ShowFullButton,
)
from channels.discord.markup import MESSAGE_LIMIT, code_block, code_text, escape_text, fenced

NOT_ALL_SHOWN = "… (the summary goes on: not all of it fits on the card)"
#: Below this many characters of room for the summary, the card is cut as a whole.
_MIN_SUMMARY_ROOM = 80


@dataclass(frozen=True, slots=True, kw_only=True)
class CardMessage:
    """A card as Discord shows it. ``cut``: part of the request is not in ``content`` (the
    core cut the summary, or it did not fit here), so the card may not approve."""

    content: str
    cut: bool

    def approvable(self, card: ApprovalCard) -> bool:
        """True when this message may carry Approve / Always for ``card``."""
        return card.state is CardState.PENDING and not self.cut


def shown(card: ApprovalCard) -> ApprovalCard:
    """``card`` with its free-text fields on one visible line each (a display name could
    hold a line break or a bidi control); the argument texts are the core's, already so."""
    return dataclasses.replace(
        card,
        tool=visible(card.tool),
        reason=visible(card.reason),
        requested_by=visible(card.requested_by),
        decided_by=visible(card.decided_by),
    )


def _compose(card: ApprovalCard, summary: str, *, cut: bool) -> str:
    head, *rest = dataclasses.replace(card, lines=(), cut=cut).render_text().split("\n")
    parts = [f"**{escape_text(head)}**"]
    if summary:
        parts.append(summary)
    parts.extend(escape_text(line) for line in rest)
    return "\n".join(parts)


def render_card(card: ApprovalCard) -> CardMessage:
    """The card's message text, within 2,000 characters, and whether it is cut."""
    card = shown(card)
    summary = "\n".join(card.lines)
    content = _compose(card, code_block(summary) if summary else "", cut=card.cut)
    if len(content) <= MESSAGE_LIMIT:
        return CardMessage(content=content, cut=card.cut)
    # Too long for one message: show what fits, say so, and let only the full view approve.
    note = escape_text(NOT_ALL_SHOWN)
    room = MESSAGE_LIMIT - len(_compose(card, f"{fenced('')}\n{note}", cut=True))
    if room >= _MIN_SUMMARY_ROOM:
        code = code_text(summary)[:room]
        cut_at = code.rfind("\n")
        if cut_at >= len(code) // 2:  # whole lines, where that costs little
            code = code[:cut_at]
        content = _compose(card, f"{fenced(code)}\n{note}", cut=True)
    else:  # the other lines alone fill the message: the summary is only in the full view
        content = _compose(card, note, cut=True)
    if len(content) > MESSAGE_LIMIT:  # safety net: the headline alone is too long
        content = content[: MESSAGE_LIMIT - 1] + "…"
    return CardMessage(content=content, cut=True)


def card_view(card: ApprovalCard, message: CardMessage) -> discord.ui.View | None:
    """Buttons while the card is pending; None (buttons removed) once it is decided."""
    if card.state is not CardState.PENDING:
        return None
    view = discord.ui.View(timeout=None)
    if message.approvable(card):
        for choice in CHOICES:
            view.add_item(ApprovalButton(card.approval_id, choice))
    else:
        view.add_item(ShowFullButton(card.approval_id))
        view.add_item(ApprovalButton(card.approval_id, ApprovalChoice.DENY))
    view.add_item(ReplyButton(card.approval_id))
    return view


def card_reactions(card: ApprovalCard, message: CardMessage) -> tuple[str, ...]:
    """The reactions the bot adds to a pending card (only ❌ on one that may not approve)."""
    if card.state is not CardState.PENDING:
        return ()
    return CARD_REACTIONS if message.approvable(card) else CUT_CARD_REACTIONS
