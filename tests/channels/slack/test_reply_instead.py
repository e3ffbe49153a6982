"""Deny with a reply on Slack, and what an answer on a card that is no longer open does.

Driven through the real slack-bolt / slack_sdk against the loopback fake: "✏️ Reply instead"
opens a modal with ``views.open`` (the fake checks the trigger and the view like Slack),
the test submits it as Slack's client would, and the host (a :class:`RecordingHost` whose
verdicts follow an approver list) receives the click. The whole daemon with the real
approval service is in ``test_slack_e2e.py``.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest

from bot.approval.card import card_for
from bot.approval.service import ApprovalService
from bot.channel import ApprovalChoice, CardState, ClickVerdict, SentMessage
from bot.envelope import DeliveryTarget
from bot.store import Store
from bot.store.approvals import ApprovalRecord
from channels.slack.adapter import SlackChannel
from channels.slack.card_surface import MODAL_FAILED
from channels.slack.cards import EMPTY_REPLY
from tests.approval.conftest import make_envelope, make_request
from tests.approval.service_host import ServiceHost
from tests.fakes.approval_service import approval_service as service_over
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
    has_buttons,
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
    return await channel.post_approval_card(target, card())


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


async def test_a_non_approver_is_told_at_once_instead_of_getting_the_modal(
    slack: FakeSlack, store: Store
) -> None:
    host = host_for()
    channel = channel_for(slack, store)
    async with running(channel, host):
        posted = await post_card(channel)
        await press(slack, posted.message_id, "hatchway_reply", STRANGER)

        (ephemeral,) = await slack.wait_for("chat.postEphemeral")
        assert ephemeral.params["user"] == STRANGER
        assert ephemeral.params["text"] == ClickVerdict.NOT_AUTHORISED.message
        assert (ephemeral.params["channel"], ephemeral.params["thread_ts"]) == ("C0001", THREAD)
    assert slack.calls_of("views.open") == []
    assert host.clicks == []
    assert slack.calls_of("chat.update") == []
    assert has_buttons(slack.messages[("C0001", posted.message_id)])


async def test_a_reply_is_still_decided_when_it_is_submitted(
    slack: FakeSlack, store: Store
) -> None:
    """The modal opened while the request was open; it was decided before the submission,
    which the host then refuses like any click, told which card it came from."""
    host = host_for()
    channel = channel_for(slack, store)
    async with running(channel, host):
        posted = await post_card(channel)
        await press(slack, posted.message_id, "hatchway_reply", APPROVER)
        view = await slack.wait_view()
        host.verdict = host_for(pending=False).verdict
        assert await slack.submit_view(view["id"], user=APPROVER, text="use staging") == {}

        (ephemeral,) = await slack.wait_for("chat.postEphemeral")
        assert ephemeral.params["user"] == APPROVER
        assert ephemeral.params["text"] == ClickVerdict.UNKNOWN.message
    (click,) = host.clicks
    assert (click.user_id, click.replacement_text) == (APPROVER, "use staging")
    target = DeliveryTarget(channel=REF, conversation_id="C0001", thread_id=THREAD)
    assert click.card == SentMessage(target=target, message_id=posted.message_id)


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


async def test_a_reply_sent_after_a_restart_is_still_handled(
    slack: FakeSlack, store: Store
) -> None:
    host = host_for()
    before = channel_for(slack, store)
    async with running(before, host):
        posted = await post_card(before)
        await press(slack, posted.message_id, "hatchway_reply", APPROVER)
        view = await slack.wait_view()
    # A new process: nothing of the first one's memory, only what the modal carries.
    async with running(channel_for(slack, store), host):
        await slack.wait_connected(2)
        assert await slack.submit_view(view["id"], user=APPROVER, text="Later, not now.") == {}
        (click,) = await host.wait_clicks(1)
    assert (click.approval_id, click.replacement_text) == (APPROVAL, "Later, not now.")


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


# -- the card an answer came from --------------------------------------------------------------


@pytest.mark.parametrize("action_id", ["hatchway_approve", "hatchway_deny"])
async def test_every_answer_names_the_card_it_came_from(
    slack: FakeSlack, store: Store, action_id: str
) -> None:
    """The adapter reports where the card is and leaves it alone: closing a card whose
    request is no longer open is the approval service's edit."""
    host = host_for(pending=False)
    channel = channel_for(slack, store)
    async with running(channel, host):
        posted = await post_card(channel)
        await press(slack, posted.message_id, action_id, APPROVER)
        (ephemeral,) = await slack.wait_for("chat.postEphemeral")
        assert ephemeral.params["text"] == ClickVerdict.UNKNOWN.message
    (click,) = host.clicks
    target = DeliveryTarget(channel=REF, conversation_id="C0001", thread_id=THREAD)
    assert click.card == SentMessage(target=target, message_id=posted.message_id)
    assert slack.calls_of("chat.update") == []


