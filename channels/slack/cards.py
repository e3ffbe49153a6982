"""Approval cards in Block Kit, and the clicks and reactions that answer them.

A card says what will run (tool and argument summary), why it needs approval, who asked,
and, while pending, that no answer means no. The summary is shown literally in code blocks
(:func:`channels.slack.markup.code_blocks`), split over as many sections as it needs and
never cut; a summary too long for one message (more than :data:`MAX_CARD_CODE_BLOCKS`
blocks) is shown in part and the card then counts as cut, like one the service cut.

Its buttons carry only the opaque approval id (``value``) and an ``action_id``: a card that
shows the whole request has ``hatchway_approve`` / ``hatchway_deny`` / ``hatchway_always``;
a cut card has ``hatchway_show_full`` ("🔎 Show full and decide", which opens the full view
of :mod:`channels.slack.full_view`) and Deny instead, and says why. Both have
``hatchway_reply`` ("✏️ Reply instead"), which opens the deny-with-a-reply modal
(:mod:`channels.slack.reply_instead`). Neither modal button decides anything by itself.

Parsing of ``block_actions`` payloads and ``reaction_added`` events is pure and validated;
anything malformed parses to None.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.channel import CUT_NOTE, SHOW_FULL_LABEL, ApprovalCard, ApprovalChoice, CardState
from channels.slack.markup import SECTION_LIMIT, code_blocks, code_span, escape

ACTION_IDS: dict[ApprovalChoice, str] = {
    ApprovalChoice.APPROVE: "hatchway_approve",
    ApprovalChoice.DENY: "hatchway_deny",
    ApprovalChoice.ALWAYS: "hatchway_always",
}
ACTION_PATTERN = re.compile(r"^hatchway_(approve|deny|always)$")
#: The "✏️ Reply instead" button: opens the modal, decides nothing by itself.
REPLY_ACTION_ID = "hatchway_reply"
REPLY_LABEL = "✏️ Reply instead"
#: The "🔎 Show full and decide" button of a cut card: opens the full view, decides nothing.
SHOW_FULL_ACTION_ID = "hatchway_show_full"
_NOTE_BLOCK_ID = "hatchway_note"
REACTION_CHOICES: dict[str, ApprovalChoice] = {
    "white_check_mark": ApprovalChoice.APPROVE,
    "heavy_check_mark": ApprovalChoice.APPROVE,
    "x": ApprovalChoice.DENY,
    "infinity": ApprovalChoice.ALWAYS,
}
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


class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Id(_Payload):
    id: str = Field(min_length=1)


class _Container(_Payload):
    message_ts: str | None = None
    channel_id: str | None = None
    thread_ts: str | None = None


class _Action(_Payload):
    action_id: str
    value: str = ""


class _Message(_Payload):
    ts: str | None = None
    thread_ts: str | None = None


class _BlockActions(_Payload):
    user: _Id
    channel: _Id | None = None
    trigger_id: str = ""
    container: _Container = Field(default_factory=_Container)
    message: _Message = Field(default_factory=_Message)
    actions: list[_Action] = Field(min_length=1)


class _ReactionItem(_Payload):
    type: str
    channel: str = ""
    ts: str = ""


class _Reaction(_Payload):
    user: str = Field(min_length=1)
    reaction: str
    item: _ReactionItem


@dataclass(frozen=True, slots=True, kw_only=True)
class CardPlace:
    """Which approval a card is for and where it is: its conversation, its message ``ts``
    (when Slack said) and its thread (for answering privately in the right place)."""

    approval_id: str
    channel_id: str
    message_ts: str | None = None
    thread_ts: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CardClick:
    """A press of Approve / Deny / Always on a card: who, which choice, on which card."""

    place: CardPlace
    choice: ApprovalChoice
    user_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModalClick:
    """A press of a card button that opens a modal ("✏️ Reply instead", "🔎 Show full and
    decide"): who, on which card, and the ``trigger_id`` (valid for 3 seconds) that lets the
    adapter open the modal for them."""

    place: CardPlace
    user_id: str
    trigger_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CardReaction:
    """A reaction that may answer a card; the adapter maps ``message_ts`` to an approval."""

    choice: ApprovalChoice
    user_id: str
    channel_id: str
    message_ts: str


def _block_actions(body: Mapping[str, object]) -> tuple[_BlockActions, CardPlace] | None:
    """The payload and the card it was on, if ``body`` is a well-formed button press."""
    try:
        payload = _BlockActions.model_validate(body)
    except ValidationError:
        return None
    action = payload.actions[0]
    channel_id = payload.channel.id if payload.channel else payload.container.channel_id
    if not action.value or not channel_id:
        return None
    place = CardPlace(
        approval_id=action.value,
        channel_id=channel_id,
        message_ts=payload.container.message_ts or payload.message.ts,
        thread_ts=payload.container.thread_ts or payload.message.thread_ts,
    )
    return payload, place


def parse_click(body: Mapping[str, object]) -> CardClick | None:
    parsed = _block_actions(body)
    if parsed is None:
        return None
    payload, place = parsed
    match = ACTION_PATTERN.match(payload.actions[0].action_id)
    if match is None:
        return None
    return CardClick(place=place, choice=ApprovalChoice(match.group(1)), user_id=payload.user.id)


def _modal_click(body: Mapping[str, object], action_id: str) -> ModalClick | None:
    parsed = _block_actions(body)
    if parsed is None:
        return None
    payload, place = parsed
    if payload.actions[0].action_id != action_id or not payload.trigger_id:
        return None
    return ModalClick(place=place, user_id=payload.user.id, trigger_id=payload.trigger_id)


def parse_reply_click(body: Mapping[str, object]) -> ModalClick | None:
    """A press of "✏️ Reply instead", or None."""
    return _modal_click(body, REPLY_ACTION_ID)


def parse_show_full_click(body: Mapping[str, object]) -> ModalClick | None:
    """A press of "🔎 Show full and decide", or None."""
    return _modal_click(body, SHOW_FULL_ACTION_ID)


def parse_reaction(event: Mapping[str, object]) -> CardReaction | None:
    try:
        payload = _Reaction.model_validate(event)
    except ValidationError:
        return None
    choice = REACTION_CHOICES.get(payload.reaction.split("::", 1)[0])
    item = payload.item
    if choice is None or item.type != "message" or not item.channel or not item.ts:
        return None
    return CardReaction(
        choice=choice, user_id=payload.user, channel_id=item.channel, message_ts=item.ts
    )
