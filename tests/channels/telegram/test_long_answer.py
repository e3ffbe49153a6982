"""``delivery.long_answer = "file"`` on Telegram, through python-telegram-bot and the fake Bot
API: an answer that would take more messages than allowed arrives as one ``answer.md`` with
the whole text and its first lines as the caption; short answers, sends without a key, the
default ``split`` and a refused upload go as messages. One test runs the whole daemon."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.config import parse_settings
from bot.envelope import DeliveryTarget
from bot.store import Store
from channels.common.long_answer import ANSWER_NAME, caption_of
from channels.telegram.adapter import TelegramChannel
from channels.telegram.markup import render_chunks
from tests.fakes.channel_health import serving as running
from tests.fakes.recording_host import RecordingHost
from tests.fakes.scripted_provider import ScriptedProvider, reply
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.fakes.telegram_setup import REF, REQUESTER, channel_for, config_for, started

CHAT = -100777
TARGET = DeliveryTarget(
    channel=REF, conversation_id=str(CHAT), thread_id="12", reply_to_message_id=f"{CHAT}:99"
)
#: About four Telegram messages of text, with a code block in the middle.
LONG = (
    "The **migration** touched 3 tables.\nDetails follow below.\n\n"
    + "\n".join(f"- step {i}: moved rows {i * 100} to {i * 100 + 99}" for i in range(180))
    + "\n\n```sql\n"
    + "\n".join(f"UPDATE t SET a = {i} WHERE id < {i};" for i in range(120))
    + "\n```\n\nAll done."
)


@asynccontextmanager
async def live(tg: FakeTelegram, store: Store, **delivery: Any) -> AsyncIterator[TelegramChannel]:
    channel = channel_for(tg, store, delivery=delivery)
    async with running(channel, RecordingHost()):
        yield channel


async def test_a_long_answer_arrives_as_one_markdown_file(tg: FakeTelegram, store: Store) -> None:
    async with live(tg, store, long_answer="file", long_answer_max_messages=2) as channel:
        assert len(render_chunks(LONG)) > 2
        sent = await channel.send(TARGET, LONG, key="turn-1:answer")
    assert not tg.calls_of("sendMessage")
    [call] = tg.calls_of("sendDocument")
    assert call.params["document"] == {"file_name": ANSWER_NAME, "bytes": LONG.encode()}
    assert call.params["message_thread_id"] == 12
    assert call.params["reply_parameters"]["message_id"] == 99
    [shown] = tg.bot_messages(CHAT)
    assert shown["caption"] == (
        "The migration touched 3 tables.\nDetails follow below. …\n\n"
        "(The whole answer is in answer.md.)"
    )
    assert [m.message_id for m in sent] == [f"{CHAT}:{shown['message_id']}"]


@pytest.mark.parametrize(
    ("delivery", "text", "key"),
    [
        ({"long_answer": "file", "long_answer_max_messages": 2}, LONG, ""),
        ({}, LONG, "turn-1:answer"),
        ({"long_answer": "file", "long_answer_max_messages": 9}, LONG, "turn-1:answer"),
        ({"long_answer": "file", "long_answer_max_messages": 1}, "Short **answer**.", "k"),
    ],
    ids=["no key", "split by default", "under the threshold", "short"],
)
async def test_other_sends_go_as_messages(
    tg: FakeTelegram, store: Store, delivery: dict[str, Any], text: str, key: str
) -> None:
    async with live(tg, store, **delivery) as channel:
        sent = await channel.send(TARGET, text, key=key)
    assert not tg.calls_of("sendDocument")
    calls = tg.calls_of("sendMessage")
    assert len(sent) == len(calls) == len(render_chunks(text))


async def test_a_refused_file_is_sent_as_messages(tg: FakeTelegram, store: Store) -> None:
    tg.fail_next("sendDocument", 400, "Bad Request: not enough rights to send documents")
    async with live(tg, store, long_answer="file", long_answer_max_messages=2) as channel:
        sent = await channel.send(TARGET, LONG, key="turn-1:answer")
    assert len(tg.calls_of("sendDocument")) == 1
    shown = tg.bot_messages(CHAT)
    assert len(sent) == len(shown) > 2
    assert "All done." in shown[-1]["text"] and "migration" in shown[0]["text"]


async def test_an_answer_over_the_upload_limit_is_sent_as_messages(
    tg: FakeTelegram, store: Store
) -> None:
    channel = channel_for(tg, store, upload_max_bytes=1000, delivery={"long_answer": "file"})
    async with running(channel, RecordingHost()):
        await channel.send(TARGET, LONG, key="turn-1:answer")
    assert not tg.calls_of("sendDocument") and len(tg.calls_of("sendMessage")) > 2


def test_the_caption_is_the_first_lines() -> None:
    assert caption_of("```python\nprint(1)\n```\n" + "x\n" * 500) == (
        "(The whole answer is in answer.md.)"
    )
    assert caption_of("one\ntwo\nthree\nfour") == (
        "one\ntwo\nthree …\n\n(The whole answer is in answer.md.)"
    )
    words = " ".join(["word"] * 200)
    first = caption_of(words).split("\n\n")[0]
    assert first.endswith("word…") and len(first) <= 281


@pytest.mark.usefixtures("telegram_env")
async def test_the_daemon_sends_a_long_answer_as_a_file(tg: FakeTelegram, tmp_path: Path) -> None:
    base = config_for(tg).model_dump(include={"api_base_url", "file_base_url", "poll_timeout_s"})
    settings = parse_settings(
        {
            "state_dir": str(tmp_path),
            "channels": {
                "telegram": {
                    "main": {
                        **base,
                        "allowed_users": [str(REQUESTER)],
                        "delivery": {"long_answer": "file", "long_answer_max_messages": 2},
                    }
                }
            },
        },
        environ={},
        require_provider=False,
    )
    app = App(settings, provider=ScriptedProvider([reply(LONG)]), tools=[])
    async with app:
        await started(app)
        dm = private_chat(REQUESTER)
        await tg.push({"message": message(dm, user(REQUESTER), "migrate", message_id=10)})
        [call] = await tg.wait_for("sendDocument")
    assert call.params["document"] == {"file_name": ANSWER_NAME, "bytes": LONG.encode()}
    assert call.params["chat_id"] == REQUESTER
    answers = [c for c in tg.calls_of("sendMessage") if "migration" in str(c.params.get("text"))]
    assert answers == []
