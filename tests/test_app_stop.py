"""``App.stop`` is bounded: a part that swallows its cancellation (a library's own reconnect
loop) is cancelled again, a channel whose cancellation came back as an error is not
restarted, and a part that never stops is named and left behind instead of hanging the stop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import structlog

import bot.wiring.parts
from bot.app import App
from bot.channel import ChannelHost
from bot.config import Settings, parse_settings
from bot.envelope import ChannelRef
from tests.fakes.channel import FakeChannel
from tests.fakes.scripted_provider import ScriptedProvider

CONSOLE = ChannelRef(kind="console", alias="main")


class ReconnectingChannel(FakeChannel):
    """An adapter whose platform library reconnects on its own: the first ``swallow``
    cancellations it receives are taken for dropped connections and it goes on."""

    def __init__(self, *, swallow: int) -> None:
        super().__init__(CONSOLE)
        self.swallow = swallow
        self.cancellations = 0
        self.runs = 0

    async def run(self, host: ChannelHost) -> None:
        self.runs += 1
        self.running.set()
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                self.cancellations += 1
                if self.cancellations > self.swallow:
                    raise


class ConvertingChannel(FakeChannel):
    """An adapter whose library turns the cancellation into a network error."""

    runs = 0

    async def run(self, host: ChannelHost) -> None:
        self.runs += 1
        self.running.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise ConnectionResetError("connection closed") from None


def settings(tmp_path: Path) -> Settings:
    return parse_settings(
        {"state_dir": str(tmp_path), "channels": {"console": {"main": {}}}},
        environ={},
        require_provider=False,
    )


async def start(tmp_path: Path, channel: FakeChannel) -> App:
    app = App(settings(tmp_path), provider=ScriptedProvider(), channels={"console.main": channel})
    await app.start()
    async with asyncio.timeout(30):
        await channel.running.wait()
    return app


async def test_a_part_that_swallows_its_cancellation_is_cancelled_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bot.wiring.parts, "CANCEL_AGAIN_S", 0.05)
    channel = ReconnectingChannel(swallow=2)
    app = await start(tmp_path, channel)
    with structlog.testing.capture_logs() as logs:
        async with asyncio.timeout(30):  # failure guard
            await app.stop(drain_timeout_s=0)
    assert channel.cancellations == 3
    assert "app_stop_incomplete" not in [e["event"] for e in logs]


async def test_a_cancellation_turned_into_an_error_is_not_a_crash(tmp_path: Path) -> None:
    channel = ConvertingChannel(CONSOLE)
    app = await start(tmp_path, channel)
    with structlog.testing.capture_logs() as logs:
        async with asyncio.timeout(30):  # failure guard
            await app.stop(drain_timeout_s=0)
    assert channel.runs == 1
    assert "channel_crashed" not in [e["event"] for e in logs]


async def test_a_part_that_never_stops_is_named_and_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bot.wiring.parts, "CLOSE_TIMEOUT_S", 0.3)
    monkeypatch.setattr(bot.wiring.parts, "CANCEL_AGAIN_S", 0.05)
    channel = ReconnectingChannel(swallow=10**9)
    app = await start(tmp_path, channel)
    with structlog.testing.capture_logs() as logs:
        async with asyncio.timeout(30):  # failure guard
            await app.stop(drain_timeout_s=0)
    incomplete = [e for e in logs if e["event"] == "app_stop_incomplete"]
    assert [e["running"] for e in incomplete] == [["channel:console.main"]]
    assert "app_stopped" in [e["event"] for e in logs]
    channel.swallow = 0  # the event loop's own teardown cancels it once more, and it ends
