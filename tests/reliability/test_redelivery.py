"""Platform redelivery through the whole App: the same platform message delivered twice gets
one answer and one model call.

Each test sends a message, then its redelivery, then a different message in the same
conversation. Turns of one conversation run in order, so once the third message is answered
the redelivery has been handled too; the scripted model has exactly two answers, so a second
turn for the redelivery would take the third message's answer (and the third would fail).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.app import App
from bot.channel import HealthState
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


def two_answers() -> ScriptedProvider:
    return ScriptedProvider([reply("first answer"), reply("third answer")])


async def test_telegram_update_delivered_twice_is_answered_once(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    provider = two_answers()
    app = App(telegram_settings(tg, tmp_path), provider=provider, tools=[])
    chat = private_chat(REQUESTER)
    first = message(chat, user(REQUESTER), "hello", message_id=41)
    async with app:
        await started(app)
        await tg.push({"message": first})
        await tg.wait_for("sendMessage", lambda c: c.params["text"] == "first answer")
        await tg.push({"message": first})  # Telegram re-sends it under a new update id
        await tg.push({"message": message(chat, user(REQUESTER), "again", message_id=42)})
        await tg.wait_for("sendMessage", lambda c: c.params["text"] == "third answer")
    texts = [c.params["text"] for c in tg.calls_of("sendMessage")]
    assert texts.count("first answer") == 1
    assert len(provider.requests) == 2
    assert inbox_counts(tmp_path) == {"done": 2}


async def test_slack_event_retried_with_the_retry_header_is_answered_once(
    slack: FakeSlack, tmp_path: Path
) -> None:
    settings = daemon_settings(slack, tmp_path)
    channel = slack_channel(slack)
    provider = two_answers()
    event = event_callback(message_event("hello", channel="D0001", ts="5.1"), event_id="EvONE")
    app = App(settings, provider=provider, channels={str(REF): channel}, tools=[])
    async with app:
        await wait_for_health(channel, HealthState.CONNECTED)
        await slack.push("events_api", event)
        await slack.wait_for("chat.postMessage", where=lambda p: p.get("text") == "first answer")
        # Slack retries an event it thinks was not acknowledged in time
        await slack.push("events_api", event, retry_attempt=1)
        await slack.push("events_api", event, retry_attempt=2)
        later = message_event("again", channel="D0001", ts="5.2")
        await slack.push("events_api", event_callback(later))
        await slack.wait_for("chat.postMessage", where=lambda p: p.get("text") == "third answer")
    texts = [c.params.get("text") for c in slack.calls_of("chat.postMessage")]
    assert texts.count("first answer") == 1
    assert len(provider.requests) == 2


async def test_discord_message_replayed_after_a_reconnect_is_answered_once(
    discord_fake: FakeDiscord, tmp_path: Path
) -> None:
    provider = two_answers()
    app = App(discord_settings(discord_fake, tmp_path), provider=provider, tools=[])
    first = said(discord_fake, "hello", channel_id=DM)
    async with app:
        channel = app.channels["discord.main"]
        await wait_for_health(channel, HealthState.CONNECTED)
        await discord_fake.dispatch("MESSAGE_CREATE", first)
        await discord_fake.wait_until(lambda: "first answer" in discord_fake.posted(DM))
        # the gateway connection drops; the platform replays the message on the new session
        await discord_fake.drop_connection()
        # (dispatch waits until the client is back on the gateway)
        await discord_fake.dispatch("MESSAGE_CREATE", first)
        await discord_fake.dispatch("MESSAGE_CREATE", said(discord_fake, "again", channel_id=DM))
        await discord_fake.wait_until(lambda: "third answer" in discord_fake.posted(DM))
    assert discord_fake.posted(DM).count("first answer") == 1
    assert len(provider.requests) == 2


def inbox_counts(state_dir: Path) -> dict[str, int]:
    with sqlite3.connect(state_dir / "hatchway.db") as conn:
        return dict(conn.execute("SELECT status, COUNT(*) FROM inbox GROUP BY status").fetchall())
