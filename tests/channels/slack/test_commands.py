"""Chat commands on Slack through the real slack-bolt / slack_sdk against the loopback fake.

The ``/hatchway`` slash command over Socket Mode (acked with the envelope id alone, then
delivered as ``/<name>``) and over HTTP (signed: answered; badly signed: 401 and nothing
delivered); payloads of another workspace, app or command refused; the ``@bot stop`` text
form (in a thread it acts on the thread, at the top level like the slash command); answers
to a slash command posted privately to its response URL (Slack's hosts only), or with
``chat.postEphemeral`` when the URL cannot be used.
"""

from __future__ import annotations

import aiohttp
import pytest
from aiohttp import web
from structlog.testing import capture_logs

from bot.envelope import IngressEnvelope
from bot.store import Store
from tests.fakes.channel_health import serving as running
from tests.fakes.loopback import serve_loopback
from tests.fakes.recording_host import RecordingHost
from tests.fakes.slack_commands import as_form
from tests.fakes.slack_server import (
    BOT_USER,
    JSON,
    FakeSlack,
    event_callback,
    message_event,
    signed_headers,
)
from tests.fakes.slack_setup import REF, REQUESTER, SECRET, STRANGER, channel_for, http_channel

# -- the slash command over Socket Mode ---------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "text", "scope"),
    [
        ("stop", "/stop", "conversation"),
        ("NEW", "/new", "session"),
        ("id", "/id", "session"),
        ("help", "/help", "session"),
        ("", "/help", "session"),
        ("deploy v2", "/help", "session"),
        ("  stop   now ", "/stop now", "conversation"),
    ],
)
async def test_slash_command_over_socket_mode(
    slack: FakeSlack, store: Store, typed: str, text: str, scope: str
) -> None:
    host = RecordingHost()
    async with running(channel_for(slack, store), host):
        payload = slack.slash(typed, user=REQUESTER, channel="C0001")
        envelope_id = await slack.push("slash_commands", payload)
        assert await slack.wait_ack(envelope_id) == {"envelope_id": envelope_id}
        (envelope,) = await host.wait_envelopes(1)
    assert envelope.text == text
    assert envelope.command_scope == scope
    assert envelope.channel == REF
    assert envelope.conversation_id == "C0001"
    assert envelope.thread_id is None and envelope.reply_target.thread_id is None
    assert envelope.sender.id == REQUESTER and envelope.sender.display_name == "Ann"
    assert envelope.is_group and not envelope.is_direct and envelope.addressed_to_bot
    assert envelope.capabilities.command_prefix == "/hatchway "
    assert envelope.message_id == f"slash:{REQUESTER}:{payload['trigger_id']}"


async def test_slash_command_in_a_dm_is_direct_and_each_invocation_is_new(
    slack: FakeSlack, store: Store
) -> None:
    host = RecordingHost()
    async with running(channel_for(slack, store), host):
        first = slack.slash("id", user=STRANGER, channel="D0042")
        second = slack.slash("id", user=STRANGER, channel="D0042")
        for payload in (first, second, first):  # the third is a redelivery of the first
            await slack.wait_ack(await slack.push("slash_commands", payload))
        later = slack.slash("new", user=STRANGER, channel="D0042")
        await slack.push("slash_commands", later)
        envelopes = await host.wait_envelopes(3)
    assert [e.text for e in envelopes] == ["/id", "/id", "/new"]
    assert all(e.is_direct and not e.is_group for e in envelopes)
    assert len({e.message_id for e in envelopes}) == 3
    assert envelopes[0].sender.display_name == STRANGER.lower()  # users.info knows no name