async def test_a_reaction_on_a_decided_card_counts_for_nothing(
    slack: FakeSlack, store: Store
) -> None:
    host = host_for()
    channel = channel_for(slack, store, reactions_for_approval=True)
    async with running(channel, host):
        decided = await post_card(channel)
        await channel.update_approval_card(decided, card(CardState.DENIED, APPROVER))
        still_open = await post_card(channel)
        for posted in (decided, still_open):
            item = {"type": "message", "channel": "C0001", "ts": posted.message_id}
            event = {"type": "reaction_added", "user": APPROVER, "reaction": "x", "item": item}
            await slack.push("events_api", event_callback(event))
        (click,) = await host.wait_clicks(1)
    assert click.card is not None and click.card.message_id == still_open.message_id
    assert click.card.target.thread_id == THREAD  # from the card index


# -- through the real approval service ---------------------------------------------------------


def approval_service(store: Store, channel: SlackChannel) -> ApprovalService:
    config = {"allowed_users": ["*"], "approvers": [APPROVER]}
    return service_over(store, channel, channel.ref, config)


async def test_a_click_on_a_card_left_by_a_crash_shows_it_expired(
    slack: FakeSlack, store: Store
) -> None:
    """The card was posted, then the daemon died before storing where it is: the restart
    expires the request but cannot edit the card. A click on it can."""
    now = time.time()
    record = ApprovalRecord(
        id=APPROVAL,
        channel=str(REF),
        conversation_id="C0001",
        thread_id=THREAD,
        session_key=f"{REF}:C0001:{THREAD}",
        requester="UANN",
        requester_name="Ann",
        tool="shell",
        fingerprint="0" * 64,
        summary=("command: make",),
        ask_reason="it has side effects",
        created_at=now,
        expires_at=now + 30,
    )
    await store.approvals.create(record)
    channel = channel_for(slack, store)
    service = approval_service(store, channel)
    async with running(channel, ServiceHost(service)):
        posted = await post_card(channel)
        assert await service.expire_pending() == 1
        assert has_buttons(slack.messages[("C0001", posted.message_id)])
        await press(slack, posted.message_id, "hatchway_approve", APPROVER)
        (ephemeral,) = await slack.wait_for("chat.postEphemeral")
    assert ephemeral.params["text"] == ClickVerdict.UNKNOWN.message
    after = slack.messages[("C0001", posted.message_id)]
    assert not has_buttons(after)
    assert after["text"].startswith("⌛ Expired: shell")
    assert after["blocks"][0]["text"]["text"].startswith("⌛ *Expired:* `shell`")


async def test_a_late_click_shows_the_decision_not_the_pending_text(
    slack: FakeSlack, store: Store
) -> None:
    """A copy of the card still offering buttons after the approval was decided elsewhere
    (one whose place was never stored, so the decision's edit missed it): a click on it turns
    it into the decision, the same as the card the service edited."""
    channel = channel_for(slack, store)
    service = approval_service(store, channel)
    envelope = make_envelope(channel=REF, conversation="C0001", sender="UANN")
    async with running(channel, ServiceHost(service)):
        ask = asyncio.create_task(service.ask(make_request(envelope=envelope)))
        await slack.wait_for("chat.postMessage")
        (card_ts,) = [ts for (_, ts), m in slack.messages.items() if "shell" in m["text"]]
        [record] = await store.approvals.list()
        target = DeliveryTarget(channel=REF, conversation_id="C0001", thread_id=THREAD)
        copy = await channel.post_approval_card(target, card_for(record, timeout_s=30))
        await press(slack, card_ts, "hatchway_approve", APPROVER)
        decision = await asyncio.wait_for(ask, 10)
        await press(slack, copy.message_id, "hatchway_deny", APPROVER)
        (ephemeral,) = await slack.wait_for("chat.postEphemeral")
    assert decision.decided_by == APPROVER
    assert ephemeral.params["text"] == ClickVerdict.ALREADY_DECIDED.message
    decided = slack.messages[("C0001", card_ts)]
    shown = slack.messages[("C0001", copy.message_id)]
    assert decided["text"].startswith("✅ Approved: shell") and not has_buttons(decided)
    assert (shown["text"], shown["blocks"]) == (decided["text"], decided["blocks"])


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
