"""Serving an aiohttp app on 127.0.0.1 at a free port: how every loopback fake starts and stops.

The platform fakes (:mod:`tests.fakes.telegram_server`, :mod:`~tests.fakes.slack_server`,
:mod:`~tests.fakes.discord_server`), the LLM fakes (:mod:`~tests.fakes.openai_server`, and
through it :mod:`~tests.fakes.anthropic_server`), an adapter's own HTTP input in a test and
the benches that drive them all start here, so they bind and stop the same way. A fake keeps
a :class:`LoopbackServer` for its lifetime (a fake that serves nothing else but one app for an
``async with`` block is a :class:`LoopbackFake`); a test serving an app for one block uses
:func:`serve_loopback`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Self

from aiohttp import web

HOST = "127.0.0.1"


class LoopbackServer:
    """Serves one app at a time on :data:`HOST`, at a port the kernel picks, from
    :meth:`start` until :meth:`aclose`; it may be started again afterwards.

    ``shutdown_timeout`` is how long :meth:`aclose` lets handlers still running finish before
    they are cancelled (a fake's long poll or open socket must not hold a test up);
    ``handler_cancellation`` cancels a handler whose client went away, as a real server does.
    No access log is written. :attr:`port` is 0 until the first start and is kept after a
    stop, so URLs built from it do not change under a test that reads them late.
    """

    def __init__(
        self, *, shutdown_timeout: float = 0.1, handler_cancellation: bool = False
    ) -> None:
        self.shutdown_timeout = shutdown_timeout
        self.handler_cancellation = handler_cancellation
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT``, with no trailing slash."""
        return self.url("")

    def url(self, path: str, *, scheme: str = "http") -> str:
        """``path`` (empty, or starting with ``/``) on this server: ``url("/ws", scheme="ws")``."""
        return f"{scheme}://{HOST}:{self.port}{path}"

    async def start(self, app: web.Application) -> str:
        """Bind and serve ``app``; returns :attr:`origin`. Must not be called while serving."""
        if self._runner is not None:
            raise RuntimeError("the loopback server is already serving")
        runner = web.AppRunner(
            app,
            access_log=None,
            shutdown_timeout=self.shutdown_timeout,
            handler_cancellation=self.handler_cancellation,
        )
        self._runner = runner
        await runner.setup()
        await web.TCPSite(runner, HOST, 0).start()
        self.port = int(runner.addresses[0][1])
        return self.origin

    async def aclose(self) -> None:
        """Stop serving; does nothing when not serving."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()


@asynccontextmanager
async def serve_loopback(
    app: web.Application, *, shutdown_timeout: float = 0.1, handler_cancellation: bool = False
) -> AsyncIterator[LoopbackServer]:
    """``app`` served on loopback for the block (see :class:`LoopbackServer`)."""
    server = LoopbackServer(
        shutdown_timeout=shutdown_timeout, handler_cancellation=handler_cancellation
    )
    await server.start(app)
    try:
        yield server
    finally:
        await server.aclose()


class LoopbackFake:
    """A fake serving :meth:`app` on its :class:`LoopbackServer` (``_server``, set by the
    subclass) from ``async with`` until the block ends."""

    _server: LoopbackServer

    def app(self) -> web.Application:
        """The app to serve, made anew at each start."""
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self._server.start(self.app())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._server.aclose()
