"""The "Deny with a reply" modal: what it shows, what it carries, and what comes back.

"✏️ Reply instead" on a card opens this modal (``views.open`` with the button's
``trigger_id``). It has one required multi-line field; ``private_metadata`` carries the
approval id and where the card is (channel, message and thread ``ts``), so the submission
needs nothing from memory and survives a restart of the daemon while the modal is open.

On ``view_submission`` the adapter answers Slack within its 3 seconds: a reply that is empty
or only whitespace is refused with ``response_action: errors`` on the field (Slack shows it
under the field and keeps the modal open); anything else closes the modal and becomes
a reply-instead :class:`~bot.cards.CardAction` for the host, which decides whether this
person may answer. (The adapter asked the host before opening the modal too, but the request
may have been decided since.) Parsing is pure and validated; anything malformed parses to None.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.channel import MAX_REPLY_CHARS
from channels.slack.buttons import CardPlace

CALLBACK_ID = "hatchway_reply"
#: The input block's ``block_id``: the key Slack expects in ``response_action: errors``.
INPUT_BLOCK_ID = "hatchway_reply"
INPUT_ACTION_ID = "text"
TITLE = "Deny with a reply"
FIELD_LABEL = "What should the assistant be told instead?"
EMPTY_REPLY = "Write what the assistant should be told, or close this and press Deny."
TOO_LONG_REPLY = f"Keep the reply to at most {MAX_REPLY_CHARS} characters."

Block = dict[str, object]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplySubmission:
    """A submitted modal: who answered, with what text (surrounding whitespace removed), and
    for which card."""

    place: CardPlace
    user_id: str
    text: str


def _plain(text: str) -> Block:
    return {"type": "plain_text", "text": text, "emoji": True}


def place_metadata(place: CardPlace) -> str:
    """``place`` as a modal's ``private_metadata``: what an answer from the modal needs to
    find its approval and card, without anything kept in memory."""
    metadata = {
        "approval_id": place.approval_id,
        "channel_id": place.channel_id,
        "message_ts": place.message_ts,
        "thread_ts": place.thread_ts,
    }
    return json.dumps(metadata, separators=(",", ":"))


def place_from_metadata(text: str) -> CardPlace | None:
    """The place :func:`place_metadata` wrote, or None when ``text`` is not one."""
    try:
        metadata = _Metadata.model_validate_json(text)
    except ValidationError:
        return None
    return CardPlace(
        approval_id=metadata.approval_id,
        channel_id=metadata.channel_id,
        message_ts=metadata.message_ts or None,
        thread_ts=metadata.thread_ts or None,
    )


def reply_modal(place: CardPlace) -> Block:
    """The modal view for ``views.open``; ``private_metadata`` carries ``place``."""
    note = "The tool will not run; the assistant is told your reply instead."
    return {
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "title": _plain(TITLE),
        "submit": _plain("Send"),
        "close": _plain("Cancel"),
        "private_metadata": place_metadata(place),
        "blocks": [
            {"type": "context", "elements": [{"type": "mrkdwn", "text": note}]},
            {
                "type": "input",
                "block_id": INPUT_BLOCK_ID,
                "optional": False,
                "label": _plain(FIELD_LABEL),
                "element": {
                    "type": "plain_text_input",
                    "action_id": INPUT_ACTION_ID,
                    "multiline": True,
                    "max_length": MAX_REPLY_CHARS,
                },
            },
        ],
    }


class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Metadata(_Payload):
    approval_id: str = Field(min_length=1)
    channel_id: str = Field(min_length=1)
    message_ts: str | None = None
    thread_ts: str | None = None


class _User(_Payload):
    id: str = Field(min_length=1)


class _Input(_Payload):
    value: str | None = None


class _State(_Payload):
    values: dict[str, dict[str, _Input]] = Field(default_factory=dict)


class _View(_Payload):
    callback_id: str
    private_metadata: str
    state: _State = Field(default_factory=_State)


class _Submission(_Payload):
    user: _User
    view: _View


def parse_submission(body: Mapping[str, object]) -> ReplySubmission | None:
    """The submission of a reply modal, or None when ``body`` is not a well-formed one."""
    try:
        payload = _Submission.model_validate(body)
    except ValidationError:
        return None
    place = place_from_metadata(payload.view.private_metadata)
    if payload.view.callback_id != CALLBACK_ID or place is None:
        return None
    field = payload.view.state.values.get(INPUT_BLOCK_ID, {}).get(INPUT_ACTION_ID)
    return ReplySubmission(
        place=place,
        user_id=payload.user.id,
        text=((field.value if field else None) or "").strip(),
    )


def reply_error(text: str) -> str | None:
    """Why the (stripped) ``text`` cannot be sent (shown under the field), or None when it can.

    Whitespace-only counts as empty: Slack's ``optional: false`` refuses an empty field in
    the client but lets whitespace through, and a blank reply would tell the model nothing.
    The length check only matters for a payload not made by Slack's client, which enforces
    ``max_length`` itself.
    """
    if not text:
        return EMPTY_REPLY
    if len(text) > MAX_REPLY_CHARS:
        return TOO_LONG_REPLY
    return None
