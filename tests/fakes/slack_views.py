"""Modal views in the fake Slack: what Slack refuses in a view, and what a submission carries.

:func:`view_problems` checks the limits of Slack's view reference that an adapter can run
into (title, submit and close labels of at most 24 characters, at most 100 blocks, unique
``block_id`` values, ``private_metadata`` of at most 3,000 characters, input labels and
``plain_text_input.max_length``). :func:`view_submission` builds the ``view_submission``
payload Slack sends when a person presses Submit, and refuses what Slack's client refuses
(an empty required field, text over ``max_length``).
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
