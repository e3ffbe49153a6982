"""The envelope's JSON form, kept in the inbox so that a restart can resume or answer it."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import fields
from datetime import UTC, datetime

import pytest

from bot.envelope import (
    Attachment,
    Capabilities,
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
    envelope_from_json,
    envelope_to_json,
    target_from_json,
    target_to_json,
    with_route,
)

SLACK = ChannelRef(kind="slack", alias="work")
TELEGRAM = ChannelRef(kind="telegram", alias="main")

# every field differs from its default, so that a field lost on the way fails the test
FULL = IngressEnvelope(
    channel=SLACK,
    message_id="m-1",
    conversation_id="C1",
    sender=Sender(id="U1", display_name='Zoë "z" ✓', is_bot=True, roles=("7001", "Ops ✓")),
    text="héllo 🎉\nline two",
    reply_target=DeliveryTarget(
        channel=TELEGRAM, conversation_id="42", thread_id="7", reply_to_message_id="m-0"
    ),
    thread_id="T1",
    attachments=(
        Attachment(kind="image", name="a.png", mime_type="image/png", size=3, ref="F1"),
        Attachment(kind="file"),
    ),
    is_direct=True,
    is_group=True,
    addressed_to_bot=True,
    capabilities=Capabilities(
        can_edit=True,
        can_react=True,
        inline_buttons=True,
        typing=True,
        max_message_chars=2000,
        approval_backchannel=True,
        terminal_prompt=True,
    ),
    background=True,
    envelope_id="e-1",
    received_at=datetime(2026, 11, 29, 12, 30, 1, 5, tzinfo=UTC),
    announce=False,
)


def test_an_envelope_survives_the_round_trip() -> None:
    assert envelope_from_json(envelope_to_json(FULL)) == FULL


def test_the_json_names_every_field_and_keeps_text_readable() -> None:
    text = envelope_to_json(FULL)
    data = json.loads(text)
    assert list(data) == [f.name for f in fields(IngressEnvelope)]
    assert data["received_at"] == "2026-11-29T12:30:01.000005+00:00"
    assert data["reply_target"]["channel"] == {"kind": "telegram", "alias": "main"}
    assert data["attachments"][1]["size"] is None
    assert "héllo 🎉" in text  # not \u-escaped


def test_a_row_from_before_roles_reads_as_a_sender_without_roles() -> None:
    data = json.loads(envelope_to_json(FULL))
    del data["sender"]["roles"]
    old = envelope_from_json(json.dumps(data))
    assert old.sender == Sender(id="U1", display_name='Zoë "z" ✓', is_bot=True)
    assert old.sender.roles == ()


def test_roles_come_back_as_a_tuple_of_strings() -> None:
    data = json.loads(envelope_to_json(FULL))
    assert data["sender"]["roles"] == ["7001", "Ops ✓"]
    assert envelope_from_json(envelope_to_json(FULL)).sender.roles == ("7001", "Ops ✓")


def walked(value: object) -> object:
    """Every dataclass as an object of its fields, in field order, walked field by field."""
    if isinstance(value, datetime):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: walked(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple):
        return [walked(v) for v in value]
    return value


def test_the_text_is_the_field_by_field_form_rows_already_hold() -> None:
    # the inbox and the outbox ledger keep rows written before the encoding was unrolled
    for envelope in (FULL, dataclasses.replace(FULL, attachments=())):
        assert envelope_to_json(envelope) == json.dumps(walked(envelope), ensure_ascii=False)
    target = DeliveryTarget(channel=SLACK, conversation_id="C1", private_to="U9")
    assert target_to_json(target) == json.dumps(walked(target), ensure_ascii=False)
    assert target_from_json(target_to_json(target)) == target


def test_the_routed_copy_keeps_every_other_field() -> None:
    routed = with_route(FULL, "ops", "agents.ops.routes[0]")
    assert routed == dataclasses.replace(FULL, agent="ops", route="agents.ops.routes[0]")
    assert (FULL.agent, FULL.route) == ("default", "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        routed.agent = "x"  # type: ignore[misc]
