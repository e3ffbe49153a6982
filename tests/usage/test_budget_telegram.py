"""A spent budget through a real platform library: the daemon behind python-telegram-bot
against the loopback Bot API fake, its model the OpenAI-compatible fake.

In a group whose conversation budget the first answer used up, the next message gets exactly
one message, the notice, and no request reaches the model; the one after that gets nothing
at all (one notice per window); the channel's approver, exempt, is still answered. A
restarted daemon on the same database still refuses the conversation, without a second
notice and without a model request.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.channel import HealthState
from bot.config import Settings, parse_settings
from bot.store import InboxKey, InboxStatus
from tests.fakes.channel_health import wait_for_health
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.telegram_server import ApiCall, FakeTelegram, mention, message, user
from tests.fakes.telegram_setup import TOKEN
from tests.usage.harness import WAIT_S

PERSON = 1001
APPROVER = 2002
GROUP = {"id": -100777, "type": "group", "title": "budget room"}
ZONE = "Europe/Berlin"


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(TOKEN) as fake:
        yield fake


@pytest.fixture
async def model() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake() as fake:
        yield fake


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def settings_for(tg: FakeTelegram, model: OpenAIFake, tmp_path: Path) -> Settings:
    telegram: dict[str, Any] = {
        "api_base_url": tg.base_url,
        "file_base_url": tg.file_base_url,
        "poll_timeout_s": 1,
        "reconnect_initial_s": 0.01,
        "reconnect_max_s": 0.05,
        "allowed_users": ["*"],
        "approvers": [str(APPROVER)],
    }
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "providers": {"main": {"kind": "openai", "base_url": model.base_url, "model": "m"}},
            "agent": {"provider": "main"},
            "channels": {"telegram": {"main": telegram}},
            # the fake reports 18 tokens a call: the first answer uses the budget up
            "budgets": {
                "time_zone": ZONE,
                "budget_exempt": ["approvers"],
                "per_conversation": {"daily_tokens": 10},
            },
        },
        environ={},
    )


def said(tg: FakeTelegram) -> list[str]:
    return [str(c.params["text"]) for c in tg.calls_of("sendMessage")]


async def post(tg: FakeTelegram, sender: int, text: str, message_id: int) -> None:
    text = f"@hatchbot {text}"
    update = message(GROUP, user(sender), text, message_id=message_id, entities=mention(text))
    await tg.push({"message": update})


async def done(app: App, message_id: int) -> None:
    """Wait until the daemon marked the message's inbox entry (its turn is over)."""
    key = InboxKey(channel="telegram.main", message_id=f"{GROUP['id']}:{message_id}")
    for _ in range(int(WAIT_S / 0.02)):
        entry = await app.store.inbox.get(key)
        if entry is not None and entry.status in (InboxStatus.DONE, InboxStatus.FAILED):
            assert entry.status is InboxStatus.DONE
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"message {message_id} was never finished")


def text_with(needle: str) -> Callable[[ApiCall], bool]:
    return lambda c: needle in str(c.params.get("text"))


async def started(app: App) -> None:
    await wait_for_health(app.channels["telegram.main"], HealthState.CONNECTED)


def midnight_text() -> str:
    return f"This conversation's daily budget is used up; it resets at 00:00 {ZONE}."


async def test_a_spent_budget_answers_once_and_calls_no_model(
    tg: FakeTelegram, model: OpenAIFake, tmp_path: Path
) -> None:
    model.queue_text("Hello, room.")
    model.queue_text("Deploys are green.")
    app = App(settings_for(tg, model, tmp_path))
    async with app:
        await started(app)
        await post(tg, PERSON, "hello", 10)
        await tg.wait_for("sendMessage", text_with("Hello, room."), wait_s=WAIT_S)
        await done(app, 10)
        before = len(said(tg))

        await post(tg, PERSON, "tell me more", 11)
        [notice] = await tg.wait_for("sendMessage", text_with("budget"), wait_s=WAIT_S)
        await done(app, 11)
        assert notice.params["text"] == midnight_text()
        assert notice.params["chat_id"] == GROUP["id"]
        assert len(said(tg)) == before + 1  # exactly one message: the notice
        assert len(model.requests) == 1

        await post(tg, PERSON, "anyone?", 12)
        await done(app, 12)
        assert len(said(tg)) == before + 1  # one notice per window, not per message
        assert len(model.requests) == 1

        await post(tg, APPROVER, "status of the deploys?", 13)  # exempt: answered
        await tg.wait_for("sendMessage", text_with("Deploys are green."), wait_s=WAIT_S)
        assert len(model.requests) == 2
        await done(app, 13)
        rows = await app.store.usage.since(0)
    assert [r.user_id for r in rows] == [str(PERSON), str(APPROVER)]


async def test_a_restart_keeps_the_budget_spent(
    tg: FakeTelegram, model: OpenAIFake, tmp_path: Path
) -> None:
    model.queue_text("Hello, room.")
    settings = settings_for(tg, model, tmp_path)
    first = App(settings)
    async with first:
        await started(first)
        await post(tg, PERSON, "hello", 20)
        await tg.wait_for("sendMessage", text_with("Hello, room."), wait_s=WAIT_S)
        await post(tg, PERSON, "more", 21)
        await tg.wait_for("sendMessage", text_with("budget"), wait_s=WAIT_S)
        await done(first, 21)
    sent = len(said(tg))

    second = App(settings)
    async with second:
        await started(second)
        await post(tg, PERSON, "are you back?", 22)
        await done(second, 22)
    assert len(model.requests) == 1  # the restarted daemon read the spent budget back
    assert len(said(tg)) == sent  # and the window's notice was given already