async def test_commands_of_another_workspace_app_or_name_are_refused(
    slack: FakeSlack, store: Store
) -> None:
    host = RecordingHost()
    async with running(channel_for(slack, store), host):
        foreign = [
            slack.slash("stop", user=STRANGER, team_id="T0THER"),
            slack.slash("stop", user=STRANGER, api_app_id="A0THER"),
            slack.slash("stop", user=STRANGER, command="/other"),
            {"command": "/hatchway", "text": "stop"},  # malformed: no user, channel, trigger
        ]
        with capture_logs() as logs:
            for payload in foreign:
                await slack.push("slash_commands", payload)
            await slack.push("slash_commands", slack.slash("id", user=REQUESTER))
            (envelope,) = await host.wait_envelopes(1)
    assert envelope.sender.id == REQUESTER
    assert len(host.envelopes) == 1
    refused = [e for e in logs if e["event"] == "slack_command_refused"]
    assert [e["reason"] for e in refused] == ["other_team", "other_app"]
    assert any(e["event"] == "slack_command_malformed" for e in logs)


async def test_the_configured_command_name_is_the_one_answered_and_spelled(
    slack: FakeSlack, store: Store
) -> None:
    host = RecordingHost()
    async with running(channel_for(slack, store, slash_command="/hw"), host):
        await slack.push("slash_commands", slack.slash("stop", user=REQUESTER, command="/hw"))
        dm = event_callback(message_event("hello", channel="D0001"))
        await slack.push("events_api", dm)
        command, message = await host.wait_envelopes(2)
    assert command.text == "/stop"
    assert command.capabilities.command_prefix == message.capabilities.command_prefix == "/hw "


# -- the slash command over HTTP ------------------------------------------------------------------


async def test_slash_command_over_http_is_signature_checked(slack: FakeSlack, store: Store) -> None:
    host = RecordingHost()
    async with http_channel(slack, store, host) as (_, url), aiohttp.ClientSession() as http:

        async def post(payload: dict[str, str], secret: str) -> tuple[int, str]:
            body = as_form(payload)
            headers = {
                **signed_headers(secret, body),
                "Content-Type": "application/x-www-form-urlencoded",
            }
            async with http.post(url, data=body, headers=headers) as response:
                return response.status, await response.text()

        forged = slack.slash("stop", user=STRANGER)
        assert (await post(forged, "not-the-secret"))[0] == 401
        stale = as_form(forged)
        headers = {
            **signed_headers(SECRET, stale, timestamp=1_600_000_000),
            "Content-Type": "application/x-www-form-urlencoded",
        }
        async with http.post(url, data=stale, headers=headers) as response:
            assert response.status == 401

        signed = slack.slash("new", user=REQUESTER)
        assert await post(signed, SECRET) == (200, "")
        (envelope,) = await host.wait_envelopes(1)
    assert envelope.text == "/new" and envelope.sender.id == REQUESTER
    assert len(host.envelopes) == 1  # nothing of the refused requests was delivered


# -- the text form ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "thread_ts", "text", "thread_id", "scope"),
    [
        (f"<@{BOT_USER}> stop", "1700000000.000100", "/stop", "1700000000.000100", "session"),
        (
            f"<@{BOT_USER}|hatchway> /New ",
            "1700000000.000100",
            "/new",
            "1700000000.000100",
            "session",
        ),
        (f"<@{BOT_USER}> stop", None, "/stop", None, "conversation"),
        (f"<@{BOT_USER}> id", None, "/id", None, "session"),
        (f"<@{BOT_USER}> stop please", None, "stop please", "1700000001.000200", "session"),
        (f"stop <@{BOT_USER}>", None, "stop", "1700000001.000200", "session"),
        (f"<@{BOT_USER}> deploy", None, "deploy", "1700000001.000200", "session"),
    ],
)
async def test_mention_and_a_command_word_is_that_command(
    slack: FakeSlack,
    store: Store,
    typed: str,
    thread_ts: str | None,
    text: str,
    thread_id: str | None,
    scope: str,
) -> None:
    host = RecordingHost()
    extra = {"thread_ts": thread_ts} if thread_ts else {}
    async with running(channel_for(slack, store), host):
        event = message_event(typed, kind="app_mention", ts="1700000001.000200", **extra)
        await slack.push("events_api", event_callback(event))
        (envelope,) = await host.wait_envelopes(1)
    assert (envelope.text, envelope.thread_id, envelope.command_scope) == (text, thread_id, scope)
    assert envelope.addressed_to_bot
    assert envelope.message_id == "C0001:1700000001.000200"
    # answered where a message would be: in the thread, or under the top-level command
    assert envelope.reply_target.thread_id == (thread_ts or "1700000001.000200")
    assert envelope.capabilities.command_prefix == "/hatchway "


