"""Interaction payloads as Slack sends them: a press or a pick on a message or inside a modal
(``block_actions``) and a modal's submission (``view_submission``).

Every payload names its person as Slack's reference for these payloads does: ``user`` is
``{id, username, name, team_id}``, ``username`` the person's handle and ``name`` the older
field holding the same handle (:func:`interaction_user`). Neither is the name Slack shows for
the person (their profile's display name, which only ``users.info`` tells). A handle not
given is the id in lower case.

An action reads as Slack reports the element it came from (:func:`element_action`): a
button with its ``value`` and ``text``, a ``static_select`` pick with ``selected_option``
(the option's text and value) and no ``value``. An option the select does not hold is sent
as given (a forged payload), its text then ``…``. :func:`block_actions` builds the payload of
an action on a message, :func:`view_actions` of one inside a view (the view's container, the
whole view with its hash, no channel), :func:`view_submission` a Submit, refusing what
Slack's client refuses (an empty required field, text over ``max_length``).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "block_actions",
    "element_action",
    "find_element",
    "interaction_user",
    "view_actions",
    "view_submission",
]

JSON = dict[str, Any]
TEAM = "T0001"
APP = "A0001"


def interaction_user(user: str, handle: str = "") -> JSON:
    """The ``user`` of an interaction payload: the id, the handle as ``username`` and as the
    older ``name``, and the team."""
    handle = handle or user.lower()
    return {"id": user, "username": handle, "name": handle, "team_id": TEAM}


def _payload(kind: str, user: str, handle: str, **fields: Any) -> JSON:
    """An interaction payload of type ``kind`` from ``user``, with ``fields``."""
    return {
        "type": kind,
        "team": {"id": TEAM, "domain": "fake"},
        "user": interaction_user(user, handle),
        "api_app_id": APP,
        "token": "verification",
        **fields,
        "is_enterprise_install": False,
    }


def find_element(blocks: list[JSON], action_id: str) -> tuple[JSON, JSON]:
    """The actions block holding the one element ``action_id``, and the element."""
    ((block, element),) = [
        (block, element)
        for block in blocks
        if block.get("type") == "actions"
        for element in block.get("elements") or []
        if element.get("action_id") == action_id
    ]
    return block, element


def element_action(block: JSON, element: JSON, value: str | None = None) -> JSON:
    """The action Slack reports for ``element`` of ``block``: a press of a button (its own
    ``value`` unless ``value`` says otherwise), or the pick of the option ``value`` in a
    ``static_select``."""
    action: JSON = {
        "type": element.get("type", "button"),
        "action_id": element["action_id"],
        "block_id": block.get("block_id", "b"),
    }
    if action["type"] == "static_select":
        shown = [o["text"] for o in element.get("options") or [] if o.get("value") == value]
        text = shown[0] if shown else {"type": "plain_text", "text": "…"}
        action["selected_option"] = {"text": text, "value": value or ""}
        action["placeholder"] = element.get("placeholder")
    else:
        if "text" in element:
            action["text"] = element["text"]
        action["value"] = element.get("value") if value is None else value
    action["action_ts"] = "1700000100.1"
    return action


def block_actions(
    action_id: str,
    approval_id: str,
    *,
    user: str,
    channel: str,
    message_ts: str,
    trigger_id: str = "1.2.3",
    message: JSON | None = None,
    handle: str = "",
    action: JSON | None = None,
    **extra: Any,
) -> JSON:
    """An action on a message: the press of the button ``action_id`` whose value is
    ``approval_id``, or ``action`` as given (:func:`element_action`). ``extra`` goes into
    ``container`` (e.g. ``thread_ts``). Prefer :meth:`FakeSlack.press` for a message the
    fake holds."""
    if action is None:
        button = {"type": "button", "action_id": action_id}
        action = element_action({"block_id": "hatchway_approval"}, button, approval_id)
    return _payload(
        "block_actions",
        user,
        handle,
        trigger_id=trigger_id,
        container={"type": "message", "message_ts": message_ts, "channel_id": channel, **extra},
        channel={"id": channel},
        message=message or {"ts": message_ts, "type": "message", "text": "card"},
        response_url="https://hooks.invalid/actions",
        actions=[action],
    )


def view_actions(
    view: JSON,
    action_id: str,
    *,
    user: str,
    trigger_id: str,
    value: str | None = None,
    handle: str = "",
) -> JSON:
    """``user`` pressing the button ``action_id`` inside ``view``, or picking the option
    ``value`` in its ``static_select`` ``action_id``."""
    block, element = find_element(view.get("blocks") or [], action_id)
    return _payload(
        "block_actions",
        user,
        handle,
        container={"type": "view", "view_id": view["id"]},
        trigger_id=trigger_id,
        view=json.loads(json.dumps(view)),
        actions=[element_action(block, element, value)],
    )


def view_submission(view: JSON, *, user: str, text: str, trigger_id: str, handle: str = "") -> JSON:
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
    return _payload(
        "view_submission",
        user,
        handle,
        trigger_id=trigger_id,
        view=submitted,
        response_urls=[],
        enterprise=None,
    )
