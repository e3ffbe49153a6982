"""The full view: a modal that shows every character of a request, where a cut card is decided.

"🔎 Show full and decide" on a cut card opens it (``views.open`` with the button's
``trigger_id``). It shows the tool, the card's ``full_text`` whole as literal code blocks
(:func:`channels.slack.markup.code_blocks`: each section at most 3,000 characters, nothing
dropped), why the call needs approval and who asked, and Approve / Always / Deny buttons.
Their ``action_id`` values exist only in this view, and Slack reports a press only for a
button it showed, so a press on one is an answer from a view that showed the whole request:
the adapter reports it with ``full_view=True``. ``private_metadata`` carries the approval id
and where the card is (:func:`channels.slack.reply_instead.place_metadata`), so a press after a
restart of the daemon still counts and still names its card.

A modal holds at most 100 blocks. When the full text needs more, the view says so, offers
Deny only, and points to the operator commands that show and decide everything
(``hatchway approvals list`` / ``hatchway approvals approve ID``).

After a press the adapter replaces the view with the outcome (:func:`outcome_view`), or with
the verdict's message when the host refused the answer. Parsing is pure and validated;
anything malformed parses to None.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.channel import ApprovalCard, ApprovalChoice
from channels.slack.buttons import CardPlace
from channels.slack.cards import mrkdwn_section, mrkdwn_text, person_mrkdwn
from channels.slack.markup import code_blocks, code_span, escape
from channels.slack.reply_instead import place_from_metadata, place_metadata

CALLBACK_ID = "hatchway_full_view"
TITLE = "Full request"
FULL_VIEW_ACTION_IDS: dict[ApprovalChoice, str] = {
    ApprovalChoice.APPROVE: "hatchway_full_approve",
    ApprovalChoice.ALWAYS: "hatchway_full_always",
    ApprovalChoice.DENY: "hatchway_full_deny",
}
FULL_VIEW_ACTION_PATTERN = re.compile(r"^hatchway_full_(approve|always|deny)$")
ACTIONS_BLOCK_ID = "hatchway_full_actions"
#: Slack's limit of blocks in a modal.
MAX_VIEW_BLOCKS = 100
#: Blocks besides the code blocks: head, why and who asked, note, buttons.
_FRAME_BLOCKS = 4
TOO_LONG = (
    "⚠ This request is too long to show in Slack ({chars:,} characters), so it cannot be "
    "approved here. An operator can read all of it with `hatchway approvals list` and "
    "decide with `hatchway approvals approve {approval_id}`. You can deny it here."
)
OUTCOMES: dict[ApprovalChoice, str] = {
    ApprovalChoice.APPROVE: "✅ You approved this request.",
    ApprovalChoice.ALWAYS: "♾️ You approved this request, and always for this tool.",
    ApprovalChoice.DENY: "❌ You denied this request. The tool does not run.",
}

Block = dict[str, object]


def _plain(text: str) -> Block:
    return {"type": "plain_text", "text": text, "emoji": True}


def _button(choice: ApprovalChoice, label: str, approval_id: str, style: str = "") -> Block:
    button: Block = {
        "type": "button",
        "action_id": FULL_VIEW_ACTION_IDS[choice],
        "text": _plain(label),
        "value": approval_id,
    }
    if style:
        button["style"] = style
    return button


def full_view(card: ApprovalCard, place: CardPlace) -> Block:
    """The modal for ``views.open``: every character of ``card.full_text`` and the buttons
    that decide it, or (when it needs more blocks than a modal holds) a note and Deny."""
    full_text = card.full_text or "\n".join(card.lines)
    code = code_blocks(full_text)
    approval_id = card.approval_id
    deny = _button(ApprovalChoice.DENY, "Deny", approval_id, "danger")
    fits = len(code) + _FRAME_BLOCKS <= MAX_VIEW_BLOCKS
    if fits:
        body = [mrkdwn_section(piece) for piece in code]
        minutes = max(1, round(card.timeout_s / 60))
        note = (
            f"This is everything the call will run with. No answer within {minutes} min means no."
        )
        buttons = [
            _button(ApprovalChoice.APPROVE, "Approve", approval_id, "primary"),
            _button(ApprovalChoice.ALWAYS, "Always", approval_id),
            deny,
        ]
    else:
        too_long = TOO_LONG.format(chars=len(full_text), approval_id=approval_id)
        body = [mrkdwn_section(escape(too_long))]
        note = "Approve is only offered where the whole request can be shown."
        buttons = [deny]
    head = f"🔎 *Full request:* {code_span(card.tool)}"
    asked = f"*Why:* {escape(card.reason)}\n*Asked by:* {person_mrkdwn(card.requested_by)}"
    return {
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "title": _plain(TITLE),
        "close": _plain("Close"),
        "private_metadata": place_metadata(place),
        "blocks": [
            mrkdwn_section(head),
            *body,
            mrkdwn_section(asked),
            {"type": "context", "elements": [mrkdwn_text(note)]},
            {"type": "actions", "block_id": ACTIONS_BLOCK_ID, "elements": buttons},
        ],
    }


def outcome_view(text: str, place: CardPlace) -> Block:
    """The view after a press: what happened (or why not), and no buttons."""
    return {
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "title": _plain(TITLE),
        "close": _plain("Close"),
        "private_metadata": place_metadata(place),
        "blocks": [mrkdwn_section(escape(text))],
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class FullViewClick:
    """A press of Approve / Always / Deny in the full view: who, which choice, for which
    card, and the view (its id and ``hash``, to replace it with the outcome)."""

    place: CardPlace
    choice: ApprovalChoice
    user_id: str
    view_id: str
    view_hash: str


class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Id(_Payload):
    id: str = Field(min_length=1)


class _View(_Payload):
    id: str = Field(min_length=1)
    hash: str = ""
    callback_id: str
    private_metadata: str


class _Action(_Payload):
    action_id: str
    value: str = ""


class _ViewActions(_Payload):
    type: str
    user: _Id
    view: _View
    actions: list[_Action] = Field(min_length=1)


def parse_full_view_click(body: Mapping[str, object]) -> FullViewClick | None:
    """A press of a decision button in the full view, or None when ``body`` is not one (a
    press on a card, another modal's, or one whose approval id and metadata disagree)."""
    try:
        payload = _ViewActions.model_validate(body)
    except ValidationError:
        return None
    action = payload.actions[0]
    match = FULL_VIEW_ACTION_PATTERN.match(action.action_id)
    place = place_from_metadata(payload.view.private_metadata)
    if (
        payload.type != "block_actions"
        or payload.view.callback_id != CALLBACK_ID
        or match is None
        or place is None
        or action.value != place.approval_id
    ):
        return None
    return FullViewClick(
        place=place,
        choice=ApprovalChoice(match.group(1)),
        user_id=payload.user.id,
        view_id=payload.view.id,
        view_hash=payload.view.hash,
    )
