"""A listening connection whose network path goes silent (a NAT or firewall forgetting an idle
flow: no reset, no close, nothing) is noticed and opened again, so notifications reach the
replica again; before, it waited for them forever on a dead socket. The path runs through a
loopback TCP relay in front of a real PostgreSQL server (``tests/pg.py``) that can stop
forwarding the flows it carries without closing them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from bot.store import Store
from bot.store.postgres.signals import PgSignals, connector
from tests.pg import PgServer

WAIT_S = 30.0


class Relay:
    """Forwards loopback connections to ``target_port``; :meth:`go_silent` stops moving
    bytes on the flows open now (they stay open), new flows are forwarded again."""

    def __init__(self, target_port: int) -> None:
        self._target_port = target_port
        self._flows: list[asyncio.Event] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._accepted, "127.0.0.1", 0)

    def go_silent(self) -> None:
        for silent in self._flows:
            silent.set()

    async def aclose(self) -> None:
        assert self.server is not None
        self.server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for writer in self._writers:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        await self.server.wait_closed()

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        silent = asyncio.Event()
        self._flows.append(silent)
        self._writers.append(writer)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._target_port)
        self._writers.append(up_writer)
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pump(source, sink, silent))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _pump(
        source: asyncio.StreamReader, sink: asyncio.StreamWriter, silent: asyncio.Event
    ) -> None:
        try:
            while data := await source.read(65536):
                if silent.is_set():
                    continue  # dropped on the floor: the flow is dead, nobody says so
                sink.write(data)
                await sink.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if not silent.is_set():
                sink.close()


@pytest.fixture
async def relay(pg_server: PgServer) -> AsyncIterator[Relay]:
    started = Relay(pg_server.port)
    await started.start()
    try:
        yield started
    finally:
        await started.aclose()


async def test_a_listening_connection_gone_silent_is_opened_again(
    pg_url: str, relay: Relay, pg_server: PgServer
) -> None:
    relayed = pg_url.replace(f":{pg_server.port}/", f":{relay.port}/")
    async with await Store.open_postgres(pg_url) as sender:
        signals = PgSignals(sender.db, connector(relayed, password=None), probe_s=0.5)
        heard: list[str] = []
        try:
            await signals.listen("hatchway_handover", heard.append)
            async with asyncio.timeout(WAIT_S):
                while not heard:  # listening once a notification comes back
                    await sender.signals.notify("hatchway_handover", "before")
                    await asyncio.sleep(0.05)
            relay.go_silent()
            heard.clear()
            async with asyncio.timeout(WAIT_S):
                while "after" not in heard:
                    await sender.signals.notify("hatchway_handover", "after")
                    await asyncio.sleep(0.05)
        finally:
            await signals.aclose()
