"""Approval cards on Discord as they are drawn: the card's message, its buttons and
reactions, the full view's messages, and the "Deny with a reply" modal. Nothing here reads
an answer or decides anything (:mod:`channels.discord.card_surface` reports answers).

**The card.** The text is the shared rendering (:meth:`~bot.cards.ApprovalCard.render_text`)
laid out for Discord: the headline in bold, the argument summary in a code block (where
nothing is markup) and the other lines escaped (:func:`~channels.discord.markup.escape_text`),
so a value shows as written; cards are sent with no mentions allowed and link previews off.
Nothing is cut blind: a card whose text would pass Discord's 2,000 characters shows as much
of the summary as fits, says that the rest is not shown, and counts as cut here even when the
core did not cut it (:attr:`CardMessage.cut`). A pending cut card offers "🔎 Show full and
decide", Deny and "✏️ Reply instead", never Approve or Always, says so
(:data:`~bot.cards.CUT_NOTE`), and gets only the ❌ reaction.

**Buttons.** A button's ``custom_id`` (1–100 characters) is the core's payload
(:class:`~bot.cards.ButtonCodec`, budget :data:`MAX_CUSTOM_ID`): the approval id, the verb,
and for a button not on the card (the full view's, the "Show full" of an ephemeral answer) the
card's message id. The views are returned stopped: discord.py keeps nothing in memory, and a
press is read from its ``custom_id`` alone, so a card from before a restart still answers.

**The full view** holds :attr:`~bot.cards.ApprovalCard.full_text` whole in code blocks,
paged by the core's planner (:func:`~bot.cards.plan_full_view`) over up to
:data:`MAX_PAGES` ephemeral messages of at most 2,000 characters, cut at line ends where it
can (a line longer than a page says that it goes on in the next one); longer, one message
with the whole request attached as a UTF-8 ``.txt`` file. The last message carries Approve /
Deny / Always whose answers carry ``full_view``.

**The modal** carries the "Reply instead" button's ``custom_id`` and one required paragraph
field; it is answered from ``on_interaction``, so a dialog opened before a restart still
counts after it.
"""

from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass

import discord

from bot.cards import (
    MAX_REPLY_CHARS,
    SHOW_FULL_LABEL,
    ApprovalCard,
    Button,
    ButtonCodec,
    CardState,
    CardVerb,
    GrantOption,
    plan_full_view,
)
from bot.visible_text import visible
from channels.discord.markup import MESSAGE_LIMIT, code_block, code_text, escape_text, fenced

#: Discord's limit for a component's ``custom_id`` (characters; the codec counts bytes,
#: never fewer).
MAX_CUSTOM_ID = 100
REPLY_LABEL = "✏️ Reply instead"
NOT_ALL_SHOWN = "… (the summary goes on: not all of it fits on the card)"
#: Below this many characters of room for the summary, the card is cut as a whole.
_MIN_SUMMARY_ROOM = 80

_STYLES: dict[CardVerb, tuple[str, discord.ButtonStyle]] = {
    CardVerb.APPROVE: ("Approve", discord.ButtonStyle.success),
    CardVerb.DENY: ("Deny", discord.ButtonStyle.danger),
    CardVerb.ALWAYS: ("Always", discord.ButtonStyle.secondary),
    CardVerb.SHOW_FULL: (SHOW_FULL_LABEL, discord.ButtonStyle.primary),
    CardVerb.REPLY: (REPLY_LABEL, discord.ButtonStyle.secondary),
}
#: The decisions, in their order on a card and in a full view.
CHOICES = (CardVerb.APPROVE, CardVerb.DENY, CardVerb.ALWAYS)
#: The reactions the bot adds to a card whose buttons approve; a cut card gets only ❌.
CARD_REACTIONS: tuple[str, ...] = ("✅", "❌", "♾️")
CUT_CARD_REACTIONS: tuple[str, ...] = ("❌",)


def button_codec() -> ButtonCodec:
    """The codec of one channel's buttons, within Discord's ``custom_id`` limit."""
    return ButtonCodec(MAX_CUSTOM_ID)


#: What the grant choices' select menu reads before a pick.
CHOICE_PLACEHOLDER = "♾️ Approve with a grant…"


