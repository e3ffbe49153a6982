"""What Slack's Web API refuses in a call, for the fake Slack to refuse it the same
way (``200`` with ``{"ok": false, "error": …}``, as Slack answers).

:func:`refusal` checks a required argument of any method
(:data:`tests.fakes.limits.SLACK_REQUIRED`: ``channel_not_found``, ``message_not_found``,
``user_not_found``, ``thread_not_found``, ``no_item_specified``, ``invalid_name``; a
reaction's name is written without colons), and in ``chat.postMessage``, ``chat.update`` and
``chat.postEphemeral``: text over 40,000 characters (``msg_too_long``), neither text nor blocks
nor attachments (``no_text``), blocks Block Kit refuses (``invalid_blocks``,
:mod:`tests.fakes.slack_blocks`), metadata without an ``event_type`` and an object
``event_payload`` (``invalid_metadata_format``).
"""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.limits import SLACK_MESSAGE_METHODS, SLACK_REQUIRED, SLACK_TEXT
from tests.fakes.slack_blocks import block_problems, invalid_blocks

JSON = dict[str, Any]
_EVENT_TYPE = re.compile(r"^[a-zA-Z0-9_]+$")
_EMOJI_NAME = re.compile(r"^[a-z0-9_+\-']+(::skin-tone-[2-6])?$")


def metadata_problem(metadata: object) -> str | None:
    """Slack's error for ``chat.postMessage`` metadata it refuses, or None: an object with an
    alphanumeric ``event_type`` and an object ``event_payload``."""
    if not isinstance(metadata, dict):
        return "invalid_metadata_format"
    event_type, payload = metadata.get("event_type"), metadata.get("event_payload")
    if not isinstance(event_type, str) or not _EVENT_TYPE.match(event_type):
        return "invalid_metadata_format"
    if not isinstance(payload, dict):
        return "invalid_metadata_format"
    return None


def _error(word: str) -> JSON:
    return {"ok": False, "error": word}


def refusal(method: str, params: JSON) -> JSON | None:
    """Slack's answer refusing this call, or None when Slack would carry it out."""
    for name, word in SLACK_REQUIRED.get(method, ()):
        if not str(params.get(name) or "").strip():
            return _error(word)
    if method == "reactions.add" and not _EMOJI_NAME.match(str(params["name"])):
        return _error("invalid_name")  # a name without colons: "white_check_mark"
    return _message_refusal(method, params) if method in SLACK_MESSAGE_METHODS else None


def _message_refusal(method: str, params: JSON) -> JSON | None:
    text = params.get("text")
    if isinstance(text, str) and len(text) > SLACK_TEXT.most:
        return _error("msg_too_long")
    blocks = params.get("blocks")
    has_blocks = blocks not in (None, "", [])
    if not (str(text or "").strip() or has_blocks or params.get("attachments")):
        return _error("no_text")
    if has_blocks and (problems := block_problems(blocks)):
        return invalid_blocks(problems)
    if params.get("metadata") is not None and (problem := metadata_problem(params["metadata"])):
        return _error(problem)
    return None
