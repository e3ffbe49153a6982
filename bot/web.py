"""The daemon's HTTP server: one aiohttp application, served on ``[server] host:port``.

The application is created first and handed to the App (``App(..., web_app=...)``) so that
HTTP-mode adapters (Slack's Events API) can add their routes while channels are built; the
health routes are added by the daemon; :meth:`HttpServer.start` then freezes the router and
listens. The default bind address is loopback: health and metrics are for the host's own
monitoring, and a reverse proxy publishes webhook paths when needed.
"""

from __future__ import annotations

import structlog
from aiohttp import web

from bot.config import ServerConfig
from bot.errors import HatchwayError

log = structlog.get_logger(__name__)


class HttpServer:
    """Serves :attr:`app`. Use :meth:`start` once routes are in, and :meth:`aclose`."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.app = web.Application()
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    async def start(self) -> None:
        """Listen on the configured address; the bound port is in :attr:`port`
        (useful with ``port = 0``). Raises :class:`HatchwayError` when it cannot bind."""
        runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.config.host, self.config.port, shutdown_timeout=2.0)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise HatchwayError(
                f"cannot listen on {self.config.host}:{self.config.port} ([server] host/port): "
                f"{exc.strerror or exc}"
            ) from None
        self._runner = runner
        self.port = _bound_port(runner, self.config.port)
        log.info("http_listening", host=self.config.host, port=self.port)

    async def aclose(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()


def _bound_port(runner: web.AppRunner, configured: int) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
        if isinstance(address, str):  # a unix socket path; no port
            break
    return configured
