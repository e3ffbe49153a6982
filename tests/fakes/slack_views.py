"""Blocks and modal views in the fake Slack: what Slack refuses in them.

:func:`view_problems` checks a view's blocks as a message's
(:func:`tests.fakes.slack_blocks.block_problems`, here at most 100) and adds the limits of
Slack's view reference (title, submit and close labels of at most 24 characters,
``private_metadata`` of at most 3,000 characters, ``callback_id`` of at most 255, input labels
and ``plain_text_input.max_length``), from :mod:`tests.fakes.limits`.
What a submission or a press in a view carries is :mod:`tests.fakes.slack_interactions`.
"""

from __future__ import annotations

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

__all__ = ["block_problems", "view_problems"]


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