def _view(
    codec: ButtonCodec, buttons: list[Button], choices: tuple[GrantOption, ...] = ()
) -> discord.ui.View:
    """A stopped view of ``buttons``, and a select menu of the grant ``choices`` when there
    are any: discord.py keeps nothing; a press is read from its id. The select's
    ``custom_id`` is a :attr:`CardVerb.GRANT` payload without a choice; each option's value
    the whole payload of its choice (:func:`~channels.discord.card_surface.picked_button`)."""
    view = discord.ui.View(timeout=None)
    for button in buttons:
        label, style = _STYLES[button.verb]
        view.add_item(discord.ui.Button(label=label, style=style, custom_id=codec.pack(button)))
    if choices and buttons:
        first = buttons[0]
        pick = Button(
            approval_id=first.approval_id,
            verb=CardVerb.GRANT,
            full_view=first.full_view,
            card=first.card,
        )
        options = [
            discord.SelectOption(
                label=choice.label,
                value=codec.pack(
                    Button.grant(
                        first.approval_id, choice.key, full_view=first.full_view, card=first.card
                    )
                ),
            )
            for choice in choices
        ]
        view.add_item(
            discord.ui.Select[discord.ui.View](
                custom_id=codec.pack(pick),
                placeholder=CHOICE_PLACEHOLDER,
                options=options,
                min_values=1,
                max_values=1,
            )
        )
    view.stop()
    return view


# -- the card --------------------------------------------------------------------------------


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


def card_view(
    card: ApprovalCard, message: CardMessage, codec: ButtonCodec
) -> discord.ui.View | None:
    """Buttons while the card is pending; None (buttons removed) once it is decided."""
    if card.state is not CardState.PENDING:
        return None
    verbs = (
        _choices(card.always) if message.approvable(card) else (CardVerb.SHOW_FULL, CardVerb.DENY)
    )
    buttons = [Button(approval_id=card.approval_id, verb=verb) for verb in verbs]
    buttons.append(Button(approval_id=card.approval_id, verb=CardVerb.REPLY))
    return _view(codec, buttons, card.grant_choices if message.approvable(card) else ())


def card_reactions(card: ApprovalCard, message: CardMessage) -> tuple[str, ...]:
    """The reactions the bot adds to a pending card (only ❌ on one that may not approve)."""
    if card.state is not CardState.PENDING:
        return ()
    if not message.approvable(card):
        return CUT_CARD_REACTIONS
    return CARD_REACTIONS if card.always else tuple(r for r in CARD_REACTIONS if r != "♾️")


def _choices(always: bool) -> tuple[CardVerb, ...]:
    """The decisions offered: Always only where it would make a grant
    (:attr:`~bot.cards.ApprovalCard.always`)."""
    return CHOICES if always else tuple(v for v in CHOICES if v is not CardVerb.ALWAYS)


def show_full_view(approval_id: str, card_message_id: str, codec: ButtonCodec) -> discord.ui.View:
    """One "Show full and decide" button for an answer that is not on the card (it names
    the card, ``card_message_id``; empty when unknown)."""
    button = Button(approval_id=approval_id, verb=CardVerb.SHOW_FULL, card=card_message_id)
    return _view(codec, [button])


# -- the full view ---------------------------------------------------------------------------

MAX_PAGES = 4
GOES_ON = "↪ The last line goes on in the next part."
DECIDE = "That is the whole request. Decide with the buttons below."
#: Below this many characters of room for code in a message, the text goes in a file.
_MIN_CODE_ROOM = 400


@dataclass(frozen=True, slots=True, kw_only=True)
class FullViewPart:
    """One ephemeral message of a full view: its text and, when the request is too long to
    show in messages, the whole request as a file (``file_name``, ``file_text``)."""

    content: str
    file_name: str | None = None
    file_text: str = ""

    def file(self) -> discord.File | None:
        if self.file_name is None:
            return None
        return discord.File(io.BytesIO(self.file_text.encode()), filename=self.file_name)


def split_code(text: str, room: int) -> list[str]:
    """``text`` as code (:func:`~channels.discord.markup.code_text`) in pages of at most
    ``room`` characters, at line ends where a line fits. A page that ends at a line end keeps
    that line break, so the pages joined give the code back; a page without one ends inside
    a line that goes on in the next page."""
    pages: list[str] = []
    block: list[str] = []
    size = 0
    for line in code_text(text).split("\n"):
        while len(line) > room:
            if block:
                pages.append("\n".join(block) + "\n")
                block, size = [], 0
            pages.append(line[:room])
            line = line[room:]
        if block and size + 1 + len(line) > room:
            pages.append("\n".join(block) + "\n")
            block, size = [], 0
        size += len(line) + (1 if block else 0)
        block.append(line)
    pages.append("\n".join(block))
    return pages


