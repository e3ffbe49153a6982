"""The Slack channel driven through the real slack-bolt / slack_sdk against a loopback fake.

Socket Mode: events and clicks arrive as envelopes over a real websocket and must be acked;
HTTP mode: signed requests to the bolt handler mounted on an aiohttp app. Outbound calls are
asserted on the fake Web API.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from aiohttp import web
from structlog.testing import capture_logs

from bot.channel import (
    CardState,
    Channel,
    ClickVerdict,
    HealthState,
)
from bot.channel_registry import ChannelContext
from bot.envelope import DeliveryTarget
from bot.errors import ChannelAuthError, ConfigError
from bot.store import Store
from channels.slack.adapter import create
from tests.fakes.channel_health import serving as running
from tests.fakes.channel_health import wait_for_health
from tests.fakes.recording_host import ApprovalClick, RecordingHost
from tests.fakes.slack_server import (
    BOT_USER,
    FakeSlack,
    block_actions,
    event_callback,
    message_event,
    params_match,
    signed_headers,
)
from tests.fakes.slack_setup import (
    APP_TOKEN,
    APPROVER,
    BOT_TOKEN,
    REF,
    SECRET,
    STRANGER,
    card,
    channel_for,
    config_for,
    http_channel,
)

# -- inbound over Socket Mode -------------------------------------------------------------------


async def test_app_mention_starts_a_threaded_turn(slack: FakeSlack, store: Store) -> None:
    host = RecordingHost()
    channel = channel_for(slack, store)
    async with running(channel, host):
        text = f"<@{BOT_USER}> please check <https://example.com|the site> &amp; report"
        mention = message_event(text, kind="app_mention", ts="1700000001.000200")
        envelope_id = await slack.push("events_api", event_callback(mention))
        await slack.wait_ack(envelope_id)
        (envelope,) = await host.wait_envelopes(1)

        assert envelope.channel == REF
        assert envelope.message_id == "C0001:1700000001.000200"
        assert envelope.conversation_id == "C0001"
        assert envelope.thread_id == "1700000001.000200"
        assert envelope.sender.id == "UANN"
        assert envelope.sender.display_name == "Ann"
        assert not envelope.sender.is_bot
        assert envelope.text == "please check the site (https://example.com) & report"
        assert envelope.is_group and not envelope.is_direct
        assert envelope.addressed_to_bot
        assert envelope.reply_target.thread_id == "1700000001.000200"
        caps = envelope.capabilities
        assert caps.can_edit and caps.can_react and caps.inline_buttons
        assert caps.approval_backchannel and not caps.terminal_prompt
        assert caps.max_message_chars == 3000

        sent = await channel.send(envelope.reply_target, "**Done**: see `make`")
        (post,) = await slack.wait_for("chat.postMessage")
        assert post.params["channel"] == "C0001"
        assert post.params["thread_ts"] == "1700000001.000200"
        assert post.params["text"] == "*Done*: see `make`"
        assert [m.message_id for m in sent] != [""]


async def test_retries_and_the_mention_pair_are_delivered_once(
    slack: FakeSlack, store: Store
) -> None:
    host = RecordingHost()
    async with running(channel_for(slack, store), host):
        text = f"<@{BOT_USER}> hi"
        as_message = event_callback(message_event(text), event_id="Ev1")
        as_mention = event_callback(message_event(text, kind="app_mention"), event_id="Ev2")
        acks = [
            await slack.push("events_api", as_message),
            await slack.push("events_api", as_mention),
            await slack.push("events_api", as_message, retry_attempt=1),
            await slack.push("events_api", as_mention, retry_attempt=2),
        ]
        for envelope_id in acks:
            await slack.wait_ack(envelope_id)
        later = message_event(f"<@{BOT_USER}> again", ts="1700000002.000300")
        await slack.push("events_api", event_callback(later))
        envelopes = await host.wait_envelopes(2)
        assert [e.message_id for e in envelopes] == [
            "C0001:1700000001.000200",
            "C0001:1700000002.000300",
        ]


async def test_ack_never_waits_for_the_gateway(slack: FakeSlack, store: Store) -> None:
    release = asyncio.Event()
    host = RecordingHost(hold=release)
    async with running(channel_for(slack, store), host):
        envelope_id = await slack.push("events_api", event_callback(message_event("hello")))
        await slack.wait_ack(envelope_id)
        assert host.envelopes == []
        release.set()
        await host.wait_envelopes(1)


async def test_own_edits_and_housekeeping_are_ignored(slack: FakeSlack, store: Store) -> None:
    host = RecordingHost()
    ignored = [
        message_event("my own answer", user=BOT_USER, ts="1.1"),
        message_event("", subtype="message_changed", ts="1.2", message={"text": "edited"}),
        message_event("", subtype="message_deleted", ts="1.3"),
        message_event("<@UANN> has joined the channel", subtype="channel_join", ts="1.4"),
    ]
    kept = [
        message_event(
            "from another bot", user="", bot_id="BOTHER", subtype="bot_message", ts="2.1"
        ),
        message_event(
            "see file",
            subtype="file_share",
            ts="2.2",
            files=[{"id": "F1", "name": "a.png", "mimetype": "image/png", "size": 42}],
        ),
        message_event("dm", channel="D0001", ts="2.3"),
    ]
    async with running(channel_for(slack, store), host):
        for event in [*ignored, *kept]:
            await slack.push("events_api", event_callback(event))
        envelopes = await host.wait_envelopes(3)
        other_bot, with_file, dm = envelopes
        assert other_bot.sender.is_bot and other_bot.sender.id == "BOTHER"
        assert not other_bot.addressed_to_bot
        (attachment,) = with_file.attachments
        assert (attachment.kind, attachment.name, attachment.size) == ("image", "a.png", 42)
        assert dm.is_direct and dm.addressed_to_bot and dm.thread_id is None
        assert dm.reply_target.thread_id is None
        assert len(host.envelopes) == 3


async def test_dropped_socket_reconnects(slack: FakeSlack, store: Store) -> None:
    host = RecordingHost()
    channel = channel_for(slack, store)
    async with running(channel, host):
        await slack.drop_socket()
        await slack.wait_connected(2)
        await wait_for_health(channel, HealthState.CONNECTED)
        await slack.push("events_api", event_callback(message_event("after", channel="D0001")))
        (envelope,) = await host.wait_envelopes(1)
        assert envelope.text == "after"
    assert len(slack.calls_of("apps.connections.open")) >= 2


@pytest.mark.parametrize(
    ("bot_token", "app_token", "method"),
    [
        ("xoxb-wrong-token-000", APP_TOKEN, "auth.test"),
        (BOT_TOKEN, "xapp-wrong-token-000", "apps.connections.open"),
    ],
)
async def test_refused_tokens_fail_clearly(
    slack: FakeSlack, store: Store, bot_token: str, app_token: str, method: str
) -> None:
    channel = channel_for(slack, store, bot_token=bot_token, app_token=app_token)
    with pytest.raises(ChannelAuthError, match="invalid_auth"):
        await asyncio.wait_for(channel.run(RecordingHost()), 10)
    assert channel.health.state is HealthState.FAILED
    assert "invalid_auth" in channel.health.detail
    assert method in channel.health.detail
    assert "wrong-token" not in channel.health.detail


# -- approvals ------------------------------------------------------------------------------------


def _only_approver(click: ApprovalClick) -> ClickVerdict:
    return ClickVerdict.ACCEPTED if click.user_id == APPROVER else ClickVerdict.NOT_AUTHORISED


async def test_card_clicks_reach_the_host_and_refusals_are_ephemeral(
    slack: FakeSlack, store: Store
) -> None:
    host = RecordingHost(_only_approver)
    channel = channel_for(slack, store)
    target = DeliveryTarget(channel=REF, conversation_id="C0001", thread_id="1700000001.000200")
    async with running(channel, host):
        posted = await channel.cards.post_approval_card(target, card())
        (post,) = await slack.wait_for("chat.postMessage")
        assert post.params["thread_ts"] == "1700000001.000200"
        section, context, actions = post.params["blocks"]
        text = section["text"]["text"]
        assert "`shell`" in text and "rm -rf build/ &amp;&amp; make &lt;all&gt;" in text
        assert "*Why:* shell runs commands on the host" in text
        assert "*Asked by:* <@UANN>" in text
        assert "means no" in context["elements"][0]["text"]
        buttons = {b["action_id"]: b["value"] for b in actions["elements"]}
        assert buttons == {
            "hatchway_approve": "ap:apr-7f3a:a",
            "hatchway_deny": "ap:apr-7f3a:d",
            "hatchway_always": "ap:apr-7f3a:w",
            "hatchway_reply": "ap:apr-7f3a:r",
        }
        labels = [b["text"]["text"] for b in actions["elements"]]
        assert labels == ["Approve", "Deny", "Always", "✏️ Reply instead"]

        click = block_actions(
            "hatchway_approve",
            "apr-7f3a",
            user=STRANGER,
            channel="C0001",
            message_ts=posted.message_id,
            thread_ts="1700000001.000200",
        )
        await slack.wait_ack(await slack.push("interactive", click))
        (ephemeral,) = await slack.wait_for("chat.postEphemeral")
        assert ephemeral.params["user"] == STRANGER
        assert ephemeral.params["channel"] == "C0001"
        assert ephemeral.params["thread_ts"] == "1700000001.000200"
        assert ephemeral.params["text"] == ClickVerdict.NOT_AUTHORISED.message

        approve = {**click, "user": {"id": APPROVER}}
        await slack.wait_ack(await slack.push("interactive", approve))
        first, second = await host.wait_clicks(2)
        assert (first.user_id, first.approval_id, first.choice.value) == (
            STRANGER,
            "apr-7f3a",
            "approve",
        )
        assert second.user_id == APPROVER and second.channel == REF

        await channel.cards.update_approval_card(posted, card(CardState.APPROVED, APPROVER))
        (update,) = await slack.wait_for("chat.update")
        assert update.params["ts"] == posted.message_id
        assert [b["type"] for b in update.params["blocks"]] == ["section", "context"]
        assert "Approved" in update.params["blocks"][0]["text"]["text"]
        assert f"<@{APPROVER}>" in update.params["blocks"][1]["elements"][0]["text"]
    assert len(slack.calls_of("chat.postEphemeral")) == 1


async def test_reactions_answer_cards_when_enabled(slack: FakeSlack, store: Store) -> None:
    host = RecordingHost(_only_approver)
    channel = channel_for(slack, store, reactions_for_approval=True)
    target = DeliveryTarget(channel=REF, conversation_id="C0001", thread_id="1.5")
    async with running(channel, host):
        posted = await channel.cards.post_approval_card(target, card())

        def reaction(name: str, user: str, ts: str) -> dict[str, Any]:
            item = {"type": "message", "channel": "C0001", "ts": ts}
            return {"type": "reaction_added", "user": user, "reaction": name, "item": item}

        for event in [
            reaction("x", STRANGER, posted.message_id),
            reaction("tada", APPROVER, posted.message_id),
            reaction("white_check_mark", APPROVER, "999.000001"),
            reaction("white_check_mark", BOT_USER, posted.message_id),
            reaction("white_check_mark", APPROVER, posted.message_id),
        ]:
            await slack.push("events_api", event_callback(event))
        first, second = await host.wait_clicks(2)
        assert (first.user_id, first.choice.value) == (STRANGER, "deny")
        assert (second.user_id, second.choice.value) == (APPROVER, "approve")
        assert second.approval_id == "apr-7f3a"
        (ephemeral,) = await slack.wait_for("chat.postEphemeral")
        assert ephemeral.params["user"] == STRANGER and ephemeral.params["thread_ts"] == "1.5"
        assert len(host.clicks) == 2


# -- outbound -------------------------------------------------------------------------------------


async def test_long_answer_with_code_splits_cleanly(slack: FakeSlack, store: Store) -> None:
    channel = channel_for(slack, store, max_message_chars=500)
    target = DeliveryTarget(channel=REF, conversation_id="C0001", thread_id="1.1")
    code = "\n".join(f"print({i}) # a < b" for i in range(60))
    text = f"# Result\n\nHere is the script:\n\n```python\n{code}\n```\n\nAll **done**."
    sent = await channel.send(target, text)
    posts = slack.calls_of("chat.postMessage")
    assert len(posts) == len(sent) >= 3
    bodies = [str(p.params["text"]) for p in posts]
    for body in bodies:
        assert len(body) <= 500
        assert body.count("```") % 2 == 0
        assert "```python" not in body
    assert all(p.params["thread_ts"] == "1.1" for p in posts)
    joined = "\n".join(bodies)
    for i in range(60):
        assert f"print({i}) # a &lt; b" in joined
    assert bodies[0].startswith("*Result*")
    assert bodies[-1].endswith("All *done*.")


async def test_rate_limit_retry_after_is_honoured_per_method(
    slack: FakeSlack, store: Store
) -> None:
    channel = channel_for(slack, store)
    target = DeliveryTarget(channel=REF, conversation_id="C0001")
    slack.rate_limit_next("chat.postMessage", retry_after_s=1)
    with capture_logs() as logs:
        first = asyncio.create_task(channel.send(target, "one"))
        async with asyncio.timeout(10):
            # The limiter logs once it knows the window; nothing else signals it.
            while not any(e["event"] == "slack_rate_limited" for e in logs):  # noqa: ASYNC110
                await asyncio.sleep(0.01)
    (limited,) = slack.calls_of("chat.postMessage", status=429)
    # Inside the window: the same method is held back, another method is not.
    second = asyncio.create_task(channel.send(target, "two"))
    await channel.react(target, "1.1", "eyes")
    assert len(await first) == len(await second) == 1
    posts = slack.calls_of("chat.postMessage")
    assert sorted(str(p.params["text"]) for p in posts) == ["one", "two"]
    window_ends = limited.at + 1.0
    assert all(p.at >= window_ends - 0.01 for p in posts)
    order = [c.method for c in slack.calls if c.status == 200]
    assert order.index("reactions.add") < order.index("chat.postMessage")


async def test_edit_and_react(slack: FakeSlack, store: Store) -> None:
    channel = channel_for(slack, store)
    target = DeliveryTarget(channel=REF, conversation_id="C0001", thread_id="1.1")
    (message,) = await channel.send(target, "⏳ starting")
    await channel.edit(message, "⏳ running `shell`")
    await channel.edit(message, "⏳ running `shell`")
    await channel.edit(message, "✅ `shell` done")
    updates = slack.calls_of("chat.update")
    assert [u.params["text"] for u in updates] == ["⏳ running `shell`", "✅ `shell` done"]
    await channel.react(target, "C0001:1700000001.000200", "👀")
    (reaction,) = slack.calls_of("reactions.add")
    assert reaction.params == {"channel": "C0001", "timestamp": "1700000001.000200", "name": "eyes"}


async def test_a_running_channel_reuses_its_connection_to_slack(
    slack: FakeSlack, store: Store
) -> None:
    channel = channel_for(slack, store)
    target = DeliveryTarget(channel=REF, conversation_id="C0001", thread_id="1.1")
    (stopped,) = await channel.send(target, "before run: a session per call")
    await channel.edit(stopped, "edited before run")
    before = {c.peer for c in slack.calls_of("chat.postMessage") + slack.calls_of("chat.update")}
    async with running(channel, RecordingHost()):
        (message,) = await channel.send(target, "one")
        await channel.edit(message, "two")
        await channel.send(target, "three")
        await channel.react(target, "C0001:1700000001.000200", "👀")
    during = [c for c in slack.calls if c.at > slack.calls_of("auth.test")[-1].at]
    during = [c for c in during if c.method in ("chat.postMessage", "chat.update", "reactions.add")]
    assert len(before) == 2  # outside run(): slack_sdk's own session per call
    assert len(during) == 4 and len({c.peer for c in during}) == 1


# -- HTTP Events API ------------------------------------------------------------------------------


async def test_http_events_are_signature_checked_and_deduplicated(
    slack: FakeSlack, store: Store
) -> None:
    host = RecordingHost()
    async with http_channel(slack, store, host) as (_, url), aiohttp.ClientSession() as http:
        body = json.dumps(
            event_callback(message_event(f"<@{BOT_USER}> hi", kind="app_mention"), event_id="E1")
        )

        async def post(headers: dict[str, str], data: str = body) -> int:
            async with http.post(url, data=data, headers=headers) as response:
                return response.status

        bad = {**signed_headers(SECRET, body), "X-Slack-Signature": "v0=" + "0" * 64}
        assert await post(bad) == 401
        assert await post(signed_headers("not-the-secret", body)) == 401
        stale = signed_headers(SECRET, body, timestamp=1_600_000_000)
        assert await post(stale) == 401
        assert await post(signed_headers(SECRET, body)) == 200
        assert await post(signed_headers(SECRET, body, retry=1)) == 200
        other = json.dumps(event_callback(message_event("dm", channel="D0001", ts="3.1")))
        assert await post(signed_headers(SECRET, other), other) == 200
        envelopes = await host.wait_envelopes(2)
        assert [e.message_id for e in envelopes] == ["C0001:1700000001.000200", "D0001:3.1"]

        challenge = json.dumps({"type": "url_verification", "challenge": "c-123", "token": "t"})
        async with http.post(
            url, data=challenge, headers=signed_headers(SECRET, challenge)
        ) as response:
            assert response.status == 200
            assert "c-123" in await response.text()


async def test_http_interactive_clicks(slack: FakeSlack, store: Store) -> None:
    host = RecordingHost(_only_approver)
    async with http_channel(slack, store, host) as (_, url), aiohttp.ClientSession() as http:
        payload = block_actions(
            "hatchway_deny", "apr-1", user=STRANGER, channel="C0001", message_ts="5.5"
        )
        body = urlencode({"payload": json.dumps(payload)})
        headers = {
            **signed_headers(SECRET, body),
            "Content-Type": "application/x-www-form-urlencoded",
        }
        async with http.post(url, data=body, headers=headers) as response:
            assert response.status == 200
        (click,) = await host.wait_clicks(1)
        assert (click.approval_id, click.choice.value, click.user_id) == (
            "apr-1",
            "deny",
            STRANGER,
        )
        (ephemeral,) = await slack.wait_for(
            "chat.postEphemeral", where=params_match({"user": STRANGER})
        )
        assert ephemeral.params["channel"] == "C0001"


# -- construction ---------------------------------------------------------------------------------


async def test_create_reads_secrets_from_the_environment(
    slack: FakeSlack, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = config_for(slack)
    context = ChannelContext(store=store)
    monkeypatch.delenv("HATCHWAY_SLACK_BOT_TOKEN", raising=False)
    monkeypatch.setenv("HATCHWAY_SLACK_APP_TOKEN", APP_TOKEN)
    with pytest.raises(ConfigError, match="HATCHWAY_SLACK_BOT_TOKEN"):
        create(REF, config, context)
    monkeypatch.setenv("HATCHWAY_SLACK_BOT_TOKEN", BOT_TOKEN)
    channel = create(REF, config, context)
    assert isinstance(channel, Channel)
    host = RecordingHost()
    async with running(channel, host):
        await slack.push("events_api", event_callback(message_event("hi", channel="D0001")))
        await host.wait_envelopes(1)
    http_config = config_for(slack, mode="http")
    monkeypatch.delenv("HATCHWAY_SLACK_SIGNING_SECRET", raising=False)
    with pytest.raises(ConfigError, match="HATCHWAY_SLACK_SIGNING_SECRET"):
        create(REF, http_config, ChannelContext(store=store, web_app=web.Application()))
    monkeypatch.setenv("HATCHWAY_SLACK_SIGNING_SECRET", SECRET)
    with pytest.raises(ConfigError, match="server"):
        create(REF, http_config, context)
