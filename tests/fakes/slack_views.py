"""Blocks and modal views in the fake Slack: what Slack refuses in them, and what a
submission or a press in a view carries.

:func:`block_problems` checks the Block Kit limits an adapter can run into in a message or a
view (section and context texts of 1-3,000 characters, button labels of at most 75 and
values of at most 2,000, at most 25 elements in an actions block). :func:`view_problems`
adds the limits of Slack's view reference (title, submit and close labels of at most 24
characters, at most 100 blocks, unique ``block_id`` values, ``private_metadata`` of at most
3,000 characters, input labels and ``plain_text_input.max_length``).
:func:`view_submission` builds the ``view_submission`` payload Slack sends when a person
presses Submit, and refuses what Slack's client refuses (an empty required field, text over
``max_length``); :func:`view_block_actions` builds the ``block_actions`` payload of a button
pressed inside a view.
"""

from __future__ import annotations

import json
from typing import Any

JSON = dict[str, Any]
TEAM = "T0001"


def _plain_text_problems(where: str, value: Any, limit: int) -> list[str]:
    if not isinstance(value, dict) or value.get("type") != "plain_text":
        return [f"{where} must be a plain_text object"]
    text = value.get("text")
    if not isinstance(text, str) or not text or len(text) > limit:
        return [f"{where} must be 1-{limit} characters"]
    return []


def _text_problems(where: str, value: Any, limit: int = 3000) -> list[str]:
    if not isinstance(value, dict) or value.get("type") not in ("mrkdwn", "plain_text"):
        return [f"{where} must be a text object"]
    text = value.get("text")
    if not isinstance(text, str) or not text or len(text) > limit:
        return [f"{where} text must be 1-{limit} characters"]
    return []


def block_problems(blocks: Any, *, limit: int = 50) -> list[str]:
    """What Slack would refuse in ``blocks`` (of a message: at most 50)."""
    if not isinstance(blocks, list) or len(blocks) > limit:
        return [f"blocks must be a list of at most {limit} blocks"]
    problems: list[str] = []
    for index, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "section":
            problems += _text_problems(f"block {index}", block.get("text"))
        elif kind == "context":
            for element in block.get("elements") or []:
                problems += _text_problems(f"block {index} element", element)
        elif kind == "actions":
            elements = block.get("elements") or []
            if not 1 <= len(elements) <= 25:
                problems.append(f"block {index} must have 1-25 elements")
            for element in elements:
                problems += _text_problems(f"block {index} button", element.get("text"), 75)
                if len(str(element.get("value", ""))) > 2000:
                    problems.append(f"block {index} button value must be at most 2000")
    return problems


def view_problems(view: Any) -> list[str]:
    """What Slack would refuse in a modal view (the limits the adapter can run into)."""
    if not isinstance(view, dict) or view.get("type") != "modal":
        return ["view must be an object of type modal"]
    problems = _plain_text_problems("title", view.get("title"), 24)
    blocks = view.get("blocks")
    if not isinstance(blocks, list) or len(blocks) > 100:
        return [*problems, "blocks must be a list of at most 100 blocks"]
    inputs = [b for b in blocks if isinstance(b, dict) and b.get("type") == "input"]
    if inputs or "submit" in view:
        problems += _plain_text_problems("submit", view.get("submit"), 24)
    if "close" in view:
        problems += _plain_text_problems("close", view.get("close"), 24)
    if len(str(view.get("private_metadata", ""))) > 3000:
        problems.append("private_metadata must be at most 3000 characters")
    if len(str(view.get("callback_id", ""))) > 255:
        problems.append("callback_id must be at most 255 characters")
    problems += block_problems(blocks, limit=100)
    block_ids = [b.get("block_id") for b in blocks if isinstance(b, dict) and b.get("block_id")]
    if len(block_ids) != len(set(block_ids)):
        problems.append("block_id values must be unique")
    for block in inputs:
        problems += _plain_text_problems("input label", block.get("label"), 2000)
        element = block.get("element")
        if not isinstance(element, dict) or not element.get("action_id"):
            problems.append("input element needs an action_id")
            continue
        if element.get("type") == "plain_text_input":
            limit = element.get("max_length", 3000)
            if not isinstance(limit, int) or not 1 <= limit <= 3000:
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
