"""Block Kit as Slack checks it: what the fake Slack refuses in a message's or a view's blocks,
and the ``invalid_blocks`` answer it gives.

:func:`block_problems` lists what Slack would refuse, each as Slack words it (a message and a
JSON pointer: ``must be less than 3001 characters [json-pointer:/blocks/0/text/text]``); the
limits are :mod:`tests.fakes.limits`'s: at most 50 blocks in a message (100 in a view);
section text of 1–3,000 characters and at most 10 fields of at most 2,000; header text of
1–150; context blocks of 1–10 elements; actions blocks of 1–25 elements, buttons with text of
at most 75 characters and values of at most 2,000; ``block_id`` and ``action_id`` of 1–255
characters, each unique in the message or view. :func:`invalid_blocks` is the error body.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.limits import (
    SLACK_ACTION_ID,
    SLACK_ACTIONS_ELEMENTS,
    SLACK_BLOCK_ID,
    SLACK_BUTTON_TEXT,
    SLACK_BUTTON_VALUE,
    SLACK_CONTEXT_ELEMENTS,
    SLACK_HEADER_TEXT,
    SLACK_MESSAGE_BLOCKS,
    SLACK_OPTION_TEXT,
    SLACK_OPTION_VALUE,
    SLACK_SECTION_FIELD_TEXT,
    SLACK_SECTION_FIELDS,
    SLACK_SECTION_TEXT,
    SLACK_SELECT_OPTIONS,
    Limit,
)

JSON = dict[str, Any]
_TEXT_TYPES = ("mrkdwn", "plain_text")
_KNOWN = frozenset(
    {"section", "header", "context", "actions", "divider", "input", "image", "rich_text", "file"}
)


class _Check:
    """One pass over a list of blocks, collecting problems and the ids seen."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.block_ids: set[str] = set()
        self.action_ids: set[str] = set()

    def add(self, problem: str, pointer: str) -> None:
        self.problems.append(f"{problem} [json-pointer:{pointer}]")

    def text(self, value: Any, pointer: str, limit: Limit, *, plain: bool = False) -> None:
        kinds = ("plain_text",) if plain else _TEXT_TYPES
        if not isinstance(value, dict) or value.get("type") not in kinds:
            self.add(f"must be a {' or '.join(kinds)} text object", pointer)
            return
        text = value.get("text")
        if not isinstance(text, str) or len(text) < max(limit.least, 1):
            self.add("must be more than 0 characters", f"{pointer}/text")
        elif len(text) > limit.most:
            self.add(f"must be less than {limit.most + 1} characters", f"{pointer}/text")

    def identifier(self, value: Any, pointer: str, limit: Limit, seen: set[str]) -> None:
        if value is None:
            return
        if not isinstance(value, str) or not limit.holds(len(value)):
            self.add(f"must be {limit.least}-{limit.most} characters", pointer)
        elif value in seen:
            name = pointer.rsplit("/", 1)[-1]
            self.add(f"{name} must be unique, {value!r} is repeated", pointer)
        else:
            seen.add(value)

    def element(self, element: Any, pointer: str) -> None:
        if not isinstance(element, dict):
            self.add("must be an object", pointer)
            return
        self.identifier(
            element.get("action_id"), f"{pointer}/action_id", SLACK_ACTION_ID, self.action_ids
        )
        if element.get("type") == "button":
            self.text(element.get("text"), f"{pointer}/text", SLACK_BUTTON_TEXT, plain=True)
            if len(str(element.get("value", ""))) > SLACK_BUTTON_VALUE.most:
                self.add(
                    f"must be less than {SLACK_BUTTON_VALUE.most + 1} characters",
                    f"{pointer}/value",
                )
        elif element.get("type") == "static_select":
            self._static_select(element, pointer)

    def _static_select(self, element: JSON, pointer: str) -> None:
        """A ``static_select``: 1-100 options, each a plain_text label and a value."""
        options = element.get("options")
        if not isinstance(options, list) or not SLACK_SELECT_OPTIONS.holds(len(options)):
            most = SLACK_SELECT_OPTIONS.most
            self.add(f"must have 1-{most} items", f"{pointer}/options")
            return
        for index, option in enumerate(options):
            at = f"{pointer}/options/{index}"
            if not isinstance(option, dict):
                self.add("must be an object", at)
                continue
            self.text(option.get("text"), f"{at}/text", SLACK_OPTION_TEXT, plain=True)
            if not SLACK_OPTION_VALUE.holds(len(str(option.get("value", "")))):
                most = SLACK_OPTION_VALUE.most
                self.add(f"must be 1-{most} characters", f"{at}/value")

    def block(self, block: Any, pointer: str) -> None:
        if not isinstance(block, dict) or block.get("type") not in _KNOWN:
            self.add("invalid block type", f"{pointer}/type")
            return
        self.identifier(
            block.get("block_id"), f"{pointer}/block_id", SLACK_BLOCK_ID, self.block_ids
        )
        kind = block["type"]
        if kind == "section":
            self._section(block, pointer)
        elif kind == "header":
            self.text(block.get("text"), f"{pointer}/text", SLACK_HEADER_TEXT, plain=True)
        elif kind == "context":
            for index, element in enumerate(self._elements(block, pointer, SLACK_CONTEXT_ELEMENTS)):
                if not (isinstance(element, dict) and element.get("type") == "image"):
                    self.text(element, f"{pointer}/elements/{index}", SLACK_SECTION_TEXT)
        elif kind == "actions":
            for index, element in enumerate(self._elements(block, pointer, SLACK_ACTIONS_ELEMENTS)):
                self.element(element, f"{pointer}/elements/{index}")
        elif kind == "input":
            self.element(block.get("element"), f"{pointer}/element")

    def _elements(self, block: JSON, pointer: str, limit: Limit) -> list[Any]:
        """The block's ``elements``; none (refused) when their count breaks ``limit``."""
        elements = block.get("elements")
        if not isinstance(elements, list) or not limit.holds(len(elements)):
            self.add(f"must have 1-{limit.most} items", f"{pointer}/elements")
            return []
        return elements

    def _section(self, block: JSON, pointer: str) -> None:
        fields = block.get("fields")
        if "text" in block or fields is None:
            self.text(block.get("text"), f"{pointer}/text", SLACK_SECTION_TEXT)
        if fields is not None:
            if not isinstance(fields, list) or len(fields) > SLACK_SECTION_FIELDS.most:
                self.add(
                    f"must have at most {SLACK_SECTION_FIELDS.most} items", f"{pointer}/fields"
                )
                return
            for index, field in enumerate(fields):
                self.text(field, f"{pointer}/fields/{index}", SLACK_SECTION_FIELD_TEXT)
        if block.get("accessory") is not None:
            self.element(block["accessory"], f"{pointer}/accessory")


def block_problems(blocks: Any, *, limit: int = SLACK_MESSAGE_BLOCKS.most) -> list[str]:
    """What Slack would refuse in ``blocks`` (of a message: at most 50; of a view: 100)."""
    if not isinstance(blocks, list):
        return ["must be an array [json-pointer:/blocks]"]
    if len(blocks) > limit:
        return [f"no more than {limit} items allowed [json-pointer:/blocks]"]
    check = _Check()
    for index, block in enumerate(blocks):
        check.block(block, f"/blocks/{index}")
    return check.problems


def invalid_blocks(problems: list[str]) -> JSON:
    """Slack's answer to blocks it refuses."""
    return {
        "ok": False,
        "error": "invalid_blocks",
        "errors": problems,
        "response_metadata": {"messages": [f"[ERROR] {p}" for p in problems]},
    }
