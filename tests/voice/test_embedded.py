"""The embedded offline transcriber (PocketSphinx in a limited child process) on the spoken
clips: its transcripts hold enough of their key words, a video note's sound is taken out
with ffmpeg, and a Telegram video note reaches the model as text through the whole App.
Judged by key words heard (at least N of M), never by exact text: the figures the threshold
comes from are in docs/attachments.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app import App
from bot.config import parse_settings
from bot.config.transcription import TranscriptionProviderConfig
from bot.errors import TranscriptionError
from bot.transcription.base import Clip
from bot.transcription.embedded import EmbeddedTranscriber
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.fakes.telegram_setup import REQUESTER, started
from tests.voice import tables
from tests.voice.conftest import KEY, KEY_ENV
from tests.voice.spoken import FOLDER, KEY_WORDS, key_words_heard

pytestmark = pytest.mark.long


def embedded(max_s: float = 600) -> EmbeddedTranscriber:
    config = TranscriptionProviderConfig(kind="embedded", timeout_s=120)
    return EmbeddedTranscriber("offline", config, max_s=max_s)


def of(name: str, extension: str = "ogg") -> Clip:
    mime = "audio/ogg" if extension == "ogg" else "video/mp4"
    return Clip(path=FOLDER / f"{name}.{extension}", name=name, mime_type=mime, duration_s=None)


async def test_the_clips_key_words_are_heard() -> None:
    transcriber = embedded()
    heard = 0
    for name in KEY_WORDS:
        transcript = await transcriber.transcribe(of(name))
        assert transcript.provider == "offline"
        assert transcript.model == "pocketsphinx-en-us"
        assert 2 < transcript.duration_s < 4
        heard += key_words_heard(name, transcript.text)
    total = sum(len(words) for words in KEY_WORDS.values())
    assert heard >= 5, f"{heard} of {total} key words heard"


async def test_a_video_notes_sound_is_taken_out_and_heard() -> None:
    transcript = await embedded().transcribe(of("dentist", "mp4"))
    assert key_words_heard("dentist", transcript.text) >= 1, transcript.text


async def test_audio_longer_than_allowed_is_refused_before_it_is_decoded() -> None:
    with pytest.raises(TranscriptionError, match="longer than the 2 seconds allowed"):
        await embedded(max_s=2).transcribe(of("deploy"))


async def test_a_file_that_is_not_audio_is_one_sentence(tmp_path: Path) -> None:
    junk = tmp_path / "voice.ogg"
    junk.write_bytes(b"OggS" + bytes(range(256)) * 40)
    with pytest.raises(TranscriptionError, match="sound could not be read"):
        await embedded().transcribe(
            Clip(path=junk, name="voice.ogg", mime_type="audio/ogg", duration_s=None)
        )


@pytest.mark.usefixtures("telegram_env")
async def test_a_telegram_video_note_reaches_the_model_as_text(
    tg: FakeTelegram, llm: OpenAIFake, tmp_path: Path
) -> None:
    video = (FOLDER / "dentist.mp4").read_bytes()
    tg.file_store.add("NOTE1", video, path="video_notes/file_1.mp4")
    llm.queue_text("Noted.")
    settings = parse_settings(
        {
            "state_dir": str(tmp_path),
            "transcription": {
                "provider": "offline",
                "providers": {"offline": {"kind": "embedded"}},
            },
            "channels": {
                "telegram": {
                    "main": {
                        "api_base_url": tg.base_url,
                        "file_base_url": tg.file_base_url,
                        "poll_timeout_s": 1,
                        "allowed_users": [str(REQUESTER)],
                    }
                }
            },
            "providers": tables.model(llm),
        },
        environ={KEY_ENV: KEY},
    )
    note = {
        "file_id": "NOTE1",
        "file_unique_id": "uNOTE1",
        "length": 96,
        "duration": 3,
        "file_size": len(video),
    }
    async with App(settings) as app:
        await started(app)
        payload = message(
            private_chat(REQUESTER), user(REQUESTER), "", message_id=31, video_note=note
        )
        await tg.push({"message": payload})
        await tg.wait_for(
            "sendMessage", lambda c: "Noted." in str(c.params.get("text")), wait_s=120
        )

    text = tables.user_text(llm)
    assert "[video note video_note.mp4 (3 s), transcribed:] " in text
    spoken = text.split("transcribed:] ", 1)[1].split("\n", 1)[0]
    assert key_words_heard("dentist", spoken) >= 1, spoken
