"""The Telegram webhook receiver: a small aiohttp server that checks the secret token.

Telegram sends every update as a JSON POST carrying the ``X-Telegram-Bot-Api-Secret-Token``
header set by ``setWebhook``. A missing or wrong header gets ``403`` and the update is never
looked at: the header's raw bytes are compared in constant time, so a value that is not ASCII
or not even UTF-8 is simply wrong. After the secret, the body must be JSON (``415``), at most
:data:`bot.ops.web.MAX_BODY_BYTES` (``413``), UTF-8 and one JSON object (``400``); the wrong
method gets ``405``, an unparsable request aiohttp's ``400``. Each refusal is one log line
(``http_request_refused``, see :mod:`bot.ops.web`). An accepted update is handed to the callback
*before* the ``200`` is sent, so an update whose handling failed (``500``) is sent again by
Telegram instead of being lost.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web

from bot.ops.web import MAX_BODY_BYTES, header_bytes, log_refusals, read_json_object, server_runner

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
        self._app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[log_refusals])
        self._app.router.add_post(path, self._receive)
        self._runner: web.AppRunner | None = None
        self._port = 0

    @property
    def port(self) -> int:
        return self._port

    async def start(self, listen: str, port: int) -> None:
        runner = server_runner(self._app)
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
        if not hmac.compare_digest(header_bytes(request, SECRET_HEADER), self._secret):
            raise web.HTTPForbidden(text="secret token missing or wrong")
        await self._on_update(await read_json_object(request))
        return web.Response(status=200, text="ok")