async def test_another_users_mention_is_no_command(slack: FakeSlack, store: Store) -> None:
    host = RecordingHost()
    async with running(channel_for(slack, store), host):
        event = message_event("<@UOTHER> stop", channel="D0001")
        await slack.push("events_api", event_callback(event))
        (envelope,) = await host.wait_envelopes(1)
    assert envelope.text == "@UOTHER stop"


# -- answers ---------------------------------------------------------------------------------


async def delivered(slack: FakeSlack, host: RecordingHost, payload: JSON) -> IngressEnvelope:
    """Push a slash command over the socket; returns the envelope it became."""
    count = len(host.envelopes) + 1
    await slack.push("slash_commands", payload)
    return (await host.wait_envelopes(count))[-1]


async def test_answers_go_privately_to_the_response_url(slack: FakeSlack, store: Store) -> None:
    host = RecordingHost()
    channel = channel_for(slack, store, max_message_chars=200)
    async with running(channel, host):
        payload = slack.slash("help", user=STRANGER, channel="C0NOTMEMBER")
        envelope = await delivered(slack, host, payload)
        sent = await channel.send(envelope.reply_target, "**Commands:**\n" + "line\n" * 60)
        await channel.react(envelope.reply_target, envelope.message_id, "👀")
        posts = await slack.wait_responses(payload["response_url"], 2)
    assert sent == []
    assert all(p["response_type"] == "ephemeral" for p in posts)
    assert posts[0]["text"].startswith("*Commands:*")
    assert sum(p["text"].count("line") for p in posts) == 60
    for method in ("chat.postMessage", "chat.postEphemeral", "reactions.add"):
        assert slack.calls_of(method) == []


async def test_without_a_usable_response_url_the_answer_is_ephemeral(
    slack: FakeSlack, store: Store
) -> None:
    host = RecordingHost()
    channel = channel_for(slack, store)
    elsewhere: list[web.Request] = []

    async def record(request: web.Request) -> web.Response:
        elsewhere.append(request)
        return web.Response(text="ok")

    other = web.Application()
    other.router.add_post("/{tail:.*}", record)
    async with serve_loopback(other) as impostor, running(channel, host):
        # not Slack's: another port of the same host, and a look-alike host
        for url in (impostor.url("/commands/x"), "https://hooks.slack.com.evil.example/x"):
            payload = {**slack.slash("id", user=STRANGER), "response_url": url}
            with capture_logs() as logs:
                envelope = await delivered(slack, host, payload)
            await channel.send(envelope.reply_target, "Your user id: USTRANGER")
            assert any(e["event"] == "slack_response_url_refused" for e in logs)
            assert not any(url in str(e) for e in logs)
        # Slack's, but expired by the time the answer comes
        expired = slack.slash("id", user=STRANGER)
        slack.responses.expire_all()
        envelope = await delivered(slack, host, expired)
        await channel.send(envelope.reply_target, "Your user id: USTRANGER")
        ephemerals = await slack.wait_for("chat.postEphemeral", 3)
    assert elsewhere == []
    assert all(
        (e.params["user"], e.params["channel"], e.params["text"])
        == (STRANGER, "C0001", "Your user id: USTRANGER")
        for e in ephemerals
    )
    assert slack.responses.posts == [] and len(slack.responses.refused) == 1
    assert slack.calls_of("chat.postMessage") == []
