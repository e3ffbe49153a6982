"""End to end: chat commands typed on Slack, answered by the whole daemon.

``/hatchway id`` tells a stranger their user id and the channel id, privately (the response
URL), with no model turn; ``/hatchway stop`` stops the slow turn its user started in a thread
of that channel and says which, while another person's ``/hatchway stop`` stops nothing;
``@bot stop`` typed in the thread stops that thread's turn. A command the rate limits
refuse is acknowledged all the same, and its user told privately once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.app import App
from bot.channel import HealthState
from bot.config import parse_settings
from bot.gateway.commands import NEW_SESSION
from bot.providers.base import CompletionRequest, ProviderReply
from tests.fakes.channel_health import wait_for_health
from tests.fakes.scripted_provider import ScriptedProvider
from tests.fakes.slack_server import BOT_USER, FakeSlack, event_callback, message_event
from tests.fakes.slack_setup import (
    REF,
    REQUESTER,
    STRANGER,
    channel_values,
    daemon_settings,
    slack_channel,
)

THREAD = "1700000001.000200"


class SlowModel:
    """A script step that thinks until its turn is cancelled."""

    def __init__(self) -> None:
        self.thinking = asyncio.Event()

    async def __call__(self, _request: CompletionRequest) -> ProviderReply:
        self.thinking.set()
        await asyncio.Event().wait()  # until /stop cancels the call
        raise AssertionError("never answered")


async def test_slash_id_is_answered_privately_with_the_ids(
    slack: FakeSlack, tmp_path: Path
) -> None:
    provider = ScriptedProvider([])
    channel = slack_channel(slack)
    app = App(daemon_settings(slack, tmp_path), provider=provider, channels={str(REF): channel})
    async with app:
        await wait_for_health(channel, HealthState.CONNECTED)
        payload = slack.slash("id", user=STRANGER, channel="C0SOMEWHERE")
        await slack.wait_ack(await slack.push("slash_commands", payload))
        (answer,) = await slack.wait_responses(payload["response_url"])
    assert answer["response_type"] == "ephemeral"
    assert STRANGER in answer["text"] and "C0SOMEWHERE" in answer["text"]
    assert "thread" not in answer["text"]
    assert provider.requests == []
    assert slack.calls_of("chat.postMessage") == slack.calls_of("chat.postEphemeral") == []


async def test_slash_stop_stops_the_users_turn_in_a_thread_of_the_channel(
    slack: FakeSlack, tmp_path: Path
) -> None:
    model = SlowModel()
    provider = ScriptedProvider([model])
    channel = slack_channel(slack)
    app = App(daemon_settings(slack, tmp_path), provider=provider, channels={str(REF): channel})
    async with app:
        await wait_for_health(channel, HealthState.CONNECTED)
        mention = message_event(f"<@{BOT_USER}> think hard", kind="app_mention", ts=THREAD)
        await slack.push("events_api", event_callback(mention))
        async with asyncio.timeout(10):
            await model.thinking.wait()

        # someone else's /hatchway stop is refused: they are not allowed to talk to the bot
        others = slack.slash("stop", user=STRANGER)
        await slack.wait_ack(await slack.push("slash_commands", others))
        mine = slack.slash("stop", user=REQUESTER)
        await slack.push("slash_commands", mine)
        (answer,) = await slack.wait_responses(mine["response_url"])
        await slack.wait_for(
            "chat.postMessage",
            where=lambda p: p.get("thread_ts") == THREAD and "Stopped" in p["text"],
        )
    assert answer["response_type"] == "ephemeral"
    assert answer["text"].startswith("Stopped 1 turn:")
    assert f"in thread {THREAD}" in answer["text"] and "think hard" in answer["text"]
    # the stranger's command was refused quietly and stopped nothing
    assert [post.body for post in slack.responses.posts] == [answer]
    assert slack.calls_of("chat.postEphemeral") == []
    assert len(provider.requests) == 1


async def test_mention_stop_in_the_thread_stops_that_threads_turn(
    slack: FakeSlack, tmp_path: Path
) -> None:
    model = SlowModel()
    provider = ScriptedProvider([model])
    channel = slack_channel(slack)
    app = App(daemon_settings(slack, tmp_path), provider=provider, channels={str(REF): channel})
    async with app:
        await wait_for_health(channel, HealthState.CONNECTED)
        mention = message_event(f"<@{BOT_USER}> think hard", kind="app_mention", ts=THREAD)
        await slack.push("events_api", event_callback(mention))
        async with asyncio.timeout(10):
            await model.thinking.wait()
        stop = message_event(
            f"<@{BOT_USER}> stop", kind="app_mention", ts="1700000005.000100", thread_ts=THREAD
        )
        await slack.push("events_api", event_callback(stop))
        (stopped,) = await slack.wait_for(
            "chat.postMessage", where=lambda p: "Stopped" in str(p.get("text"))
        )
    assert stopped.params["thread_ts"] == THREAD
    assert not any("Nothing is running" in str(c.params.get("text")) for c in slack.calls)
    assert len(provider.requests) == 1


async def test_a_refused_command_is_acknowledged_and_told_privately_once(
    slack: FakeSlack, tmp_path: Path
) -> None:
    provider = ScriptedProvider([])
    channel = slack_channel(slack)
    limited = parse_settings(
        {
            "state_dir": str(tmp_path),
            # one command or message per ten minutes: nothing refills while the test runs
            "rate_limits": {"per_user": {"messages_per_minute": 0.1, "burst": 1}},
            "channels": {"slack": {"main": channel_values(slack)}},
        },
        environ={},
        require_provider=False,
    )
    async with App(limited, provider=provider, channels={str(REF): channel}):
        await wait_for_health(channel, HealthState.CONNECTED)
        first = slack.slash("new", user=REQUESTER)
        await slack.wait_ack(await slack.push("slash_commands", first))
        (answer,) = await slack.wait_responses(first["response_url"])
        refused = [slack.slash(word, user=REQUESTER) for word in ("new", "forget", "new")]
        for payload in refused:  # each acknowledged within Slack's 3 s all the same
            await slack.wait_ack(await slack.push("slash_commands", payload))
        # the worker hands commands over in order: once this is answered, all were handled
        last = slack.slash("id", user=STRANGER)
        await slack.push("slash_commands", last)
        await slack.wait_responses(last["response_url"])
    assert (answer["text"], answer["response_type"]) == (NEW_SESSION, "ephemeral")
    (notice,) = slack.responses.to(refused[0]["response_url"].rsplit("/", 1)[-1])
    assert notice["response_type"] == "ephemeral"
    assert notice["text"].startswith("You're sending messages faster than I can take them")
    assert [slack.responses.to(p["response_url"].rsplit("/", 1)[-1]) for p in refused[1:]] == [
        [],
        [],
    ]
    assert slack.calls_of("chat.postMessage") == slack.calls_of("chat.postEphemeral") == []
    assert provider.requests == []
