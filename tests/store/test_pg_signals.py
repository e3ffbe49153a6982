"""Notifications between processes of one PostgreSQL database (``store.signals``): two stores
over one real server stand for two replicas. A notification reaches every listener of its
channel, and only of its channel; a listening connection the server drops is opened again
and hears the next ones. SQLite's store has nobody to wake and hears nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.errors import StorageError
from bot.store import Store
from bot.store.signals import MAX_PAYLOAD_BYTES

WAIT_S = 30.0


class Heard:
    def __init__(self) -> None:
        self.payloads: list[str] = []
        self.more = asyncio.Event()

    def __call__(self, payload: str) -> None:
        self.payloads.append(payload)
        self.more.set()

    async def until(self, count: int) -> None:
        async with asyncio.timeout(WAIT_S):
            while len(self.payloads) < count:
                self.more.clear()
                await self.more.wait()


async def listening(store: Store, channel: str, heard: Heard) -> None:
    """Listen, and wait until the connection listens (a notification of its own comes back)."""
    probe = Heard()
    await store.signals.listen(channel, probe)
    async with asyncio.timeout(WAIT_S):
        while not probe.payloads:
            await store.signals.notify(channel, "probe")
            await asyncio.sleep(0.05)
    await store.signals.unlisten(channel, probe)
    await store.signals.listen(channel, heard)


async def test_a_notification_reaches_the_listeners_of_its_channel_in_another_store(
    pg_url: str,
) -> None:
    async with (
        await Store.open_postgres(pg_url) as a,
        await Store.open_postgres(pg_url) as b,
    ):
        handovers, approvals = Heard(), Heard()
        await listening(b, "hatchway_handover", handovers)
        await listening(b, "hatchway_approvals", approvals)
        await a.signals.notify("hatchway_handover", '{"to": "x", "session": "s"}')
        await a.signals.notify("hatchway_approvals", "ap-1")
        await handovers.until(1)
        await approvals.until(1)
        await b.signals.unlisten("hatchway_approvals", approvals)
        await a.signals.notify("hatchway_approvals", "ap-2")
        await a.signals.notify("hatchway_handover", "second")
        await handovers.until(2)
        assert handovers.payloads == ['{"to": "x", "session": "s"}', "second"]
        assert approvals.payloads == ["ap-1"]


async def test_a_dropped_listening_connection_is_opened_again(pg_url: str) -> None:
    async with (
        await Store.open_postgres(pg_url) as a,
        await Store.open_postgres(pg_url) as b,
    ):
        heard = Heard()
        await listening(b, "hatchway_handover", heard)
        # the server ends the listening connection (a restart, a dropped network)
        await a.db.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = 'hatchway-listen'"
        )
        async with asyncio.timeout(WAIT_S):
            while not heard.payloads:
                await a.signals.notify("hatchway_handover", "after")
                await asyncio.sleep(0.05)
        assert set(heard.payloads) == {"after"}


async def test_a_payload_is_bounded_in_bytes_and_one_too_long_is_refused_cleanly(
    pg_url: str,
) -> None:
    async with (
        await Store.open_postgres(pg_url) as a,
        await Store.open_postgres(pg_url) as b,
    ):
        heard = Heard()
        await listening(b, "hatchway_handover", heard)
        # two bytes a letter in UTF-8: the bound counts bytes, not characters
        widest = "ж" * (MAX_PAYLOAD_BYTES // 2) + "x" * (MAX_PAYLOAD_BYTES % 2)
        assert len(widest.encode()) == MAX_PAYLOAD_BYTES
        await a.signals.notify("hatchway_handover", widest)
        await heard.until(1)
        with pytest.raises(StorageError, match=f"more than {MAX_PAYLOAD_BYTES} bytes"):
            await a.signals.notify("hatchway_handover", widest + "x")
        with pytest.raises(StorageError, match="hatchway_handover"):
            await a.signals.notify("hatchway_handover", "ж" * MAX_PAYLOAD_BYTES)
        # nothing else was sent, and the next one is heard
        await a.signals.notify("hatchway_handover", "after")
        await heard.until(2)
        assert heard.payloads == [widest, "after"]


async def test_sqlite_has_nobody_to_wake(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
        heard = Heard()
        await store.signals.listen("hatchway_handover", heard)
        await store.signals.notify("hatchway_handover", "x")
        await asyncio.sleep(0)
        assert heard.payloads == []
