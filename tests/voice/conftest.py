"""The platform fakes of tests/channels, and the transcription fake."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.channels.conftest import discord_env, fake, slack, telegram_env, tg
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.transcription_server import TranscriptionFake

__all__ = ["discord_env", "fake", "slack", "telegram_env", "tg"]

KEY_ENV = "HATCHWAY_TEST_OPENAI_KEY"
KEY = "sk-test-not-a-real-key-000"


@pytest.fixture
async def llm(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[OpenAIFake]:
    monkeypatch.setenv(KEY_ENV, KEY)
    async with OpenAIFake() as server:
        yield server


@pytest.fixture
async def whisper() -> AsyncIterator[TranscriptionFake]:
    async with TranscriptionFake() as server:
        yield server
