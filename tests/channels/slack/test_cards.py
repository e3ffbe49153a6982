"""Approval cards in Block Kit, and the reading of the presses, reactions and reply forms
that answer them: payloads of this version, of cards drawn before payloads had a format,
and of another format version."""

from __future__ import annotations

from typing import Any

import pytest

from bot.cards import UNREADABLE_BUTTON, Button, CardVerb, Unreadable
from bot.channel import ApprovalCard, ApprovalChoice, CardState
from bot.store import Store
from channels.slack.card_surface import read_button, read_press, read_reaction, read_submission
from channels.slack.cards import (
    ACTION_IDS,
    CODEC,
    EMPTY_REPLY,
    VALUE_BUDGET,
    card_blocks,
    reply_error,
)
from tests.fakes.channel_health import serving as running
from tests.fakes.recording_host import RecordingHost, approver_verdict
from tests.fakes.slack_server import FakeSlack, block_actions, person
from tests.fakes.slack_setup import APPROVER, CARD_APPROVAL_ID, REF, STRANGER, channel_for


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


def test_pending_card_says_everything_and_its_buttons_carry_only_the_id() -> None:
    blocks: Any = card_blocks(card(), reactions=True)
    section, context, actions = blocks
    text = section["text"]["text"]
    assert "file_write" in text and "path: notes.md" in text
    assert "*Why:* writes files" in text
    assert "Ann &lt;ann@example.com&gt;" in text
    note = context["elements"][0]["text"]
    assert "2 min means no" in note and ":white_check_mark:" in note
    buttons = [CODEC.unpack(b["value"]) for b in actions["elements"]]
    assert buttons == [
        Button(approval_id="apr-1", verb=verb)
        for verb in (CardVerb.APPROVE, CardVerb.DENY, CardVerb.ALWAYS, CardVerb.REPLY)
    ]
    for element in actions["elements"]:
        button = CODEC.unpack(element["value"])
        assert isinstance(button, Button)
        assert element["action_id"] == ACTION_IDS[button.verb, button.full_view]


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


def test_a_long_approval_id_still_fits_a_button_value() -> None:
    blocks: Any = card_blocks(card(approval_id="a" * 3000))
    values = [e["value"] for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert all(len(value.encode()) <= VALUE_BUDGET for value in values)
    assert {read_button("hatchway_deny", v) for v in values[1:2]} == {
        Button(approval_id="a" * 3000, verb=CardVerb.DENY)
    }


# -- reading a button ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action_id", "value", "expected"),
    [
        # this version's payloads
        ("hatchway_approve", "ap:apr-1:a", Button(approval_id="apr-1", verb=CardVerb.APPROVE)),
        ("hatchway_show_full", "ap:apr-1:s", Button(approval_id="apr-1", verb=CardVerb.SHOW_FULL)),
        (
            "hatchway_full_always",
            "ap:apr-1:fw",
            Button(approval_id="apr-1", verb=CardVerb.ALWAYS, full_view=True),
        ),
        # drawn before payloads had a format: the bare approval id, the verb in action_id
        ("hatchway_approve", "apr-1", Button(approval_id="apr-1", verb=CardVerb.APPROVE)),
        ("hatchway_deny", "apr-1", Button(approval_id="apr-1", verb=CardVerb.DENY)),
        ("hatchway_always", "apr-1", Button(approval_id="apr-1", verb=CardVerb.ALWAYS)),
        ("hatchway_reply", "apr-1", Button(approval_id="apr-1", verb=CardVerb.REPLY)),
        ("hatchway_show_full", "apr-1", Button(approval_id="apr-1", verb=CardVerb.SHOW_FULL)),
        (
            "hatchway_full_deny",
            "apr-1",
            Button(approval_id="apr-1", verb=CardVerb.DENY, full_view=True),
        ),
        # another format version, a damaged payload, a button this version does not know
        ("hatchway_approve", "v2:apr-1:a:quorum", Unreadable.PAYLOAD),
        ("hatchway_approve", "ap:apr-1:zz", Unreadable.PAYLOAD),
        ("hatchway_approve", "ap::a", Unreadable.PAYLOAD),
        ("hatchway_grant_day", "v3:apr-1:g", Unreadable.PAYLOAD),
        ("hatchway_other", "apr-1", Unreadable.PAYLOAD),
        # not ours, or value and action_id disagree
        ("something_else", "ap:apr-1:a", None),
        ("hatchway_approve", "", None),
        ("hatchway_approve", "ap:apr-1:d", None),
        ("hatchway_approve", "ap:apr-1:fa", None),
    ],
)
def test_button_reading(action_id: str, value: str, expected: Button | Unreadable | None) -> None:
    assert read_button(action_id, value) == expected


def press(action_id: str, value: str = "ap:apr-1:a", **extra: Any) -> dict[str, Any]:
    return block_actions(action_id, value, user="U1", channel="C1", message_ts="1.1", **extra)


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"user": {"id": "U1"}, "actions": []},
        {"user": {}, "actions": [{"action_id": "hatchway_approve", "value": "apr-1"}]},
        {**press("hatchway_approve"), "channel": None, "container": {}},
        # a full view's button outside the full view
        press("hatchway_full_approve", "ap:apr-1:fa"),
        # a modal's button needs its trigger
        {**press("hatchway_reply", "ap:apr-1:r"), "trigger_id": ""},
    ],
)
def test_malformed_presses_read_as_none(payload: dict[str, Any]) -> None:
    assert read_press(payload) is None


