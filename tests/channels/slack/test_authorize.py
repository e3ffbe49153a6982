"""bolt authorises events with the identity the adapter's start-up ``auth.test`` gave.

The Slack fake refuses every ``auth.test`` after the adapter's own with ``ratelimited`` (as
Slack does in a burst); bolt drops the listener of an event whose authorisation fails, so an
event that asked would never reach the host.
"""

from __future__ import annotations

import asyncio

from bot.envelope import DeliveryTarget
from bot.store import Store
from tests.fakes.channel_health import serving as running
from tests.fakes.recording_host import RecordingHost
from tests.fakes.slack_server import FakeSlack, block_actions, event_callback, message_event
from tests.fakes.slack_setup import APPROVER, CARD_APPROVAL_ID, REF, REQUESTER, card, channel_for

BURST = 100


async def test_a_burst_is_delivered_without_asking_auth_test_again(
    slack: FakeSlack, store: Store
) -> None:
    host = RecordingHost()
    channel = channel_for(slack, store)
    async with running(channel, host):
        (startup,) = slack.calls_of("auth.test")
        posted = await channel.cards.post_approval_card(
            DeliveryTarget(channel=REF, conversation_id="C0001"), card()
        )
        # every later auth.test is refused at once (Retry-After 0: the client's retries
        # are spent quickly, and bolt would drop the event it was asked for)
        slack.rate_limit_next("auth.test", 0, times=10 * BURST)
        messages = [
            event_callback(
                message_event(f"message {n}", ts=f"1700000100.{n:06d}"), event_id=f"Ev{n}"
            )
            for n in range(BURST)
        ]
        pushed = await asyncio.gather(*(slack.push("events_api", m) for m in messages))
        command = slack.slash("new", user=REQUESTER, channel="C0001")
        pushed.append(await slack.push("slash_commands", command))
        click = block_actions(
            "hatchway_approve",
            CARD_APPROVAL_ID,
            user=APPROVER,
            channel="C0001",
            message_ts=posted.message_id,
        )
        pushed.append(await slack.push("interactive", click))
        for envelope_id in pushed:
            await slack.wait_ack(envelope_id)
        envelopes = await host.wait_envelopes(BURST + 1)
        (clicked,) = await host.wait_clicks(1)
    assert sorted(e.text for e in envelopes) == sorted(
        ["/new", *(f"message {n}" for n in range(BURST))]
    )
    assert (clicked.approval_id, clicked.user_id) == (CARD_APPROVAL_ID, APPROVER)
    assert [c for c in slack.calls if c.method == "auth.test"] == [startup]
