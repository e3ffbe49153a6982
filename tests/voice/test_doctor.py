"""``hatchway doctor`` on ``[transcription]``: an endpoint that transcribes, one that refuses
the key, and the offline transcriber with and without ffmpeg."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from bot.commands.doctor.transcription import transcription_checks
from bot.config.transcription import TranscriptionConfig
from tests.fakes.transcription_server import TranscriptionFake


def config(**providers: dict[str, object]) -> TranscriptionConfig:
    names = list(providers)
    return TranscriptionConfig.model_validate(
        {"provider": names[0], "fallback": names[1:], "providers": providers}
    )


async def test_an_endpoint_that_transcribes_passes_and_a_refused_key_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HATCHWAY_TEST_WHISPER_KEY", "sk-wrong")
    async with TranscriptionFake(key="sk-right") as fake, aiohttp.ClientSession() as http:
        good = {"base_url": fake.base_url, "api_key_env": "HATCHWAY_TEST_NO_KEY"}
        bad = {"base_url": fake.base_url, "api_key_env": "HATCHWAY_TEST_WHISPER_KEY"}
        fake.key = None
        [ok] = await transcription_checks(config(local=good), http)
        fake.key = "sk-right"
        [refused] = await transcription_checks(config(hosted=bad), http)
        assert fake.requests[0].audio.startswith(b"RIFF")
    assert ok.ok and "transcribes with whisper-1" in ok.render()
    assert not refused.ok
    assert "refused the key (HTTP 401)" in refused.render()
    assert "HATCHWAY_TEST_WHISPER_KEY" in refused.render()
    assert "sk-wrong" not in refused.render()


async def test_the_offline_transcriber_warns_without_ffmpeg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with aiohttp.ClientSession() as http:
        with_ffmpeg = await transcription_checks(config(offline={"kind": "embedded"}), http)
        monkeypatch.setenv("PATH", str(tmp_path))
        without = await transcription_checks(config(offline={"kind": "embedded"}), http)
    assert [line.ok for line in with_ffmpeg] == [True]
    assert len(without) == 2 and all(line.ok for line in without)
    assert without[1].warning and "ffmpeg" in without[1].render()