def test_a_press_names_its_card_and_whether_it_opens_a_modal() -> None:
    reply = read_press(press("hatchway_reply", "ap:apr-1:r", thread_ts="0.5"))
    assert reply is not None and reply.opens_modal and reply.view is None
    assert reply.button == Button(approval_id="apr-1", verb=CardVerb.REPLY)
    assert (reply.place.channel_id, reply.place.message_ts, reply.place.thread_ts) == (
        "C1",
        "1.1",
        "0.5",
    )
    assert (reply.user_id, reply.trigger_id) == ("U1", "1.2.3")
    approve = read_press(press("hatchway_approve"))
    assert approve is not None and not approve.opens_modal
    unreadable = read_press(press("hatchway_approve", "v9:apr-1:a"))
    assert unreadable is not None and unreadable.button is Unreadable.PAYLOAD
    assert not unreadable.opens_modal


@pytest.mark.parametrize(
    ("name", "verb"),
    [
        ("white_check_mark", CardVerb.APPROVE),
        ("white_check_mark::skin-tone-2", CardVerb.APPROVE),
        ("x", CardVerb.DENY),
        ("infinity", CardVerb.ALWAYS),
        ("tada", None),
    ],
)
def test_reaction_reading(name: str, verb: CardVerb | None) -> None:
    event = {"user": "U1", "reaction": name, "item": {"type": "message", "channel": "C", "ts": "1"}}
    reaction = read_reaction(event)
    assert (reaction.verb if reaction else None) == verb


# -- the reply form --------------------------------------------------------------------------


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
    parsed = read_submission(submission(text, GOOD_METADATA))
    assert parsed is not None
    assert (parsed.text, parsed.user_id, parsed.approval_id) == (expected, "U1", "apr-1")
    assert parsed.place.thread_ts is None
    assert reply_error(parsed.text) == error


@pytest.mark.parametrize("metadata", ["", "not json", "{}", '{"approval_id":"apr-1"}'])
def test_submissions_with_broken_metadata_read_as_none(metadata: str) -> None:
    assert read_submission(submission("text", metadata)) is None


# -- over the wire ---------------------------------------------------------------------------


async def test_a_card_of_the_previous_format_decides_and_another_format_is_refused(
    slack: FakeSlack, store: Store
) -> None:
    """A card drawn before payloads had a format (the bare approval id) still answers; a
    payload of a later format version gets a polite private refusal and reaches nobody."""
    host = RecordingHost(approver_verdict(approvers=[APPROVER], pending=[CARD_APPROVAL_ID]))
    channel = channel_for(slack, store)
    async with running(channel, host):

        def pressed(action_id: str, value: str) -> dict[str, Any]:
            return block_actions(
                action_id, value, user=APPROVER, channel="C0001", message_ts="5.5", thread_ts="5.0"
            )

        for action_id, value in (("hatchway_approve", "v2:x:a"), ("hatchway_grant", "v2:x:g")):
            await slack.wait_ack(await slack.push("interactive", pressed(action_id, value)))
        refusals = await slack.wait_for("chat.postEphemeral", count=2)
        assert [(r.params["user"], r.params["text"]) for r in refusals] == [
            (APPROVER, UNREADABLE_BUTTON)
        ] * 2
        assert {r.params["thread_ts"] for r in refusals} == {"5.0"}

        await slack.wait_ack(
            await slack.push("interactive", pressed("hatchway_always", CARD_APPROVAL_ID))
        )
        (click,) = await host.wait_clicks(1)
    assert (click.approval_id, click.choice, click.user_id, click.channel) == (
        CARD_APPROVAL_ID,
        ApprovalChoice.ALWAYS,
        APPROVER,
        REF,
    )
    assert click.card is not None and click.card.message_id == "5.5"


async def test_an_answer_names_its_person_as_slack_shows_them(
    slack: FakeSlack, store: Store
) -> None:
    """Slack's payload carries the presser's handle (``username``, ``name``), not the name
    Slack shows: a press that may decide names them by their display name (``users.info``),
    else, for a person ``users.info`` cannot tell, by the handle. A press that opens the reply
    form asks nothing first: its trigger lasts 3 seconds."""
    slack.users[APPROVER] = person(APPROVER, "Bea Smith")
    host = RecordingHost(approver_verdict(approvers=[APPROVER], pending=[CARD_APPROVAL_ID]))
    channel = channel_for(slack, store)
    async with running(channel, host):
        presses = [
            ("hatchway_reply", APPROVER),
            ("hatchway_approve", APPROVER),
            ("hatchway_deny", STRANGER),
        ]
        for count, (action_id, user) in enumerate(presses, start=1):
            payload = block_actions(
                action_id,
                CARD_APPROVAL_ID,
                user=user,
                handle=slack.handle_of(user),
                channel="C0001",
                message_ts="5.5",
                trigger_id=slack.issue_trigger(),
            )
            await slack.wait_ack(await slack.push("interactive", payload))
            actions = await host.wait_actions(count)
            if count == 1:
                assert not [c for c in slack.calls if c.method == "users.info"]
    assert [(a.verb, a.actor.name) for a in actions] == [
        (CardVerb.REPLY, "bea smith"),
        (CardVerb.APPROVE, "Bea Smith"),
        (CardVerb.DENY, STRANGER.lower()),
    ]
