"""End to end on Discord (the whole daemon, discord.py, the loopback fake): a command that
exits 3 is shown as failed in the progress message, never ✅; after ``@bot stop`` the
message is closed ("⏹ stopped"), not left at ``⏳ shell: …``."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.agent.loop import CANCELLED_MESSAGE
from bot.app import App
from bot.channel import HealthState
from bot.gateway.commands import NOTHING_RUNNING
from tests.channels.progress_script import closed, running, script, with_shell
from tests.fakes.channel_health import wait_for_health
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import BOT, BOT_ID, GENERAL, said, settings_for

pytestmark = pytest.mark.usefixtures("discord_env")

WAIT_S = 60.0  # bounds a failure only


def bot_texts(fake: FakeDiscord) -> list[str]:
    return [
        str(m.get("content"))
        for m in fake.messages.values()
        if m["channel_id"] == GENERAL and m["author"]["id"] == BOT_ID
    ]


async def test_a_failed_command_and_a_stop_close_the_progress_message(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    provider = script()
    async with App(with_shell(settings_for(fake, tmp_path)), provider=provider) as app:
        await wait_for_health(app.channels["discord.main"], HealthState.CONNECTED)
        await fake.dispatch("MESSAGE_CREATE", said(fake, f"<@{BOT_ID}> run them", mentions=[BOT]))
        await fake.wait_until(lambda: any(running(text) for text in bot_texts(fake)), within=WAIT_S)
        await fake.dispatch("MESSAGE_CREATE", said(fake, f"<@{BOT_ID}> stop", mentions=[BOT]))
        await fake.wait_until(lambda: CANCELLED_MESSAGE in bot_texts(fake), within=WAIT_S)
    texts = bot_texts(fake)
    [progress] = [text for text in texts if "shell" in text]
    assert closed(progress), progress
    assert NOTHING_RUNNING not in texts
    assert len(provider.requests) == 2
