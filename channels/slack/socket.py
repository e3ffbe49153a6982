"""The Socket Mode connection: opened, watched, and reopened with backoff.

slack_sdk's client would reconnect on its own at a fixed interval and retry a refused
app-level token forever; here its auto-reconnect is off and :class:`SocketSession` owns the
loop instead: it asks ``apps.connections.open`` for a URL (a refused token raises
:class:`~bot.errors.ChannelAuthError` at once), connects through bolt's
``AsyncSocketModeHandler``, reports the connection live only after Slack's ``hello``, and
when the socket drops reconnects after a jittered exponential delay (:mod:`bot.backoff`).
Slack's own ``disconnect`` (refresh) messages are still handled by the SDK.

A stop closes the socket first, so that Slack sends what comes next over the app's other
connections (other replicas), then lets every envelope this socket received go through the
listeners (stored, and acknowledged while the socket was still open) before the SDK's tasks
are cancelled: the SDK's own ``close`` would drop the envelopes it had received and not yet
dispatched, and cut off listeners half-way, leaving events for Slack to send again seconds
later, after newer messages of the same conversation that reached other replicas. The close
itself reads on until Slack's Close, so that an event Slack sent as the socket closed is
stored too (:mod:`channels.slack.closing`); when Slack does not answer the Close within
:data:`CLOSE_ANSWER_S`, the connection is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import cast

import aiohttp
import structlog
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient

from bot.backoff import Backoff, BackoffPolicy, sleep_before_retry
from bot.channel import HealthState
from bot.errors import ChannelAuthError, ChannelError
from channels.slack.api import SlackCallFailed, SlackWebApi
from channels.slack.closing import ClosingSocketHandler
from channels.slack.stopping import finish_while_stopping

log = structlog.get_logger(__name__)

#: How long a stop waits for the socket's close and for the envelopes it received to be
#: stored (each listener is one write to the store: Slack's own limit for an ack is 3 s).
CLOSE_LIMIT_S = 4.0
#: How long a stop waits for a moment with no envelope in hand before it closes the socket.
QUIET_WAIT_S = 1.0
#: How long a stop reads on after its Close frame, for Slack's Close (Slack answers at once;
#: what it sent before is stored meanwhile).
CLOSE_ANSWER_S = 1.5

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
        #: the SDK's tasks running the listeners of one envelope each
        self._listening: set[asyncio.Task[object]] = set()

    async def run(self) -> None:
        handler = ClosingSocketHandler(
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
            await finish_while_stopping(
                self._close(handler), limit_s=CLOSE_LIMIT_S, what="slack socket close"
            )

    async def _close(self, handler: ClosingSocketHandler) -> None:
        """Close the socket, let what it received reach the listeners and their end, then
        end the SDK's tasks (module docstring)."""
        client = handler.client
        try:
            # a quiet moment first, so that the envelopes in hand are still acknowledged
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(QUIET_WAIT_S):
                    await self._settled(client)
            self._dropped.clear()
            session = await handler.begin_close()
            if session is not None:
                await self._answered(session)
            if client.message_receiver is not None:
                client.message_receiver.cancel()  # Slack's Close came, or is not waited for
            await self._settled(client)
        finally:
            await _untyped_call(handler.close_async)
        log.info("slack_socket_closed")

    async def _answered(self, session: aiohttp.ClientWebSocketResponse) -> None:
        """Wait, at most :data:`CLOSE_ANSWER_S`, for the server's Close (the SDK's receive
        loop reads it, and everything sent before it, and tells :meth:`_on_close`)."""
        try:
            async with asyncio.timeout(CLOSE_ANSWER_S):
                if not session.closed:
                    await self._dropped.wait()
        except TimeoutError:
            log.info("slack_socket_close_unanswered", waited_s=CLOSE_ANSWER_S)

    async def _settled(self, client: AsyncBaseSocketModeClient) -> None:
        """Return once every envelope received so far went through its listeners."""
        while True:
            if self._listening:
                await asyncio.wait(set(self._listening))
            elif not client.message_queue.empty():
                await asyncio.sleep(0.01)  # the SDK's processor dispatches the next one
            else:
                # the processor may have just taken the last one: the task it made for it
                # runs its first step (registering it in _listening) before this resumes
                await asyncio.sleep(0)
                if not self._listening and client.message_queue.empty():
                    return

    async def _on_message(
        self, client: AsyncBaseSocketModeClient, message: dict[str, object], raw: str | None
    ) -> None:
        if message.get("type") == "hello":
            self._hello.set()
        elif message.get("envelope_id") and (task := asyncio.current_task()) is not None:
            # the SDK runs each envelope's listeners in a task of its own, this one first
            self._listening.add(task)
            task.add_done_callback(self._listening.discard)

    async def _on_close(self, message: aiohttp.WSMessage) -> None:
        self._dropped.set()

    async def _supervise(self, handler: ClosingSocketHandler) -> None:
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

    async def _connect(self, handler: ClosingSocketHandler) -> None:
        self._hello.clear()
        self._dropped.clear()
        url = await self._api.open_socket_url(self._app_token)
        client = handler.client
        async with asyncio.timeout(self._connect_timeout):
            async with client.connect_operation_lock:
                client.wss_uri = url
                await _untyped_call(handler.connect_async)
            await self._hello.wait()

    async def _wait_dropped(self, handler: ClosingSocketHandler) -> None:
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
