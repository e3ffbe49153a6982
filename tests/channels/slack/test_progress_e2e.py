"""End to end on Slack (the whole daemon, slack-bolt, the loopback fake): a command that
exits 3 is shown as failed in the progress message, never ✅; after ``@bot stop`` in the
thread the message is closed ("⏹ stopped"), not left at ``⏳ shell: …``."""

from __future__ import annotations

from pathlib import Path

from bot.agent.loop import CANCELLED_MESSAGE
from bot.app import App
from bot.channel import HealthState
from bot.gateway.commands import NOTHING_RUNNING
from tests.channels.progress_script import closed, running, script, with_shell
from tests.fakes.channel_health import wait_for_health
from tests.fakes.slack_server import BOT_USER, FakeSlack, event_callback, message_event
from tests.fakes.slack_setup import REF, daemon_settings, slack_channel

THREAD = "1700000001.000200"
WAIT_S = 60.0  # bounds a failure only


def bot_texts(slack: FakeSlack) -> list[str]:
    return [str(m.get("text")) for m in slack.messages.values() if m.get("user") == BOT_USER]


async def test_a_failed_command_and_a_stop_close_the_progress_message(
    slack: FakeSlack, tmp_path: Path
) -> None:
    provider = script()
    channel = slack_channel(slack)
    settings = with_shell(daemon_settings(slack, tmp_path))
    app = App(settings, provider=provider, channels={str(REF): channel})
    async with app:
        await wait_for_health(channel, HealthState.CONNECTED)
        mention = message_event(f"<@{BOT_USER}> run them", kind="app_mention", ts=THREAD)
        await slack.push("events_api", event_callback(mention))
        await slack.wait_for(
            "chat.postMessage",
            where=lambda _p: any(running(text) for text in bot_texts(slack)),
            wait_s=WAIT_S,
        )
        stop = message_event(
            f"<@{BOT_USER}> stop", kind="app_mention", ts="1700000005.000100", thread_ts=THREAD
        )
        await slack.push("events_api", event_callback(stop))
        await slack.wait_for(
            "chat.postMessage", where=lambda p: p.get("text") == CANCELLED_MESSAGE, wait_s=WAIT_S
        )
    texts = bot_texts(slack)
    [progress] = [text for text in texts if "shell" in text]
    assert closed(progress), progress
    assert NOTHING_RUNNING not in texts
    assert len(provider.requests) == 2
