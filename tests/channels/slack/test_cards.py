"""Approval cards in Block Kit, and parsing of the clicks and reactions that answer them."""

from __future__ import annotations

from typing import Any

import pytest

from bot.channel import ApprovalCard, ApprovalChoice, CardState
from channels.slack.buttons import parse_click, parse_reaction, parse_reply_click
from channels.slack.cards import card_blocks
from channels.slack.reply_instead import EMPTY_REPLY, parse_submission, reply_error
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


def test_huge_argument_summaries_are_split_under_the_section_limit() -> None:
    blocks: Any = card_blocks(card(lines=tuple("x" * 500 for _ in range(20))))
    texts = [b["text"]["text"] for b in blocks if b["type"] == "section"]
    assert len(texts) > 1
    assert all(len(text) <= 3000 for text in texts)
    assert sum(text.count("x" * 500) for text in texts) == 20  # split, not cut


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


def test_reply_button_parses_to_a_reply_click_not_a_decision() -> None:
    body = block_actions(
        "hatchway_reply",
        "apr-1",
        user="U1",
        channel="C1",
        message_ts="1.1",
        trigger_id="9.9.abc",
        thread_ts="0.5",
    )
    assert parse_click(body) is None
    reply = parse_reply_click(body)
    assert reply is not None
    assert (reply.place.approval_id, reply.place.message_ts, reply.place.thread_ts) == (
        "apr-1",
        "1.1",
        "0.5",
    )
    assert (reply.user_id, reply.trigger_id) == ("U1", "9.9.abc")
    assert parse_reply_click({**body, "trigger_id": ""}) is None


def submission(text: str | None, metadata: str) -> dict[str, Any]:
    values = {"hatchway_reply": {"text": {"type": "plain_text_input", "value": text}}}
    return {
        "type": "view_submission",
        "user": {"id": "U1"},
        "view": {
            "callback_id": "hatchway_reply",
            "private_metadata": metadata,
            "state": {"values": values},
        },
    }


GOOD_METADATA = '{"approval_id":"apr-1","channel_id":"C1","message_ts":"1.1","thread_ts":null}'


@pytest.mark.parametrize(
    ("text", "expected", "error"),
    [
        ("  Use v1.\n", "Use v1.", None),
        (" \n\t ", "", EMPTY_REPLY),
        (None, "", EMPTY_REPLY),
        ("x" * 2001, "x" * 2001, "Keep the reply to at most 2000 characters."),
    ],
)
def test_submissions_are_stripped_and_blank_ones_refused(
    text: str | None, expected: str, error: str | None
) -> None:
    parsed = parse_submission(submission(text, GOOD_METADATA))
    assert parsed is not None
    assert (parsed.text, parsed.user_id, parsed.place.approval_id) == (expected, "U1", "apr-1")
    assert parsed.place.thread_ts is None
    assert reply_error(parsed.text) == error


@pytest.mark.parametrize("metadata", ["", "not json", "{}", '{"approval_id":"apr-1"}'])
def test_submissions_with_broken_metadata_parse_to_none(metadata: str) -> None:
    assert parse_submission(submission("text", metadata)) is None
