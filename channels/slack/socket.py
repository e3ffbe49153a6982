"""The Socket Mode connection: opened, watched, and reopened with backoff.

slack_sdk's client would reconnect on its own at a fixed interval and retry a refused
app-level token forever; here its auto-reconnect is off and :class:`SocketSession` owns the
loop instead: it asks ``apps.connections.open`` for a URL (a refused token raises
:class:`~bot.errors.ChannelAuthError` at once), connects through bolt's
``AsyncSocketModeHandler``, reports the connection live only after Slack's ``hello``, and
when the socket drops reconnects after a jittered exponential delay (:mod:`bot.backoff`).
Slack's own ``disconnect`` (refresh) messages are still handled by the SDK.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import cast

import aiohttp
import structlog
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient

from bot.backoff import Backoff, BackoffPolicy, sleep_before_retry
from bot.channel import HealthState
from bot.errors import ChannelAuthError, ChannelError
from channels.slack.api import SlackCallFailed, SlackWebApi

log = structlog.get_logger(__name__)

HealthSetter = Callable[[HealthState, str], None]


def _untyped_call(method: object) -> Awaitable[None]:
    """Call one of the handler's unannotated ``async def`` methods, typed."""
    return cast(Callable[[], Awaitable[None]], method)()


class SocketSession:
    """Keeps one Socket Mode connection live until cancelled; raises on a refused token."""

    def __init__(
        self,
        *,
        app: AsyncApp,
        api: SlackWebApi,
        app_token: str,
        set_health: HealthSetter,
        backoff: BackoffPolicy,
        ping_interval_s: float = 10.0,
        connect_timeout_s: float = 30.0,
    ) -> None:
        self._app = app
        self._api = api
        self._app_token = app_token
        self._set_health = set_health
        self._backoff = Backoff(backoff)
        self._ping_interval = ping_interval_s
        self._connect_timeout = connect_timeout_s
        self._hello = asyncio.Event()
        self._dropped = asyncio.Event()

    async def run(self) -> None:
        handler = AsyncSocketModeHandler(
            self._app,
            self._app_token,
            web_client=self._api.client,
            ping_interval=self._ping_interval,
        )
        client = handler.client
        client.auto_reconnect_enabled = False
        client.default_auto_reconnect_enabled = False
        client.message_listeners.append(self._on_message)
        client.on_close_listeners.append(self._on_close)
        client.on_error_listeners.append(self._on_close)
        try:
            await self._supervise(handler)
        finally:
            await _untyped_call(handler.close_async)

    async def _on_message(
        self, client: AsyncBaseSocketModeClient, message: dict[str, object], raw: str | None
    ) -> None:
        if message.get("type") == "hello":
            self._hello.set()

    async def _on_close(self, message: aiohttp.WSMessage) -> None:
        self._dropped.set()

    async def _supervise(self, handler: AsyncSocketModeHandler) -> None:
        connected_once = False
        while True:
            try:
                await self._connect(handler)
            except ChannelAuthError:
                raise
            except (ChannelError, aiohttp.ClientError, OSError, TimeoutError) as exc:
                delay = self._backoff.next_delay()
                reason = exc.code if isinstance(exc, SlackCallFailed) else type(exc).__name__
                log.warning("slack_socket_connect_failed", reason=reason, retry_in_s=delay)
                state = HealthState.RECONNECTING if connected_once else HealthState.STARTING
                self._set_health(state, f"socket mode connect failed ({reason}); retrying")
                await sleep_before_retry(delay)
                continue
            self._backoff.reset()
            connected_once = True
            self._set_health(HealthState.CONNECTED, "socket mode")
            log.info("slack_socket_connected")
            await self._wait_dropped(handler)
            self._set_health(HealthState.RECONNECTING, "socket mode connection dropped")
            log.warning("slack_socket_dropped")
            await sleep_before_retry(self._backoff.next_delay())

    async def _connect(self, handler: AsyncSocketModeHandler) -> None:
        self._hello.clear()
        self._dropped.clear()
        url = await self._api.open_socket_url(self._app_token)
        client = handler.client
        async with asyncio.timeout(self._connect_timeout):
            async with client.connect_operation_lock:
                client.wss_uri = url
                await _untyped_call(handler.connect_async)
            await self._hello.wait()

    async def _wait_dropped(self, handler: AsyncSocketModeHandler) -> None:
        """Return once the connection is gone (and not merely being refreshed by the SDK)."""
        client = handler.client
        while True:
            try:
                async with asyncio.timeout(self._ping_interval):
                    await self._dropped.wait()
            except TimeoutError:
                pass
            self._dropped.clear()
            if await client.is_connected():
                continue
            async with client.connect_operation_lock:
                if await client.is_connected():
                    continue
            return
