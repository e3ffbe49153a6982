"""A replica's network path to its database, which a test can cut and restore.

:class:`DatabaseLink` listens on a loopback port and forwards every connection to the
database server's. :meth:`DatabaseLink.cut` drops every connection through it at once (a
reset, as when a host's network goes away) and drops each new one as it comes, until
:meth:`DatabaseLink.restore`. :meth:`DatabaseLink.freeze` stops carrying bytes without
closing anything (a network that silently drops packets: every call waits) until
:meth:`DatabaseLink.thaw`, when what waited goes through. The database itself goes on
serving everyone else, so one replica loses it while the others do not.
"""

from __future__ import annotations

import asyncio
import contextlib


class DatabaseLink:
    """Use as ``async with DatabaseLink(host, port) as link``; connect to ``link.port``."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.is_cut = False
        self._flowing = asyncio.Event()
        self._flowing.set()
        self.port = 0

    async def __aenter__(self) -> DatabaseLink:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
        self._drop_all()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def cut(self) -> None:
        """Every connection through the link is reset, and every new one until restored."""
        self.is_cut = True
        self._drop_all()

    def restore(self) -> None:
        self.is_cut = False

    def freeze(self) -> None:
        """Carry nothing more, in either direction, until :meth:`thaw`."""
        self._flowing.clear()

    def thaw(self) -> None:
        self._flowing.set()

    def _drop_all(self) -> None:
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.is_cut:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.transport.abort()
            return
        self._open.update((writer, up_writer))
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await asyncio.gather(
                _pipe(reader, up_writer, self._flowing), _pipe(up_reader, writer, self._flowing)
            )
        finally:
            self._tasks.discard(task)
            for end in (writer, up_writer):
                self._open.discard(end)
                end.transport.abort()


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, flowing: asyncio.Event
) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            await flowing.wait()
            writer.write(data)
            await writer.drain()
    writer.transport.abort()