def _head(card: ApprovalCard, part: int = 1, parts: int = 1) -> str:
    numbered = f" — part {part} of {parts}" if parts > 1 else ""
    return f"**{escape_text(f'🔎 Full request: {card.tool}')}**{escape_text(numbered)}"


def _tail(card: ApprovalCard) -> str:
    lines = (f"Why: {card.reason}", f"Asked by: {card.requested_by}", DECIDE)
    return "\n".join(escape_text(line) for line in lines)


def full_view_parts(card: ApprovalCard) -> tuple[FullViewPart, ...]:
    """The messages of ``card``'s full view, each within 2,000 characters."""
    card = shown(card)
    tail = _tail(card)
    overhead = len(_head(card, MAX_PAGES, MAX_PAGES)) + len(fenced("")) + 2
    room = MESSAGE_LIMIT - overhead - max(len(tail), len(escape_text(GOES_ON)))
    plan = plan_full_view(
        card,
        page_chars=room if room >= _MIN_CODE_ROOM else 0,
        max_pages=MAX_PAGES,
        split=split_code,
    )
    if not plan.pages:
        return (_attached(card, plan.document, tail),)
    parts: list[FullViewPart] = []
    diff_file = {"file_name": plan.diff_name, "file_text": plan.diff_file.decode()}
    for number, page in enumerate(plan.pages, start=1):
        last = number == len(plan.pages)
        goes_on = not last and not page.endswith("\n")
        after = tail if last else escape_text(GOES_ON) if goes_on else ""
        code = page if last else page.removesuffix("\n")
        body = [_head(card, number, len(plan.pages)), fenced(code), after]
        content = "\n".join(line for line in body if line)
        if number == 1 and plan.diff_file:  # the long diff, attached to the first message
            parts.append(FullViewPart(content=content, **diff_file))
        else:
            parts.append(FullViewPart(content=content))
    return tuple(parts)


def _attached(card: ApprovalCard, document: bytes, tail: str) -> FullViewPart:
    name = f"request-{card.approval_id}.txt"
    note = (
        f"This request is {len(card.full_text):,} characters long, too long to show here: "
        f"every character of it is in the attached file {name}."
    )
    content = "\n".join([_head(card), escape_text(note), tail])
    return FullViewPart(content=content, file_name=name, file_text=document.decode() + "\n")


def full_view_buttons(
    approval_id: str,
    card_message_id: str,
    codec: ButtonCodec,
    choices: tuple[GrantOption, ...] = (),
    *,
    always: bool = True,
) -> discord.ui.View:
    """Approve / Deny / Always (no Always where it would make no grant), and the grant
    ``choices``, for the full view of the card ``card_message_id``."""
    return _view(
        codec,
        [
            Button(approval_id=approval_id, verb=verb, full_view=True, card=card_message_id)
            for verb in _choices(always)
        ],
        choices,
    )


# -- the reply modal -------------------------------------------------------------------------

MODAL_TITLE = "Deny with a reply"
FIELD_LABEL = "What should the assistant be told instead?"
FIELD_ID = "hatchway:reply"
#: What an empty or whitespace-only submission is told (Discord requires the field but lets
#: whitespace through); nothing is reported.
EMPTY_REPLY = (
    "Your reply was empty, so nothing was recorded. "
    "Write what the assistant should be told instead, or press Deny."
)


def reply_modal(approval_id: str, codec: ButtonCodec) -> discord.ui.Modal:
    """The "Deny with a reply" modal, with the "Reply instead" button's ``custom_id``.
    Returned stopped: discord.py would keep an unfinished modal in memory until it is
    submitted (forever, if the dialog is dismissed)."""
    custom_id = codec.pack(Button(approval_id=approval_id, verb=CardVerb.REPLY))
    modal = discord.ui.Modal(title=MODAL_TITLE, custom_id=custom_id, timeout=None)
    field = discord.ui.TextInput[discord.ui.Modal](
        style=discord.TextStyle.paragraph,
        custom_id=FIELD_ID,
        required=True,
        max_length=MAX_REPLY_CHARS,
    )
    modal.add_item(discord.ui.Label(text=FIELD_LABEL, component=field))
    modal.stop()
    return modal
