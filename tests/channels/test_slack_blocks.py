"""Approval cards in Block Kit, and parsing of the clicks and reactions that answer them."""

from __future__ import annotations

from typing import Any

import pytest

from bot.channel import ApprovalCard, ApprovalChoice, CardState
from channels.slack_blocks import card_blocks, parse_click, parse_reaction
from tests.fakes.slack_server import block_actions


def card(**overrides: Any) -> ApprovalCard:
    values: dict[str, Any] = {
        "approval_id": "apr-1",
        "tool": "file_write",
        "lines": ("path: notes.md",),
        "reason": "writes files",
        "requested_by": "Ann <ann@example.com>",
        "timeout_s": 120,
        **overrides,
    }
    return ApprovalCard(**values)


def test_pending_card_says_everything_and_carries_only_the_id() -> None:
    blocks: Any = card_blocks(card(), reactions=True)
    section, context, actions = blocks
    text = section["text"]["text"]
    assert "file_write" in text and "path: notes.md" in text
    assert "*Why:* writes files" in text
    assert "Ann &lt;ann@example.com&gt;" in text
    note = context["elements"][0]["text"]
    assert "2 min means no" in note and ":white_check_mark:" in note
    values = {b["value"] for b in actions["elements"]}
    assert values == {"apr-1"}


@pytest.mark.parametrize(
    ("state", "word"),
    [
        (CardState.APPROVED, "Approved"),
        (CardState.DENIED, "Denied"),
        (CardState.EXPIRED, "Expired"),
        (CardState.EDITED, "Denied with a reply"),
    ],
)
def test_decided_cards_have_no_buttons(state: CardState, word: str) -> None:
    blocks: Any = card_blocks(card(state=state, decided_by="UAPPROVER"))
    assert "actions" not in [b["type"] for b in blocks]
    assert word in blocks[0]["text"]["text"]


def test_huge_argument_summaries_stay_under_the_section_limit() -> None:
    blocks: Any = card_blocks(card(lines=tuple("x" * 500 for _ in range(20))))
    section = blocks[0]
    assert len(section["text"]["text"]) <= 3000


@pytest.mark.parametrize(
    ("action_id", "choice"),
    [
        ("hatchway_approve", ApprovalChoice.APPROVE),
        ("hatchway_deny", ApprovalChoice.DENY),
        ("hatchway_always", ApprovalChoice.ALWAYS),
        ("hatchway_other", None),
        ("something_else", None),
    ],
)
def test_click_parsing(action_id: str, choice: ApprovalChoice | None) -> None:
    click = parse_click(
        block_actions(action_id, "apr-1", user="U1", channel="C1", message_ts="1.1")
    )
    assert (click.choice if click else None) == choice


@pytest.mark.parametrize(
    "payload",
    [{}, {"user": {"id": "U1"}, "actions": []}, {"user": {}, "actions": [{"action_id": "x"}]}],
)
def test_malformed_clicks_parse_to_none(payload: dict[str, Any]) -> None:
    assert parse_click(payload) is None


@pytest.mark.parametrize(
    ("name", "choice"),
    [
        ("white_check_mark", ApprovalChoice.APPROVE),
        ("white_check_mark::skin-tone-2", ApprovalChoice.APPROVE),
        ("x", ApprovalChoice.DENY),
        ("infinity", ApprovalChoice.ALWAYS),
        ("tada", None),
    ],
)
def test_reaction_parsing(name: str, choice: ApprovalChoice | None) -> None:
    event = {"user": "U1", "reaction": name, "item": {"type": "message", "channel": "C", "ts": "1"}}
    reaction = parse_reaction(event)
    assert (reaction.choice if reaction else None) == choice
