"""A Discord voice message (the IS_VOICE_MESSAGE flag, one OGG/Opus attachment with
``duration_secs`` and ``waveform``) becomes text the model reads: the whole App behind the
real discord.py against the loopback Discord fake, the transcription fake and the model
fake. In a server with ``require_mention`` a voice message, which has no text, is addressed
only as a reply to the bot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.channel import HealthState
from bot.config import Settings, parse_settings
from channels.discord.adapter import DiscordChannel
from tests.fakes.channel_health import wait_for_health
from tests.fakes.discord_files import VOICE_MESSAGE_FLAG
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import ALICE, DM, said
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.transcription_server import TranscriptionFake
from tests.voice import tables
from tests.voice.conftest import KEY, KEY_ENV
from tests.voice.spoken import clip, opus_seconds

pytestmark = pytest.mark.usefixtures("discord_env")

SPOKEN = "remind me to call the dentist tomorrow morning"


def settings_for(
    fake: FakeDiscord, llm: OpenAIFake, whisper: TranscriptionFake, tmp_path: Path, **voice: Any
) -> Settings:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": 30.0, "transcription_language": "en"},
            "transcription": tables.transcription(whisper, **voice),
            "channels": {
                "discord": {
                    "main": {
                        "api_base_url": fake.base_url,
                        "gateway_url": fake.gateway_url,
                        "guild_ready_timeout_s": 0.05,
                        "allowed_users": [ALICE["id"]],
                    }
                }
            },
            "providers": tables.model(llm),
        },
        environ={KEY_ENV: KEY},
    )


async def voice_sent(fake: FakeDiscord, settings: Settings, *, answer: str) -> None:
    async with App(settings) as app:
        channel = app.channels["discord.main"]
        assert isinstance(channel, DiscordChannel)
        await wait_for_health(channel, HealthState.CONNECTED)
        voice = fake.cdn.voice_message(DM, clip("dentist"), duration_secs=3.16)
        message = said(fake, "", channel_id=DM, attachments=[voice])
        message["flags"] = VOICE_MESSAGE_FLAG
        await fake.dispatch("MESSAGE_CREATE", message)
        await fake.wait_until(lambda: any(answer in p for p in fake.posted(DM)), within=60)


async def test_a_voice_message_is_transcribed_and_echoed(
    fake: FakeDiscord, llm: OpenAIFake, whisper: TranscriptionFake, tmp_path: Path
) -> None:
    whisper.text = SPOKEN
    llm.queue_text("I'll remind you.")
    await voice_sent(
        fake, settings_for(fake, llm, whisper, tmp_path, echo=True), answer="I'll remind you."
    )

    [upload] = whisper.requests
    assert upload.audio == clip("dentist")
    assert abs(opus_seconds(upload.audio) - 3.16) < 0.05
    assert upload.language == "en"  # the agent's hint
    text = tables.user_text(llm)
    assert f"[voice note voice-message.ogg (3 s), transcribed:] {SPOKEN}" in text
    [echo] = [p for p in fake.posted(DM) if "Transcript of your voice note" in p]
    assert SPOKEN in echo


async def test_a_broken_transcription_server_gives_the_user_one_line(
    fake: FakeDiscord, llm: OpenAIFake, whisper: TranscriptionFake, tmp_path: Path
) -> None:
    whisper.queue_error(503)
    whisper.queue_error(503)
    await voice_sent(
        fake, settings_for(fake, llm, whisper, tmp_path), answer="I couldn't transcribe"
    )
    assert llm.requests == []
    assert any("had a server error (HTTP 503)" in p for p in fake.posted(DM))
