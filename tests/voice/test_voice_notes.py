""":class:`~bot.transcription.voice.VoiceNotes` against a real SQLite store and the
transcription fake: a transcript kept with the inbox entry is read again, never paid for
twice; a provider that fails is followed by the next of the chain; audio over the size
limit is not sent; and the price of a minute of audio."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.config import Settings, parse_settings
from bot.config.usage import ModelPrice
from bot.envelope import Attachment, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.store import Store
from bot.transcription.voice import AudioInput, VoiceNotes
from bot.turn import TurnIdentity
from bot.usage.pricing import PriceTable
from tests.fakes.transcription_server import TranscriptionFake
from tests.voice.spoken import FOLDER, clip

REF = ChannelRef(kind="telegram", alias="main")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "state.db") as opened:
        yield opened


def settings(*providers: tuple[str, dict[str, Any]], **voice: Any) -> Settings:
    names = [name for name, _ in providers]
    table = {"provider": names[0], "fallback": names[1:], "providers": dict(providers)}
    return parse_settings({"transcription": table | voice}, environ={}, require_provider=False)


async def admitted(store: Store, tmp_path: Path) -> tuple[TurnIdentity, list[AudioInput]]:
    attachment = Attachment(kind="audio", name="voice.ogg", ref="V1", voice=True, duration_s=3)
    envelope = IngressEnvelope(
        channel=REF,
        message_id="1001:7",
        conversation_id="1001",
        sender=Sender(id="1001"),
        text="",
        reply_target=DeliveryTarget(channel=REF, conversation_id="1001"),
        attachments=(attachment,),
        is_direct=True,
        addressed_to_bot=True,
    )
    turn = TurnIdentity(turn_id="t1", session_key="telegram.main:1001", envelope=envelope)
    await store.inbox.admit(turn.inbox, envelope_id=envelope.envelope_id, session_key="s")
    path = tmp_path / "voice.ogg"
    shutil.copy(FOLDER / "deploy.ogg", path)
    size = path.stat().st_size
    return turn, [
        AudioInput(index=0, attachment=attachment, name="voice.ogg", path=path, size=size)
    ]


async def test_a_kept_transcript_is_not_paid_for_twice(store: Store, tmp_path: Path) -> None:
    turn, files = await admitted(store, tmp_path)
    async with TranscriptionFake() as whisper:
        whisper.text = "check the deploy status"
        voice = VoiceNotes(
            store=store, settings=lambda: settings(("w", {"base_url": whisper.base_url}))
        )
        first = await voice.hear(turn, files)
        again = await voice.hear(turn, files)  # the run after a crash
    assert len(whisper.requests) == 1
    assert first.lines == again.lines
    assert first.lines[0].endswith("transcribed:] check the deploy status")
    assert len(first.new) == 1 and again.new == ()


async def test_a_failing_provider_is_followed_by_the_next(store: Store, tmp_path: Path) -> None:
    turn, files = await admitted(store, tmp_path)
    async with TranscriptionFake() as broken, TranscriptionFake() as spare:
        broken.broken = True
        spare.text = "from the spare"
        chain = (
            ("first", {"base_url": broken.base_url, "max_retries": 0}),
            ("second", {"base_url": spare.base_url}),
        )
        heard = await VoiceNotes(store=store, settings=lambda: settings(*chain)).hear(turn, files)
    assert heard.lines[0].endswith("transcribed:] from the spare")
    assert [t.provider for _, t in heard.transcripts] == ["second"]
    assert len(broken.requests) == 1


async def test_audio_over_the_size_limit_is_not_sent(store: Store, tmp_path: Path) -> None:
    turn, files = await admitted(store, tmp_path)
    async with TranscriptionFake() as whisper:
        config = settings(("w", {"base_url": whisper.base_url}), max_bytes=len(clip("deploy")) - 1)
        heard = await VoiceNotes(store=store, settings=lambda: config).hear(turn, files)
    assert whisper.requests == []
    [failure] = heard.failures
    assert failure.startswith("I couldn't transcribe that voice note: it is larger than the")
    assert "was not transcribed: it is larger than" in heard.lines[0]


def test_a_minute_of_audio_is_priced_by_audio_minute() -> None:
    prices = PriceTable({"whisper-1": ModelPrice(audio_minute=0.006)})
    assert prices.audio_cost("whisper-1", 90) == pytest.approx(0.009)
    assert prices.audio_cost("gpt-4o", 90) is None
    with pytest.raises(ValueError, match="needs input and output"):
        ModelPrice.model_validate({"input": 1.0})


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (b"<html><body>Bad gateway</body></html>", "sent a reply that is not valid JSON"),
        (b"x" * (5 * 1024 * 1024), "sent a reply larger than allowed"),
        (b'{"words": "no text field"}', "sent a reply we cannot read"),
    ],
    ids=["html", "5 MB", "no text"],
)
async def test_a_reply_that_is_not_a_transcript_is_one_line(
    store: Store, tmp_path: Path, raw: bytes, said: str
) -> None:
    turn, files = await admitted(store, tmp_path)
    async with TranscriptionFake() as whisper:
        whisper.raw = raw
        config = settings(("w", {"base_url": whisper.base_url, "max_retries": 0}))
        heard = await VoiceNotes(store=store, settings=lambda: config).hear(turn, files)
    [failure] = heard.failures
    assert said in failure
    assert heard.transcripts == ()
