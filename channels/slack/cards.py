"""Approval cards in Block Kit.

A card says what will run (tool and argument summary), why it needs approval, who asked,
and, while pending, that no answer means no. The summary is shown literally in code blocks
(:func:`channels.slack.markup.code_blocks`), split over as many sections as it needs and
never cut; a summary too long for one message (more than :data:`MAX_CARD_CODE_BLOCKS`
blocks) is shown in part and the card then counts as cut, like one the service cut.

A card that shows the whole request has Approve / Deny / Always; a cut card has "🔎 Show
full and decide" and Deny instead, and says why. Both have "✏️ Reply instead". The buttons'
ids, and the parsing of presses and reactions, are :mod:`channels.slack.buttons`'; answers are
handled by :mod:`channels.slack.card_surface`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.channel import CUT_NOTE, SHOW_FULL_LABEL, ApprovalCard, ApprovalChoice, CardState
from channels.slack.buttons import ACTION_IDS, REPLY_ACTION_ID, SHOW_FULL_ACTION_ID
from channels.slack.markup import SECTION_LIMIT, code_blocks, code_span, escape

#: The "✏️ Reply instead" button's label.
REPLY_LABEL = "✏️ Reply instead"
_NOTE_BLOCK_ID = "hatchway_note"
#: The most code blocks of argument summary a card shows; beyond that it counts as cut.
MAX_CARD_CODE_BLOCKS = 10
TOO_LONG_FOR_CARD = "… the rest of the summary is not shown here."
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")
_HEADS: dict[CardState, str] = {
    CardState.PENDING: "🔐 *Approval needed:*",
    CardState.APPROVED: "✅ *Approved:*",
    CardState.DENIED: "❌ *Denied:*",
    CardState.EXPIRED: "⌛ *Expired:*",
    CardState.EDITED: "✏️ *Denied with a reply:*",
}

Block = dict[str, object]


def person_mrkdwn(who: str) -> str:
    """Who asked or decided: a mention for a user id, else the text shown literally."""
    return f"<@{who}>" if _USER_ID.match(who) else code_span(who)


def mrkdwn_text(text: str) -> Block:
    """A ``mrkdwn`` text object for ``text`` (already escaped or built here)."""
    # verbatim: Slack must not turn plain words into links or mentions on its own
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def mrkdwn_section(text: str) -> Block:
    """A section block showing ``text`` (``mrkdwn``, at most 3,000 characters)."""
    return {"type": "section", "text": mrkdwn_text(text)}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Shown:
    """What a card shows: its ``mrkdwn`` sections, and whether the summary did not fit."""

    sections: tuple[str, ...]
    overflow: bool


def _pack(parts: list[str], limit: int = SECTION_LIMIT) -> tuple[str, ...]:
    """``parts`` joined by line breaks into as few texts of at most ``limit`` as they fit."""
    texts: list[str] = []
    for part in parts:
        if texts and len(texts[-1]) + 1 + len(part) <= limit:
            texts[-1] = f"{texts[-1]}\n{part}"
        else:
            texts.append(part)
    return tuple(texts)


def _shown(card: ApprovalCard) -> _Shown:
    """The card's text: the head, the argument summary as code blocks (split, never cut),
    why and who asked. A summary needing more than :data:`MAX_CARD_CODE_BLOCKS` blocks is
    shown in part, with a note, and the card counts as cut."""
    code = code_blocks("\n".join(card.lines))
    overflow = len(code) > MAX_CARD_CODE_BLOCKS
    if overflow:
        code = [*code[:MAX_CARD_CODE_BLOCKS], escape(TOO_LONG_FOR_CARD)]
    head = f"{_HEADS[card.state]} {code_span(card.tool)}"
    tail = f"*Why:* {escape(card.reason)}\n*Asked by:* {person_mrkdwn(card.requested_by)}"
    return _Shown(sections=_pack([head, *code, tail]), overflow=overflow)


def approvable_on_card(card: ApprovalCard) -> bool:
    """True when the card itself offers Approve / Always: pending, and it shows the whole
    request (not cut by the service, and its summary fit the message)."""
    return card.approvable_here and not _shown(card).overflow


def card_text(card: ApprovalCard) -> str:
    """The message's plain ``text`` (notifications and clients without blocks): the head
    line only, escaped, so nothing in it can mention anyone."""
    return escape(card.render_text().split("\n", 1)[0])


def _button(action_id: str, label: str, approval_id: str, style: str | None = None) -> Block:
    button: Block = {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": label, "emoji": True},
        "value": approval_id,
    }
    if style:
        button["style"] = style
    return button


def _buttons(approval_id: str, *, approvable: bool) -> list[Block]:
    deny = _button(ACTION_IDS[ApprovalChoice.DENY], "Deny", approval_id, "danger")
    reply = _button(REPLY_ACTION_ID, REPLY_LABEL, approval_id)
    if not approvable:
        return [_button(SHOW_FULL_ACTION_ID, SHOW_FULL_LABEL, approval_id, "primary"), deny, reply]
    approve = _button(ACTION_IDS[ApprovalChoice.APPROVE], "Approve", approval_id, "primary")
    always = _button(ACTION_IDS[ApprovalChoice.ALWAYS], "Always", approval_id)
    return [approve, deny, always, reply]


def _note(card: ApprovalCard, *, approvable: bool, reactions: bool) -> str:
    minutes = max(1, round(card.timeout_s / 60))
    note = f"No answer within {minutes} min means no."
    if reactions:
        if approvable:
            note += " Approvers may also react with :white_check_mark: or :x:."
        else:
            note += " Approvers may also react with :x: to deny."
    return note if approvable else f"{escape(CUT_NOTE)}\n{note}"


def card_blocks(card: ApprovalCard, *, reactions: bool = False) -> list[Block]:
    """The blocks of ``card``: buttons while pending, the outcome once decided. A cut card
    offers "🔎 Show full and decide" in place of Approve / Always."""
    shown = _shown(card)
    blocks: list[Block] = [mrkdwn_section(text) for text in shown.sections]
    if card.state is CardState.PENDING:
        approvable = card.approvable_here and not shown.overflow
        note = _note(card, approvable=approvable, reactions=reactions)
        blocks.append(
            {"type": "context", "block_id": _NOTE_BLOCK_ID, "elements": [mrkdwn_text(note)]}
        )
        blocks.append(
            {
                "type": "actions",
                "block_id": f"hatchway_approval:{card.approval_id}"[:255],
                "elements": _buttons(card.approval_id, approvable=approvable),
            }
        )
    elif card.decided_by:
        blocks.append(
            {"type": "context", "elements": [mrkdwn_text(f"By {person_mrkdwn(card.decided_by)}")]}
        )
    return blocks
