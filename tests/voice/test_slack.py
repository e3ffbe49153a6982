"""A Slack audio clip (a file of subtype ``slack_audio``) becomes text the model reads: the
whole App behind the real slack-bolt against the loopback Slack fake, the transcription fake
and the model fake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.channel import HealthState
from bot.config import Settings, parse_settings
from tests.fakes.channel_health import wait_for_health
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.slack_server import FakeSlack, event_callback, message_event
from tests.fakes.slack_setup import REF, REQUESTER, channel_values, slack_channel
from tests.fakes.transcription_server import TranscriptionFake
from tests.voice import tables
from tests.voice.conftest import KEY, KEY_ENV
from tests.voice.spoken import clip, opus_seconds

SPOKEN = "what is the weather in london today"


def settings_for(
    slack: FakeSlack, llm: OpenAIFake, whisper: TranscriptionFake, tmp_path: Path, **voice: Any
) -> Settings:
    channel = channel_values(slack) | {"transcription_language": "en"}
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "transcription": tables.transcription(whisper, **voice),
            "channels": {"slack": {"main": channel}},
            "providers": tables.model(llm),
        },
        environ={KEY_ENV: KEY},
    )


async def clip_sent(slack: FakeSlack, settings: Settings, *, answer: str) -> None:
    """The requester sends an audio clip in a DM; returns once ``answer`` was posted."""
    channel = slack_channel(slack)
    async with App(settings, channels={str(REF): channel}):
        await wait_for_health(channel, HealthState.CONNECTED)
        audio = clip("weather")
        event = message_event(
            "",
            user=REQUESTER,
            channel="D0001",
            subtype="file_share",
            files=[slack.files.clip(audio, duration_ms=2406)],
        )
        await slack.push("events_api", event_callback(event))
        await slack.wait_for(
            "chat.postMessage", where=lambda p: answer in str(p.get("text")), wait_s=60
        )


async def test_an_audio_clip_is_transcribed_and_echoed(
    slack: FakeSlack,
    llm: OpenAIFake,
    whisper: TranscriptionFake,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    whisper.text = SPOKEN
    llm.queue_text("Rain in London today.")
    await clip_sent(
        slack, settings_for(slack, llm, whisper, tmp_path, echo=True), answer="Rain in London"
    )

    [upload] = whisper.requests
    assert upload.audio == clip("weather")
    assert abs(opus_seconds(upload.audio) - 2.41) < 0.05
    assert upload.language == "en"  # the channel's hint
    assert f"[voice note audio_message.ogg (2 s), transcribed:] {SPOKEN}" in tables.user_text(llm)
    posted = [str(c.params.get("text")) for c in slack.calls_of("chat.postMessage")]
    [echo] = [p for p in posted if "Transcript of your voice note" in p]
    assert SPOKEN in echo


async def test_a_broken_transcription_server_gives_the_user_one_line(
    slack: FakeSlack,
    llm: OpenAIFake,
    whisper: TranscriptionFake,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    whisper.broken = True
    await clip_sent(
        slack, settings_for(slack, llm, whisper, tmp_path), answer="I couldn't transcribe"
    )
    assert llm.requests == []
