"""Approvals on Discord from a test's side: a pending card, the real approval service over
one Discord channel, and what an approver does on the card — press a button, react, or submit
the "Deny with a reply" modal — as Discord delivers it over the gateway."""

from __future__ import annotations

from typing import Any

from bot.approval.gate import ApprovalRequest
from bot.approval.service import ApprovalService
from bot.channel import ApprovalCard
from bot.envelope import IngressEnvelope
from bot.store import Store
from bot.turn import TurnIdentity
from channels.discord.adapter import DiscordChannel
from channels.discord.cards import FIELD_ID
from tests.fakes.approval_service import approval_service as service_over
from tests.fakes.discord_payloads import (
    JSON,
    component_interaction,
    modal_submit_interaction,
    reaction_add,
)
from tests.fakes.discord_server import Call, FakeDiscord
from tests.fakes.discord_setup import BOB, BOT, BOT_ID, GENERAL, RecordingHost, said

APPROVAL_ID = "Xy_9-abcDEF012345"
EPHEMERAL = 64


def pending_card(approval_id: str = APPROVAL_ID) -> ApprovalCard:
    return ApprovalCard(
        approval_id=approval_id,
        tool="shell",
        lines=("command: rm -rf build",),
        reason="it has side effects",
        requested_by="alice",
    )


async def request_turn(fake: FakeDiscord, host: RecordingHost) -> IngressEnvelope:
    await fake.dispatch("MESSAGE_CREATE", said(fake, f"<@{BOT_ID}> clean up", mentions=[BOT]))
    return (await host.wait_envelopes(1))[-1]


async def click(
    fake: FakeDiscord,
    message_id: str,
    code: str,
    user: JSON,
    roles: list[str] | None = None,
    *,
    as_seen: JSON | None = None,
) -> Call:
    """Press the card's button whose custom id ends in ``:code`` (on the message as the
    clicker's client shows it, ``as_seen``, by default the current one); return the callback."""
    message = as_seen or fake.messages[message_id]
    [custom_id] = [
        c["custom_id"]
        for row in message["components"]
        for c in row["components"]
        if c["custom_id"].endswith(f":{code}")
    ]
    interaction_id = fake.new_id()
    payload = component_interaction(
        id=interaction_id,
        message=message,
        custom_id=custom_id,
        user=user,
        guild_id=fake.guild_of(message["channel_id"]),
        roles=roles,
    )
    await fake.dispatch("INTERACTION_CREATE", payload)
    [call] = await fake.wait_for_call("POST", rf"/interactions/{interaction_id}/[^/]+/callback")
    return call


async def react(fake: FakeDiscord, message_id: str, emoji: str, user: JSON) -> None:
    message = fake.messages[message_id]
    payload = reaction_add(message=message, user=user, emoji=emoji, guild_id=fake.guild_of(GENERAL))
    await fake.dispatch("MESSAGE_REACTION_ADD", payload)


def ephemeral_text(call: Call) -> str:
    assert call.body is not None and call.body["type"] == 4
    data: dict[str, Any] = call.body["data"]
    assert data["flags"] & EPHEMERAL
    return str(data["content"])


def approval_service(fake: FakeDiscord, store: Store, channel: DiscordChannel) -> ApprovalService:
    discord_main = {
        "allowed_users": ["*"],
        "approvers": [BOB["id"]],
        "approver_roles": ["approvers"],
        "reactions_for_approval": True,
        "api_base_url": fake.base_url,
        "gateway_url": fake.gateway_url,
    }
    return service_over(store, channel, channel.ref, discord_main)


def shell_request(envelope: IngressEnvelope) -> ApprovalRequest:
    return ApprovalRequest(
        tool="shell",
        arguments={"command": "rm -rf build"},
        call_id="call-1",
        turn=TurnIdentity(
            turn_id="turn-1",
            session_key=f"discord.main:{envelope.conversation_id}",
            envelope=envelope,
        ),
        requires_approval=True,
    )


async def submit_reply(
    fake: FakeDiscord,
    message_id: str,
    text: str,
    user: JSON,
    roles: list[str] | None = None,
    *,
    approval_id: str = APPROVAL_ID,
    in_labels: bool = True,
    custom_id: str | None = None,
) -> Call:
    """Submit the "Deny with a reply" modal opened from the card ``message_id`` (Discord sends
    the card as it is now; ``custom_id``, the modal's, is the reply button's unless given);
    return the callback the adapter answered the submission with."""
    message = fake.messages[message_id]
    interaction_id = fake.new_id()
    payload = modal_submit_interaction(
        id=interaction_id,
        custom_id=custom_id or f"ap:{approval_id}:r",
        values={FIELD_ID: text},
        user=user,
        channel_id=message["channel_id"],
        message=message,
        guild_id=fake.guild_of(message["channel_id"]),
        roles=roles,
        in_labels=in_labels,
    )
    await fake.dispatch("INTERACTION_CREATE", payload)
    [call] = await fake.wait_for_call("POST", rf"/interactions/{interaction_id}/[^/]+/callback")
    return call
