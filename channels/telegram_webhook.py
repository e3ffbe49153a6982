"""The Telegram webhook receiver: a small aiohttp server that checks the secret token.

Telegram sends every update as a JSON POST carrying the ``X-Telegram-Bot-Api-Secret-Token``
header set by ``setWebhook``. A missing or wrong header gets ``403`` and the update is never
looked at; a body that is not a JSON object gets ``400``. An accepted update is handed to the
callback *before* the ``200`` is sent, so an update whose handling failed (``500``) is sent
again by Telegram instead of being lost.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Mapping

import structlog
from aiohttp import web

log = structlog.get_logger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"

UpdateCallback = Callable[[Mapping[str, object]], Awaitable[None]]


class WebhookReceiver:
    """Serves ``POST {path}`` on ``listen:port`` until :meth:`aclose`.

    ``port`` 0 binds an ephemeral port; :attr:`port` then tells which one.
    """

    def __init__(self, *, path: str, secret: str, on_update: UpdateCallback) -> None:
        if not secret:
            raise ValueError("a webhook needs a secret token")
        self._secret = secret.encode()
        self._on_update = on_update
        self._app = web.Application()
        self._app.router.add_post(path, self._receive)
        self._runner: web.AppRunner | None = None
        self._port = 0

    @property
    def port(self) -> int:
        return self._port

    async def start(self, listen: str, port: int) -> None:
        runner = web.AppRunner(self._app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, listen, port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        addresses = runner.addresses
        self._port = int(addresses[0][1]) if addresses else port

    async def aclose(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _receive(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self._secret):
            log.warning(
                "telegram_webhook_refused",
                reason="secret token missing or wrong",
                remote=request.remote,
            )
            return web.Response(status=403, text="forbidden")
        try:
            data = json.loads(await request.read())
        except (ValueError, UnicodeDecodeError):
            return web.Response(status=400, text="body is not JSON")
        if not isinstance(data, dict):
            return web.Response(status=400, text="body is not a JSON object")
        await self._on_update(data)
        return web.Response(status=200, text="ok")
