"""The buttons of Slack approval cards and the reactions that answer them: their ids, and
the parsing of what Slack sends back.

A card's buttons carry only the opaque approval id (``value``) and an ``action_id``:
``hatchway_approve`` / ``hatchway_deny`` / ``hatchway_always`` decide; ``hatchway_reply``
("✏️ Reply instead") and ``hatchway_show_full`` ("🔎 Show full and decide") open a modal
(:mod:`channels.slack.reply_instead`, :mod:`channels.slack.full_view`) and decide nothing by
themselves. With ``reactions_for_approval``, :data:`REACTION_CHOICES` map a reaction's name
to an answer.

Parsing of ``block_actions`` payloads and ``reaction_added`` events is pure and validated;
anything malformed parses to None. The handling is :mod:`channels.slack.card_surface`';
nothing here decides anything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.channel import ApprovalChoice

ACTION_IDS: dict[ApprovalChoice, str] = {
    ApprovalChoice.APPROVE: "hatchway_approve",
    ApprovalChoice.DENY: "hatchway_deny",
    ApprovalChoice.ALWAYS: "hatchway_always",
}
ACTION_PATTERN = re.compile(r"^hatchway_(approve|deny|always)$")
#: The "✏️ Reply instead" button: opens the modal, decides nothing by itself.
REPLY_ACTION_ID = "hatchway_reply"
#: The "🔎 Show full and decide" button of a cut card: opens the full view, decides nothing.
SHOW_FULL_ACTION_ID = "hatchway_show_full"
REACTION_CHOICES: dict[str, ApprovalChoice] = {
    "white_check_mark": ApprovalChoice.APPROVE,
    "heavy_check_mark": ApprovalChoice.APPROVE,
    "x": ApprovalChoice.DENY,
    "infinity": ApprovalChoice.ALWAYS,
}


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
