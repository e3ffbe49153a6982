"""Blocks and modal views in the fake Slack: what Slack refuses in them, and what a
submission or a press in a view carries.

:func:`view_problems` checks a view's blocks as a message's
(:func:`tests.fakes.slack_blocks.block_problems`, here at most 100) and adds the limits of
Slack's view reference (title, submit and close labels of at most 24 characters,
``private_metadata`` of at most 3,000 characters, ``callback_id`` of at most 255, input labels
and ``plain_text_input.max_length``), from :mod:`tests.fakes.limits`.
:func:`view_submission` builds the ``view_submission`` payload Slack sends when a person
presses Submit, and refuses what Slack's client refuses (an empty required field, text over
``max_length``); :func:`view_block_actions` builds the ``block_actions`` payload of a button
pressed inside a view, :func:`view_select_actions` that of an option picked in a
``static_select`` inside a view.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.limits import (
    SLACK_CALLBACK_ID,
    SLACK_INPUT_LABEL,
    SLACK_INPUT_MAX_LENGTH,
    SLACK_PRIVATE_METADATA,
    SLACK_VIEW_BLOCKS,
    SLACK_VIEW_TITLE,
)
from tests.fakes.slack_blocks import block_problems

__all__ = [
    "block_problems",
    "view_block_actions",
    "view_problems",
    "view_select_actions",
    "view_submission",
]

JSON = dict[str, Any]
TEAM = "T0001"


def _plain_text_problems(where: str, value: Any, limit: int) -> list[str]:
    if not isinstance(value, dict) or value.get("type") != "plain_text":
        return [f"{where} must be a plain_text object"]
    text = value.get("text")
    if not isinstance(text, str) or not text or len(text) > limit:
        return [f"{where} must be 1-{limit} characters"]
    return []


def view_problems(view: Any) -> list[str]:
    """What Slack would refuse in a modal view (the limits the adapter can run into)."""
    if not isinstance(view, dict) or view.get("type") != "modal":
        return ["view must be an object of type modal"]
    problems = _plain_text_problems("title", view.get("title"), SLACK_VIEW_TITLE.most)
    blocks = view.get("blocks")
    if not isinstance(blocks, list) or len(blocks) > SLACK_VIEW_BLOCKS.most:
        return [*problems, f"blocks must be a list of at most {SLACK_VIEW_BLOCKS.most} blocks"]
    inputs = [b for b in blocks if isinstance(b, dict) and b.get("type") == "input"]
    if inputs or "submit" in view:
        problems += _plain_text_problems("submit", view.get("submit"), SLACK_VIEW_TITLE.most)
    if "close" in view:
        problems += _plain_text_problems("close", view.get("close"), SLACK_VIEW_TITLE.most)
    if len(str(view.get("private_metadata", ""))) > SLACK_PRIVATE_METADATA.most:
        problems.append(
            f"private_metadata must be at most {SLACK_PRIVATE_METADATA.most} characters"
        )
    if len(str(view.get("callback_id", ""))) > SLACK_CALLBACK_ID.most:
        problems.append(f"callback_id must be at most {SLACK_CALLBACK_ID.most} characters")
    problems += block_problems(blocks, limit=SLACK_VIEW_BLOCKS.most)
    for block in inputs:
        problems += _plain_text_problems("input label", block.get("label"), SLACK_INPUT_LABEL.most)
        element = block.get("element")
        if not isinstance(element, dict) or not element.get("action_id"):
            problems.append("input element needs an action_id")
            continue
        if element.get("type") == "plain_text_input":
            limit = element.get("max_length", SLACK_INPUT_MAX_LENGTH.most)
            if not isinstance(limit, int) or not SLACK_INPUT_MAX_LENGTH.holds(limit):
                problems.append("plain_text_input max_length must be 1-3000")
    return problems


def view_submission(view: JSON, *, user: str, text: str, trigger_id: str) -> JSON:
    """The payload of ``user`` typing ``text`` into ``view``'s text inputs and pressing
    Submit. Raises AssertionError where Slack's client would not let them submit."""
    submitted = json.loads(json.dumps(view))
    values: JSON = {}
    for block in submitted.get("blocks") or []:
        element = block.get("element") or {}
        if block.get("type") != "input" or element.get("type") != "plain_text_input":
            continue
        if not text and not block.get("optional", False):
            raise AssertionError("Slack's client refuses to submit an empty required field")
        if len(text) > int(element.get("max_length", 3000)):
            raise AssertionError("Slack's client refuses text over max_length")
        values[block["block_id"]] = {
            element["action_id"]: {"type": "plain_text_input", "value": text or None}
        }
    submitted["state"] = {"values": values}
    return {
        "type": "view_submission",
        "team": {"id": TEAM, "domain": "fake"},
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM},
        "api_app_id": "A0001",
        "token": "verification",
        "trigger_id": trigger_id,
        "view": submitted,
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": None,
    }


def view_block_actions(view: JSON, action_id: str, *, user: str, trigger_id: str) -> JSON:
    """The payload of ``user`` pressing the button ``action_id`` inside ``view`` (as Slack
    sends it: the view's container, the whole view with its hash, no channel)."""
    buttons = [
        (block, element)
        for block in view.get("blocks") or []
        if block.get("type") == "actions"
        for element in block.get("elements") or []
    ]
    ((block, button),) = [(b, e) for b, e in buttons if e.get("action_id") == action_id]
    return {
        "type": "block_actions",
        "team": {"id": TEAM, "domain": "fake"},
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM},
        "api_app_id": "A0001",
        "token": "verification",
        "container": {"type": "view", "view_id": view["id"]},
        "trigger_id": trigger_id,
        "view": json.loads(json.dumps(view)),
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": block.get("block_id", "b"),
                "text": button.get("text"),
                "value": button.get("value"),
                "action_ts": "1700000200.1",
            }
        ],
        "is_enterprise_install": False,
    }


def view_select_actions(
    view: JSON, action_id: str, value: str, *, user: str, trigger_id: str
) -> JSON:
    """The payload of ``user`` picking the option whose value is ``value`` in the
    ``static_select`` ``action_id`` inside ``view``: as Slack sends a pick, with
    ``selected_option`` (its text and value) and no ``value``. An option the select does not
    hold is sent as given (a forged payload), its text then ``…``."""
    selects = [
        (block, element)
        for block in view.get("blocks") or []
        if block.get("type") == "actions"
        for element in block.get("elements") or []
        if element.get("type") == "static_select"
    ]
    ((block, select),) = [(b, e) for b, e in selects if e.get("action_id") == action_id]
    shown = [o["text"] for o in select.get("options") or [] if o.get("value") == value]
    text = shown[0] if shown else {"type": "plain_text", "text": "…"}
    return {
        "type": "block_actions",
        "team": {"id": TEAM, "domain": "fake"},
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM},
        "api_app_id": "A0001",
        "token": "verification",
        "container": {"type": "view", "view_id": view["id"]},
        "trigger_id": trigger_id,
        "view": json.loads(json.dumps(view)),
        "actions": [
            {
                "type": "static_select",
                "action_id": action_id,
                "block_id": block.get("block_id", "b"),
                "selected_option": {"text": text, "value": value},
                "placeholder": select.get("placeholder"),
                "action_ts": "1700000200.1",
            }
        ],
        "is_enterprise_install": False,
    }
