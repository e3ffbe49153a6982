"""Deny with a reply on Slack, through the real slack-bolt / slack_sdk against the loopback
fake: what only Slack has. "✏️ Reply instead" opens a modal with ``views.open`` (its shape,
and the card it came from in its metadata), even while the gateway is busy and not once the
trigger expired; a blank reply is a field error and the modal stays open; over the HTTP
Events API too; a reaction on a decided card counts for nothing. Reply instead by an
approver, a stranger, after the decision or a restart is in ``tests/channels/contract``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest

from bot.channel import ApprovalChoice, CardState, SentMessage
from bot.envelope import DeliveryTarget
from bot.store import Store
from channels.slack.adapter import SlackChannel
from channels.slack.card_surface import MODAL_FAILED
from channels.slack.cards import EMPTY_REPLY
from tests.fakes.channel_health import serving as running
from tests.fakes.recording_host import RecordingHost, approver_verdict
from tests.fakes.slack_server import (
    JSON,
    FakeSlack,
    event_callback,
    message_event,
    signed_headers,
)
from tests.fakes.slack_setup import (
    APPROVER,
    CARD_APPROVAL_ID,
    REF,
    SECRET,
    STRANGER,
    card,
    channel_for,
    http_channel,
)

THREAD = "1700000001.000200"
APPROVAL = CARD_APPROVAL_ID  # the id of card()


def host_for(*, pending: bool = True, **kwargs: Any) -> RecordingHost:
    """Approver's clicks accepted, others refused; UNKNOWN when the approval is not pending."""
    verdict = approver_verdict(approvers=[APPROVER], pending=[APPROVAL] if pending else [])
    return RecordingHost(verdict, **kwargs)


async def post_card(channel: SlackChannel, thread: str | None = THREAD) -> SentMessage:
    target = DeliveryTarget(channel=REF, conversation_id="C0001", thread_id=thread)
    return await channel.cards.post_approval_card(target, card())


async def press(slack: FakeSlack, ts: str, action_id: str, user: str) -> None:
    payload = slack.press("C0001", ts, action_id, user=user)
    await slack.wait_ack(await slack.push("interactive", payload))


async def test_reply_instead_opens_the_modal_and_reports_a_deny_with_the_text(
    slack: FakeSlack, store: Store
) -> None:
    host = host_for()
    channel = channel_for(slack, store)
    async with running(channel, host):
        posted = await post_card(channel)
        await press(slack, posted.message_id, "hatchway_reply", APPROVER)
        view = await slack.wait_view()

        assert view["title"]["text"] == "Deny with a reply"
        (field,) = [b for b in view["blocks"] if b["type"] == "input"]
        assert field["label"]["text"] == "What should the assistant be told instead?"
        assert field["optional"] is False
        assert field["element"]["multiline"] is True
        assert field["element"]["max_length"] == 2000
        assert json.loads(view["private_metadata"]) == {
            "approval_id": APPROVAL,
            "channel_id": "C0001",
            "message_ts": posted.message_id,
            "thread_ts": THREAD,
        }

        answer = await slack.submit_view(view["id"], user=APPROVER, text="  Use staging.\n")
        assert answer == {}
        assert view["id"] in slack.closed_views
        (click,) = await host.wait_clicks(1)
        assert click.choice is ApprovalChoice.DENY
        assert (click.approval_id, click.user_id, click.channel) == (APPROVAL, APPROVER, REF)
        assert click.replacement_text == "Use staging."

        # Accepted: no private answer, and the card is left to the approval service. (A
        # later refused click is answered in order, so its answer comes after any other.)
        await press(slack, posted.message_id, "hatchway_approve", STRANGER)
        (ephemeral,) = await slack.wait_for("chat.postEphemeral")
        assert ephemeral.params["user"] == STRANGER
    assert slack.calls_of("chat.update") == []


