"""Approval cards in Block Kit, and the clicks and reactions that answer them.

A card says what will run (tool and argument summary), why it needs approval, who asked,
and, while pending, that no answer means no. Its buttons carry only the opaque approval id
(``value``) and an ``action_id`` of ``hatchway_approve`` / ``hatchway_deny`` /
``hatchway_always``, plus ``hatchway_reply`` ("✏️ Reply instead"), which opens the
deny-with-a-reply modal (:mod:`channels.slack_modal`) rather than deciding anything itself.
Parsing of ``block_actions`` payloads and ``reaction_added`` events is pure and validated;
anything malformed parses to None.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.channel import ApprovalCard, ApprovalChoice, CardState
from channels.slack_markup import escape

ACTION_IDS: dict[ApprovalChoice, str] = {
    ApprovalChoice.APPROVE: "hatchway_approve",
    ApprovalChoice.DENY: "hatchway_deny",
    ApprovalChoice.ALWAYS: "hatchway_always",
}
ACTION_PATTERN = re.compile(r"^hatchway_(approve|deny|always)$")
#: The "✏️ Reply instead" button: opens the modal, decides nothing by itself.
REPLY_ACTION_ID = "hatchway_reply"
REPLY_LABEL = "✏️ Reply instead"
_NOTE_BLOCK_ID = "hatchway_note"
REACTION_CHOICES: dict[str, ApprovalChoice] = {
    "white_check_mark": ApprovalChoice.APPROVE,
    "heavy_check_mark": ApprovalChoice.APPROVE,
    "x": ApprovalChoice.DENY,
    "infinity": ApprovalChoice.ALWAYS,
}
_SECTION_LIMIT = 3000
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")
_HEADS: dict[CardState, str] = {
    CardState.PENDING: "🔐 *Approval needed:*",
    CardState.APPROVED: "✅ *Approved:*",
    CardState.DENIED: "❌ *Denied:*",
    CardState.EXPIRED: "⌛ *Expired:*",
    CardState.EDITED: "✏️ *Denied with a reply:*",
}

Block = dict[str, object]


def _person(who: str) -> str:
    return f"<@{who}>" if _USER_ID.match(who) else escape(who)


def _section_text(card: ApprovalCard) -> str:
    head = f"{_HEADS[card.state]} `{escape(card.tool)}`"
    tail = f"*Why:* {escape(card.reason)}\n*Asked by:* {_person(card.requested_by)}"
    budget = _SECTION_LIMIT - len(head) - len(tail) - 20
    args = escape("\n".join(card.lines).replace("```", "'''"))
    if len(args) > budget:
        args = args[: max(0, budget - 1)] + "…"
    body = f"\n```\n{args}\n```\n" if args.strip() else "\n"
    return f"{head}{body}{tail}"


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


def card_blocks(card: ApprovalCard, *, reactions: bool = False) -> list[Block]:
    """The blocks of ``card``: buttons while pending, the outcome once decided."""
    blocks: list[Block] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": _section_text(card)}}
    ]
    if card.state is CardState.PENDING:
        minutes = max(1, round(card.timeout_s / 60))
        note = f"No answer within {minutes} min means no."
        if reactions:
            note += " Approvers may also react with :white_check_mark: or :x:."
        blocks.append(
            {
                "type": "context",
                "block_id": _NOTE_BLOCK_ID,
                "elements": [{"type": "mrkdwn", "text": note}],
            }
        )
        approval_id = card.approval_id
        blocks.append(
            {
                "type": "actions",
                "block_id": f"hatchway_approval:{approval_id}"[:255],
                "elements": [
                    _button(ACTION_IDS[ApprovalChoice.APPROVE], "Approve", approval_id, "primary"),
                    _button(ACTION_IDS[ApprovalChoice.DENY], "Deny", approval_id, "danger"),
                    _button(ACTION_IDS[ApprovalChoice.ALWAYS], "Always", approval_id),
                    _button(REPLY_ACTION_ID, REPLY_LABEL, approval_id),
                ],
            }
        )
    elif card.decided_by:
        by = f"By {_person(card.decided_by)}"
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": by}]})
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
class ReplyClick:
    """A press of "✏️ Reply instead": who, on which card, and the ``trigger_id`` (valid for
    3 seconds) that lets the adapter open the modal for them."""

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


def parse_reply_click(body: Mapping[str, object]) -> ReplyClick | None:
    parsed = _block_actions(body)
    if parsed is None:
        return None
    payload, place = parsed
    if payload.actions[0].action_id != REPLY_ACTION_ID or not payload.trigger_id:
        return None
    return ReplyClick(place=place, user_id=payload.user.id, trigger_id=payload.trigger_id)


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
