"""End to end through the daemon subprocess (``hatchway run``), on each platform's loopback
fake: a voice note goes in, its transcript (from the transcription fake) reaches the model,
the answer comes back, and with ``transcription.echo`` the transcript is posted first; then,
with the transcription server broken, a second voice note gets the documented line and no
model call. On Discord the bot is in a server channel with ``require_mention``: a voice
message has no text, so it is addressed as a reply to the bot's own message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.discord_files import VOICE_MESSAGE_FLAG
from tests.fakes.discord_payloads import message_payload, user_payload
from tests.fakes.openai_server import OpenAIFake, Reply
from tests.fakes.slack_server import event_callback, message_event
from tests.fakes.telegram_server import message, private_chat, user
from tests.fakes.transcription_server import TranscriptionFake
from tests.ops.daemon_process import start_daemon
from tests.reliability.platform_drivers import (
    DISCORD_BOT_ID,
    PLATFORMS,
    DiscordDriver,
    PlatformDriver,
    SlackDriver,
    TelegramDriver,
    driven,
)
from tests.voice.spoken import clip

pytestmark = pytest.mark.long

SPOKEN = "please check the deploy status of the billing service"
LINE = "I couldn't transcribe that voice note: transcription provider whisper had a server error"


async def send_voice(driver: PlatformDriver, conversation: int, audio: bytes) -> None:
    """Conversation ``conversation``'s person sends ``audio`` as a voice note."""
    if isinstance(driver, TelegramDriver):
        file_id = f"VOICE{conversation}"
        driver.fake.file_store.add(file_id, audio, path=f"voice/file_{conversation}.oga")
        chat = driver.chat(conversation)
        voice = {
            "file_id": file_id,
            "file_unique_id": "u" + file_id,
            "duration": 3,
            "mime_type": "audio/ogg",
            "file_size": len(audio),
        }
        payload = message(private_chat(chat), user(chat), "", message_id=conversation, voice=voice)
        await driver.fake.push({"message": payload})
    elif isinstance(driver, SlackDriver):
        event = message_event(
            "",
            user=f"U{conversation:06d}",
            channel=driver.dm(conversation),
            ts=f"1600000000.{conversation:06d}",
            subtype="file_share",
            files=[driver.fake.files.clip(audio, duration_ms=3438)],
        )
        await driver.fake.push("events_api", event_callback(event))
    else:
        assert isinstance(driver, DiscordDriver)
        room = driver.room(conversation)
        bot = user_payload(DISCORD_BOT_ID, "hatchway", bot=True)
        earlier = message_payload(
            id=driver.fake.new_id(), channel_id=room, author=bot, content="Ask me anything."
        )
        voice = message_payload(
            id=driver.fake.new_id(),
            channel_id=room,
            author=user_payload(str(100000000000000000 + conversation), f"u{conversation}"),
            content="",
            guild_id=driver.fake.guild_of(room),
            referenced=earlier,
            attachments=[driver.fake.cdn.voice_message(room, audio, duration_secs=3.44)],
        )
        voice["flags"] = VOICE_MESSAGE_FLAG
        await driver.fake.post(voice)


def write_config(
    path: Path, driver: PlatformDriver, llm: OpenAIFake, whisper: TranscriptionFake
) -> Path:
    path.write_text(
        f"""
[agent]
system_prompt = "test"
turn_timeout_s = 300

[providers.default]
kind = "openai"
base_url = "{llm.base_url}"
model = "gpt-4o-mini"
api_key_env = "VOICE_E2E_LLM_KEY"
max_retries = 0

[transcription]
provider = "whisper"
echo = true

[transcription.providers.whisper]
base_url = "{whisper.base_url}"
api_key_env = "VOICE_E2E_WHISPER_KEY"
max_retries = 1
timeout_s = 60

[logging]
level = "info"
format = "json"
{driver.channel_table()}""",
        encoding="utf-8",
    )
    return path


def answer(body: dict[str, Any]) -> Reply:
    """The model repeats what the user's last message said, so the test sees what it read."""
    content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
    return Reply(text="I read: " + text.split("\n", 1)[0])


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_a_voice_note_is_answered_echoed_and_a_broken_server_gives_the_line(
    platform: str, tmp_path: Path
) -> None:
    async with (
        driven(platform, conversations=3) as driver,
        OpenAIFake() as llm,
        TranscriptionFake(key="whisper-e2e-key") as whisper,
    ):
        llm.answer_with(answer)
        whisper.text = SPOKEN
        config = write_config(tmp_path / "hatchway.toml", driver, llm, whisper)
        env = driver.environment() | {
            "VOICE_E2E_LLM_KEY": "sk-voice-e2e",
            "VOICE_E2E_WHISPER_KEY": "whisper-e2e-key",
        }
        async with start_daemon(config, env=env) as daemon:
            await daemon.wait_notify("READY", "1")
            await driver.connected()
            await send_voice(driver, 1, clip("deploy"))
            await driver.wait_post(1, "I read: [voice note", wait_s=120)

            [upload] = whisper.requests
            assert upload.audio == clip("deploy")
            assert upload.authorization == "Bearer whisper-e2e-key"
            [request] = llm.requests
            assert f"transcribed:] {SPOKEN}" in str(request.body["messages"])
            posts = [p.text for p in driver.posts() if p.conversation == 1]
            echoes = [p for p in posts if p.startswith("Transcript of your voice note")]
            assert len(echoes) == 1 and SPOKEN in echoes[0]
            assert posts.index(echoes[0]) < next(
                i for i, p in enumerate(posts) if p.startswith("I read:")
            )

            whisper.broken = True
            await send_voice(driver, 2, clip("weather"))
            await driver.wait_post(2, LINE, wait_s=120)
            assert len(whisper.requests) == 3  # the attempt and its one retry
            assert len(llm.requests) == 1
            events = [e for e in daemon.events if e.get("event") == "voice_not_transcribed"]
            assert len(events) == 1 and "SPOKEN" not in str(events)
            assert "whisper-e2e-key" not in str(daemon.events)