@pytest.mark.parametrize("blank", ["   ", "\n\n  \t"])
async def test_a_blank_reply_is_refused_in_the_modal(
    slack: FakeSlack, store: Store, blank: str
) -> None:
    host = host_for()
    channel = channel_for(slack, store)
    async with running(channel, host):
        posted = await post_card(channel)
        await press(slack, posted.message_id, "hatchway_reply", APPROVER)
        view = await slack.wait_view()

        answer = await slack.submit_view(view["id"], user=APPROVER, text=blank)
        assert answer == {"response_action": "errors", "errors": {"hatchway_reply": EMPTY_REPLY}}
        assert view["id"] not in slack.closed_views

        # The modal stays open: the approver writes something and sends it.
        assert await slack.submit_view(view["id"], user=APPROVER, text="Not today.") == {}
        (click,) = await host.wait_clicks(1)
        assert click.replacement_text == "Not today."


async def test_the_modal_opens_while_the_gateway_is_busy(slack: FakeSlack, store: Store) -> None:
    release = asyncio.Event()
    host = host_for(hold=release)
    channel = channel_for(slack, store)
    async with running(channel, host):
        posted = await post_card(channel)
        # The inbound worker is now stuck delivering this message to a slow gateway.
        await slack.wait_ack(await slack.push("events_api", event_callback(message_event("hi"))))
        await press(slack, posted.message_id, "hatchway_reply", APPROVER)
        await slack.wait_view()
        assert host.envelopes == []
        release.set()
        await host.wait_envelopes(1)


async def test_an_expired_trigger_is_explained_privately(slack: FakeSlack, store: Store) -> None:
    channel = channel_for(slack, store)
    async with running(channel, host_for()):
        posted = await post_card(channel)
        payload = slack.press("C0001", posted.message_id, "hatchway_reply", user=APPROVER)
        slack.expire_triggers()
        await slack.push("interactive", payload)
        (ephemeral,) = await slack.wait_for("chat.postEphemeral")
        assert (ephemeral.params["user"], ephemeral.params["text"]) == (APPROVER, MODAL_FAILED)
    assert slack.views == {}
    (refused,) = [c for c in slack.calls if c.method == "views.open"]
    assert refused.params["trigger_id"] == payload["trigger_id"]


# -- reactions ---------------------------------------------------------------------------------


async def test_a_reaction_on_a_decided_card_counts_for_nothing(
    slack: FakeSlack, store: Store
) -> None:
    host = host_for()
    channel = channel_for(slack, store, reactions_for_approval=True)
    async with running(channel, host):
        decided = await post_card(channel)
        await channel.cards.update_approval_card(decided, card(CardState.DENIED, APPROVER))
        still_open = await post_card(channel)
        for posted in (decided, still_open):
            item = {"type": "message", "channel": "C0001", "ts": posted.message_id}
            event = {"type": "reaction_added", "user": APPROVER, "reaction": "x", "item": item}
            await slack.push("events_api", event_callback(event))
        (click,) = await host.wait_clicks(1)
    assert click.card is not None and click.card.message_id == still_open.message_id
    assert click.card.target.thread_id == THREAD  # from the card index


# -- HTTP mode ------------------------------------------------------------------------------------


async def test_reply_over_the_http_events_api(slack: FakeSlack, store: Store) -> None:
    host = host_for()
    async with (
        http_channel(slack, store, host) as (channel, url),
        aiohttp.ClientSession() as http,
    ):

        async def interact(payload: JSON) -> tuple[int, str]:
            body = urlencode({"payload": json.dumps(payload)})
            headers = {
                **signed_headers(SECRET, body),
                "Content-Type": "application/x-www-form-urlencoded",
            }
            async with http.post(url, data=body, headers=headers) as response:
                return response.status, await response.text()

        posted = await post_card(channel)
        pressed = slack.press("C0001", posted.message_id, "hatchway_reply", user=APPROVER)
        assert (await interact(pressed))[0] == 200
        view = await slack.wait_view()

        status, text = await interact(slack.view_submission(view["id"], user=APPROVER, text=" "))
        assert status == 200
        assert json.loads(text) == {
            "response_action": "errors",
            "errors": {"hatchway_reply": EMPTY_REPLY},
        }
        status, text = await interact(
            slack.view_submission(view["id"], user=APPROVER, text="Ask Ann first.")
        )
        assert (status, text) == (200, "")
        (click,) = await host.wait_clicks(1)
        assert (click.choice, click.replacement_text) == (ApprovalChoice.DENY, "Ask Ann first.")
