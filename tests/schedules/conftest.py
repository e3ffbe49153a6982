"""Fixtures for schedule tests: a controlled clock, the fake chat channel, and an App with the
scripted model on a real SQLite file."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.config import Settings, parse_settings
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from tests.fakes.channel import GUARD_S, FakeChannel
from tests.fakes.scripted_provider import ScriptedProvider

TELEGRAM = ChannelRef(kind="telegram", alias="main")
USER = "4242"
CHAT = "4242"


class Clock:
    """Wall clock the test moves by hand (epoch seconds)."""

    def __init__(self, start: datetime) -> None:
        self.now = start.timestamp()

    def __call__(self) -> float:
        return self.now

    def set(self, when: datetime) -> None:
        self.now = when.timestamp()


async def wait_until(check: Callable[[], Awaitable[bool]], *, within_s: float = GUARD_S) -> None:
    """Wait for a condition the system reaches on its own (never a timing assertion)."""
    async with asyncio.timeout(within_s):
        # e.g. an inbox row: a turn that posts nothing gives no other signal
        while not await check():  # noqa: ASYNC110
            await asyncio.sleep(0.01)


def make_settings(tmp_path: Path, **schedules: Any) -> Settings:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": 30.0, "parallel_tools": False},
            "channels": {"telegram": {"main": {"allowed_users": [USER]}}},
            "schedules": {"tick_s": 3600.0, **schedules},
        },
        environ={},
        require_provider=False,
    )


def message(text: str, message_id: str = "1") -> IngressEnvelope:
    """A direct message from the allowed Telegram user."""
    return IngressEnvelope(
        channel=TELEGRAM,
        message_id=message_id,
        conversation_id=CHAT,
        sender=Sender(id=USER, display_name="Ana"),
        text=text,
        reply_target=DeliveryTarget(channel=TELEGRAM, conversation_id=CHAT),
        is_direct=True,
        addressed_to_bot=True,
        capabilities=Capabilities(inline_buttons=True),
    )


START = datetime(2030, 4, 10, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def provider() -> ScriptedProvider:
    return ScriptedProvider()


@pytest.fixture
def channel() -> FakeChannel:
    return FakeChannel(TELEGRAM)


AppFactory = Callable[..., Awaitable[App]]


@pytest.fixture
async def start_app(
    tmp_path: Path, clock: Clock, provider: ScriptedProvider, channel: FakeChannel
) -> AsyncIterator[AppFactory]:
    """Start Apps on one database; every started App is stopped at the end."""
    started: list[App] = []

    async def start(**schedules: Any) -> App:
        app = App(
            make_settings(tmp_path, **schedules),
            provider=provider,
            channels={"telegram.main": channel},
            clock=clock,
        )
        await app.start()
        started.append(app)
        return app

    yield start
    for app in started:
        await app.stop(drain_timeout_s=5.0)
