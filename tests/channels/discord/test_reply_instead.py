"""Deny with a reply on Discord, with the real discord.py against the fake: what only Discord
has. "✏️ Reply instead" answers with a modal (callback type 9, its shape); a submission
(MODAL_SUBMIT over the gateway, its field in a label or an action row) reaches the host as a
deny with the text, the submitter's roles with it, and is answered ephemerally; a submission
by a stranger is not authorised. Reply instead by an approver, a stranger, blank, after the
decision or a restart is in ``tests/channels/contract``, alike on every platform.
"""

from __future__ import annotations

import pytest

from bot.channel import ApprovalChoice, ClickVerdict
from bot.store import Store
from channels.discord.cards import FIELD_ID
from tests.fakes.discord_approvals import (
    APPROVAL_ID,
    click,
    ephemeral_text,
    pending_card,
    request_turn,
    submit_reply,
)
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import (
    APPROVER_ROLE,
    BOB,
    CAROL,
    RecordingHost,
    make_channel,
    running,
)

pytestmark = pytest.mark.usefixtures("discord_env")

REPLY = "Use the staging build instead; production is frozen today."


# -- the modal -------------------------------------------------------------------------------


async def test_reply_button_opens_the_modal_without_deciding(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    channel = make_channel(fake, store, approvers=[BOB["id"]])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.cards.post_approval_card(envelope.reply_target, pending_card())
        callback = await click(fake, sent.message_id, "r", BOB)
    assert callback.body == {
        "type": 9,
        "data": {
            "custom_id": f"ap:{APPROVAL_ID}:r",
            "title": "Deny with a reply",
            "components": [
                {
                    "type": 18,
                    "label": "What should the assistant be told instead?",
                    "component": {
                        "type": 4,
                        "style": 2,  # paragraph
                        "label": None,
                        "custom_id": FIELD_ID,
                        "required": True,
                        "max_length": 2000,
                    },
                }
            ],
        },
    }
    assert host.clicks == []  # opening the dialog decides nothing


@pytest.mark.parametrize("in_labels", [True, False])
async def test_approvers_reply_reaches_the_host_as_a_deny_with_the_text(
    fake: FakeDiscord, store: Store, in_labels: bool
) -> None:
    host = RecordingHost(approver_roles=["approvers"], pending=[APPROVAL_ID])
    channel = make_channel(fake, store, approver_roles=["approvers"])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.cards.post_approval_card(envelope.reply_target, pending_card())
        await click(fake, sent.message_id, "r", CAROL, [APPROVER_ROLE])
        callback = await submit_reply(
            fake, sent.message_id, REPLY, CAROL, [APPROVER_ROLE], in_labels=in_labels
        )
    [seen] = host.clicks
    assert (seen.approval_id, seen.choice, seen.user_id) == (
        APPROVAL_ID,
        ApprovalChoice.DENY,
        CAROL["id"],
    )
    assert seen.replacement_text == REPLY
    assert "approvers" in seen.user_roles
    assert ephemeral_text(callback) == ClickVerdict.ACCEPTED.message


async def test_a_strangers_reply_is_not_authorised(fake: FakeDiscord, store: Store) -> None:
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    channel = make_channel(fake, store, approvers=[BOB["id"]])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.cards.post_approval_card(envelope.reply_target, pending_card())
        callback = await submit_reply(fake, sent.message_id, REPLY, CAROL)
    assert [(c.user_id, c.replacement_text) for c in host.clicks] == [(CAROL["id"], REPLY)]
    assert ephemeral_text(callback) == ClickVerdict.NOT_AUTHORISED.message


# -- through the real approval service -------------------------------------------------------
