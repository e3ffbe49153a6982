"""A Telegram voice note, audio file and video note become text the model reads: the whole
App behind the real python-telegram-bot against the loopback Bot API fake, a fake
OpenAI-compatible transcription server and a model on loopback whose requests are read
back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.config import Settings, parse_settings
from bot.store import InboxKey, ReplyKind, Store
from channels.telegram.normalise import message_key
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.telegram_server import JSON, FakeTelegram, message, private_chat, user
from tests.fakes.telegram_setup import REQUESTER, started
from tests.fakes.transcription_server import TranscriptionFake
from tests.voice.conftest import KEY, KEY_ENV
from tests.voice.spoken import clip, opus_seconds

pytestmark = pytest.mark.usefixtures("telegram_env")

ENTRY = InboxKey(channel="telegram.main", message_id=message_key(REQUESTER, 21))
SPOKEN = "please check the deploy status of the billing service"


def settings_for(
    tg: FakeTelegram, llm: OpenAIFake, whisper: TranscriptionFake, tmp_path: Path, **voice: Any
) -> Settings:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": 30.0},
            "transcription": {
                "provider": "whisper",
                "providers": {
                    "whisper": {"base_url": whisper.base_url, "max_retries": 0, "timeout_s": 20}
                },
                **voice,
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
            "providers": {
                "default": {
                    "kind": "openai",
                    "base_url": llm.base_url,
                    "model": "gpt-4o",
                    "api_key_env": KEY_ENV,
                    "max_retries": 0,
                }
            },
        },
        environ={KEY_ENV: KEY},
    )


def voice(file_id: str, data: bytes, duration: int) -> JSON:
    return {
        "file_id": file_id,
        "file_unique_id": "u" + file_id,
        "duration": duration,
        "mime_type": "audio/ogg",
        "file_size": len(data),
    }


def user_text(llm: OpenAIFake) -> str:
    [request] = llm.requests
    content = [m for m in request.body["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, str) else "\n".join(p["text"] for p in content)


async def send(tg: FakeTelegram, settings: Settings, fields: JSON, *, answer: str) -> None:
    async with App(settings) as app:
        await started(app)
        payload = message(private_chat(REQUESTER), user(REQUESTER), "", message_id=21, **fields)
        await tg.push({"message": payload})
        await tg.wait_for("sendMessage", lambda c: answer in str(c.params.get("text")), wait_s=60)


async def test_a_voice_note_is_transcribed_and_the_model_reads_the_words(
    tg: FakeTelegram, llm: OpenAIFake, whisper: TranscriptionFake, tmp_path: Path
) -> None:
    audio = clip("deploy")
    tg.file_store.add("VOICE1", audio, path="voice/file_1.oga")
    whisper.text = SPOKEN
    llm.queue_text("The billing service is deployed.")
    settings = settings_for(tg, llm, whisper, tmp_path, language="en")
    await send(
        tg, settings, {"voice": voice("VOICE1", audio, 3)}, answer="billing service is deployed"
    )

    [upload] = whisper.requests
    assert upload.audio == audio
    assert abs(opus_seconds(upload.audio) - 3.44) < 0.05
    assert upload.filename.endswith(".ogg")
    assert upload.model == "whisper-1"
    assert upload.language == "en"
    text = user_text(llm)
    assert f"[voice note voice.ogg (3 s), transcribed:] {SPOKEN}" in text
    # the file stays an attachment as before
    assert "[file voice.ogg" in text
    async with await Store.open(tmp_path / "hatchway.db") as store:
        kept = await store.inbox.transcripts(ENTRY)
        assert kept is not None and SPOKEN in kept
        [transcribed] = [r for r in await store.usage.since(0.0) if r.provider == "whisper"]
        assert abs(transcribed.audio_seconds - 3) < 0.01  # Telegram's duration
        assert transcribed.usage.total_tokens == 0


async def test_echo_posts_the_transcript_back_once(
    tg: FakeTelegram, llm: OpenAIFake, whisper: TranscriptionFake, tmp_path: Path
) -> None:
    audio = clip("dentist")
    tg.file_store.add("VOICE2", audio, path="voice/file_2.oga")
    whisper.text = "remind me to call the dentist tomorrow morning"
    llm.queue_text("Reminder noted.")
    settings = settings_for(tg, llm, whisper, tmp_path, echo=True)
    await send(tg, settings, {"voice": voice("VOICE2", audio, 3)}, answer="Reminder noted.")

    texts = [str(c.params.get("text")) for c in tg.calls_of("sendMessage")]
    echoes = [t for t in texts if "Transcript of your voice note" in t]
    assert len(echoes) == 1
    assert "call the dentist tomorrow morning" in echoes[0]
    assert texts.index(echoes[0]) < next(i for i, t in enumerate(texts) if "Reminder" in t)
    async with await Store.open(tmp_path / "hatchway.db") as store:
        replies = await store.outbox.of_entry(ENTRY)
        assert sorted(r.kind for r in replies) == [ReplyKind.ANSWER, ReplyKind.TRANSCRIPT]


async def test_a_broken_transcription_server_gives_the_user_one_line(
    tg: FakeTelegram, llm: OpenAIFake, whisper: TranscriptionFake, tmp_path: Path
) -> None:
    audio = clip("weather")
    tg.file_store.add("VOICE3", audio, path="voice/file_3.oga")
    whisper.broken = True
    settings = settings_for(tg, llm, whisper, tmp_path)
    await send(
        tg,
        settings,
        {"voice": voice("VOICE3", audio, 2)},
        answer="I couldn't transcribe that voice note",
    )

    [said] = [str(c.params.get("text")) for c in tg.calls_of("sendMessage")]
    assert said == (
        "I couldn't transcribe that voice note: transcription provider whisper had a server"
        " error (HTTP 500)."
    )
    assert llm.requests == []  # nothing to answer: the model is not called


async def test_a_voice_note_longer_than_allowed_is_not_sent_anywhere(
    tg: FakeTelegram, llm: OpenAIFake, whisper: TranscriptionFake, tmp_path: Path
) -> None:
    audio = clip("deploy")
    tg.file_store.add("VOICE4", audio, path="voice/file_4.oga")
    llm.queue_text("I see.")
    settings = settings_for(tg, llm, whisper, tmp_path, max_duration_s=2)
    fields = {"voice": voice("VOICE4", audio, 3), "caption": "about this"}
    await send(tg, settings, fields, answer="I see.")

    assert whisper.requests == []
    text = user_text(llm)
    assert text.startswith("about this")
    assert "[voice note voice.ogg (3 s) was not transcribed: it is longer than 2 s;" in text


async def test_a_turn_whose_budget_is_used_up_pays_for_no_transcription(
    tg: FakeTelegram, llm: OpenAIFake, whisper: TranscriptionFake, tmp_path: Path
) -> None:
    audio = clip("deploy")
    tg.file_store.add("VOICE5", audio, path="voice/file_5.oga")
    settings = settings_for(tg, llm, whisper, tmp_path)
    settings = settings.model_copy(
        update={"budgets": settings.budgets.model_validate({"per_user": {"daily_cost": 0}})}
    )
    await send(tg, settings, {"voice": voice("VOICE5", audio, 3)}, answer="budget is used up")
    assert whisper.requests == []
    assert llm.requests == []
