"""Platform faults through the whole App: the event stream dropped while a turn is running,
and 5xx / 429 answers from the platform's send API. The answer must arrive once, after
recovery, and health must say connected again.

Adapter-level cases already covered elsewhere: Slack socket drop and reconnect
(tests/channels/slack/test_adapter.py::test_dropped_socket_reconnects), Discord gateway drop
(tests/channels/discord/test_health.py::test_dropped_gateway_is_reconnecting_until_resumed),
Telegram polling network errors, 409 conflicts and Retry-After
(tests/channels/telegram/test_adapter.py), invalid tokens on all three (``test_invalid_token_*``,
``test_refused_tokens_fail_clearly``), Telegram send Retry-After bounds
(tests/channels/telegram/test_outbound.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.channel import HealthState
from bot.providers.base import CompletionRequest, ProviderReply
from tests.fakes.channel_health import wait_for_health
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import DM, said
from tests.fakes.discord_setup import settings_for as discord_settings
from tests.fakes.scripted_provider import ScriptedProvider, reply
from tests.fakes.slack_server import FakeSlack, event_callback, message_event
from tests.fakes.slack_setup import REF, daemon_settings, slack_channel
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.fakes.telegram_setup import REQUESTER, started
from tests.fakes.telegram_setup import settings_for as telegram_settings


def held(text: str) -> tuple[asyncio.Event, asyncio.Event, ScriptedProvider]:
    """A model whose answer waits until the test releases it."""
    asked, release = asyncio.Event(), asyncio.Event()

    async def answer(_request: CompletionRequest) -> ProviderReply:
        asked.set()
        await release.wait()
        return reply(text)

    return asked, release, ScriptedProvider([answer])


async def test_slack_socket_dropped_mid_turn_still_delivers_once(
    slack: FakeSlack, tmp_path: Path
) -> None:
    settings = daemon_settings(slack, tmp_path)
    channel = slack_channel(slack)
    asked, release, provider = held("answer after the drop")
    async with App(settings, provider=provider, channels={str(REF): channel}, tools=[]):
        await wait_for_health(channel, HealthState.CONNECTED)
        await slack.push("events_api", event_callback(message_event("hi", channel="D0001")))
        async with asyncio.timeout(30):
            await asked.wait()
        await slack.drop_socket()
        await slack.wait_connected(connections=2, wait_s=30)
        release.set()
        await slack.wait_for(
            "chat.postMessage", where=lambda p: p.get("text") == "answer after the drop"
        )
        await wait_for_health(channel, HealthState.CONNECTED, within=30)
    texts = [c.params.get("text") for c in slack.calls_of("chat.postMessage")]
    assert texts.count("answer after the drop") == 1


async def test_discord_gateway_dropped_mid_turn_still_delivers_once(
    discord_fake: FakeDiscord, tmp_path: Path
) -> None:
    asked, release, provider = held("answer after the drop")
    app = App(discord_settings(discord_fake, tmp_path), provider=provider, tools=[])
    async with app:
        channel = app.channels["discord.main"]
        await wait_for_health(channel, HealthState.CONNECTED)
        await discord_fake.dispatch("MESSAGE_CREATE", said(discord_fake, "hi", channel_id=DM))
        async with asyncio.timeout(30):
            await asked.wait()
        await discord_fake.drop_connection()
        release.set()
        await discord_fake.wait_until(
            lambda: "answer after the drop" in discord_fake.posted(DM), within=30
        )
        # the answer went over REST; the gateway itself must have come back too
        await discord_fake.wait_until(
            lambda: discord_fake.resumes + discord_fake.identifies >= 2, within=30
        )
        await wait_for_health(channel, HealthState.CONNECTED, within=30)
    assert discord_fake.posted(DM).count("answer after the drop") == 1


@pytest.mark.parametrize(
    ("status", "description", "parameters"),
    [
        (502, "Bad Gateway", None),
        (500, "Internal Server Error", None),
        (429, "Too Many Requests: retry after 1", {"retry_after": 1}),
    ],
)
async def test_telegram_send_failures_are_retried_and_delivered_once(
    tg: FakeTelegram,
    tmp_path: Path,
    status: int,
    description: str,
    parameters: dict[str, Any] | None,
) -> None:
    app = App(telegram_settings(tg, tmp_path), provider=ScriptedProvider([reply("survived")]))
    async with app:
        channel = await started(app)
        tg.fail_next("sendMessage", status, description, parameters=parameters, times=2)
        chat = private_chat(REQUESTER)
        await tg.push({"message": message(chat, user(REQUESTER), "hello", message_id=61)})
        await tg.wait_for("sendMessage", lambda c: c.params.get("text") == "survived", count=3)
        assert channel.health.state is HealthState.CONNECTED
    # the two refused attempts and the one that went through; nothing after it
    sends = [c for c in tg.calls_of("sendMessage") if c.params.get("text") == "survived"]
    assert len(sends) == 3
