"""One MCP server, supervised: connect, list its tools, serve calls, restart when it dies.

:meth:`McpConnection.run` owns the client session for the life of the daemon (the ``mcp``
SDK's client is entered and left in that one task): it connects over stdio (``command``) or
streamable HTTP (``url``), lists the server's tools, then watches the connection — a call that
finds it closed, or a failed tool listing once it has been idle ``ping_interval_s``, ends the
session — and reconnects with jittered exponential backoff (:mod:`bot.backoff`:
``reconnect_initial_s`` doubling up to ``reconnect_max_s``; reset after a session that stayed up
for a while).
Cancelling :meth:`~McpConnection.run` stops the server (``mcp_server_stopped``, state
``stopped``) within :data:`STOP_GRACE_S`, whatever the server does; a stop is never taken for
a failure, so nothing is restarted once the daemon is stopping.

While the server is down its tools stay known (from the last listing) but every call raises
:class:`~bot.tools.spec.ToolEnvironmentError`, which the pipeline reports as ENV_ERROR. A
call cut off because the server died mid-call raises the same and triggers the restart.

Transports: :func:`~bot.mcp.stdio_transport.bounded_stdio` (the server's stderr logged as
``mcp_server_stderr`` events) and the SDK's streamable-HTTP client over
:func:`~bot.mcp.http_limits.capped_http_client`; both stop reading a message at
``max_result_bytes`` (:mod:`bot.mcp.reply_limit`).

Secrets: values named by ``env_from`` / ``headers_from`` are read from the daemon's
environment at each connect, registered for scrubbing (a server that prints one has it
masked in its logged stderr) and never logged; log events name the server and the error type.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import anyio
import structlog
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Tool
from mcp_types.jsonrpc import CONNECTION_CLOSED, REQUEST_TIMEOUT

from bot.backoff import Backoff
from bot.config import McpServerConfig
from bot.errors import HatchwayError
from bot.mcp.http_limits import capped_http_client
from bot.mcp.reply_limit import REPLY_TOO_LARGE
from bot.mcp.stdio_transport import (
    EXIT_GRACE_S,
    KILL_AFTER_S,
    REAP_S,
    WRITER_FLUSH_S,
    bounded_stdio,
)
from bot.scrub import register_secret
from bot.tools.spec import ToolEnvironmentError
from bot.untrusted import untrusted

log = structlog.get_logger(__name__)

STABLE_AFTER_S = 30.0
#: How long a stop waits for a server's shutdown: what the stdio transport gives one that
#: ignores everything (flush, exit after stdin closes, SIGTERM to SIGKILL, reap), and a margin.
STOP_GRACE_S = WRITER_FLUSH_S + EXIT_GRACE_S + KILL_AFTER_S + REAP_S + 1.5
MAX_LIST_PAGES = 50


class McpCallFailed(HatchwayError):
    """The server answered a call with a protocol error (unknown tool, invalid params) or a
    tool result flagged as an error; the model sees it as a failed execution."""


class ServerState(enum.StrEnum):
    STARTING = "starting"
    READY = "ready"
    RESTARTING = "restarting"
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: Mapping[str, object]
    read_only: bool = False

    @classmethod
    def of(cls, tool: Tool) -> RemoteTool:
        hints = tool.annotations
        return cls(
            name=tool.name,
            description=tool.description or tool.title or "",
            input_schema=dict(tool.input_schema),
            read_only=bool(hints is not None and hints.read_only_hint),
        )


_CLOSED = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)


class McpConnection:
    """A supervised client of one configured server. Start :meth:`run` in a task group."""

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        *,
        environ: Mapping[str, str] | None = None,
        on_tools: Callable[[McpConnection], None] | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self._environ = os.environ if environ is None else environ
        self._on_tools = on_tools
        self._client: Client | None = None
        self._tools: tuple[RemoteTool, ...] = ()
        self._state = ServerState.STARTING
        self._ready = asyncio.Event()
        self._broken = asyncio.Event()
        self._changed = asyncio.Condition()
        self.restarts = 0
        #: calls in flight, calls begun so far, and when the last one ended (monotonic)
        self._calls = 0
        self._calls_begun = 0
        self._last_call_end = float("-inf")

    @property
    def state(self) -> ServerState:
        return self._state

    @property
    def tools(self) -> tuple[RemoteTool, ...]:
        """The tools of the last successful listing (kept while the server restarts)."""
        return self._tools

    async def wait_ready(self) -> None:
        """Return once the server is connected and its tools are listed."""
        await self._ready.wait()

    async def wait_until(self, check: Callable[[McpConnection], bool]) -> None:
        """Return once ``check(self)`` holds; re-checked on every state change."""
        async with self._changed:
            await self._changed.wait_for(lambda: check(self))

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # -- supervision -------------------------------------------------------------------

    async def run(self) -> None:
        """Connect and serve until cancelled, restarting the server whenever it fails.

        Cancelling this task stops the server, within :data:`STOP_GRACE_S`. The supervision
        runs in a task of its own and is stopped through an anyio cancel scope, which the
        transport's shielded shutdown honours (close stdin, wait, SIGTERM, SIGKILL); a native
        ``Task.cancel`` could land inside that shutdown and interrupt it, leaving the server
        alive and the read of its stdout waiting for ever."""
        stop = anyio.CancelScope()
        supervisor = asyncio.create_task(self._supervise(stop), name=f"mcp-supervisor:{self.name}")
        try:
            await asyncio.shield(supervisor)
        except asyncio.CancelledError:
            stop.cancel()
            await self._wait_stopped(supervisor)
            raise

    async def _supervise(self, stop: anyio.CancelScope) -> None:
        backoff = Backoff(self.config.reconnect_backoff())
        with stop:
            try:
                while True:
                    started = time.monotonic()
                    try:
                        await self._serve()
                    except BaseException as exc:
                        # A stop is never a server failure: whatever the SDK raises on the
                        # way out (CancelledError, a closed stream, a group of them) ends it.
                        if stop.cancel_called and not isinstance(
                            exc, KeyboardInterrupt | SystemExit
                        ):
                            return
                        if not isinstance(exc, Exception):
                            raise
                        # Boundary: a server that fails to start or dies is restarted.
                        log.warning("mcp_server_down", server=self.name, error=_describe(exc))
                    finally:
                        self._client = None
                        self._ready.clear()
                        self._state = ServerState.RESTARTING
                    if time.monotonic() - started >= STABLE_AFTER_S:
                        backoff.reset()
                    self.restarts += 1
                    await self._notify()
                    wait = backoff.next_delay()
                    log.info("mcp_server_restarting", server=self.name, in_s=round(wait, 2))
                    await asyncio.sleep(wait)
            finally:
                if stop.cancel_called:
                    self._state = ServerState.STOPPED

    async def _wait_stopped(self, supervisor: asyncio.Task[None]) -> None:
        """Wait for the supervision to wind down after a stop, for at most STOP_GRACE_S even
        if cancelled again meanwhile; past that, it is cancelled outright and left behind."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STOP_GRACE_S
        while not supervisor.done() and loop.time() < deadline:
            # asyncio.wait leaves the task alone when the wait itself is cancelled
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({supervisor}, timeout=deadline - loop.time())
        if not supervisor.done():
            log.error("mcp_server_stop_timeout", server=self.name, grace_s=STOP_GRACE_S)
            supervisor.cancel()
            return
        if not supervisor.cancelled() and (error := supervisor.exception()) is not None:
            log.warning("mcp_server_stop_failed", server=self.name, error=_describe(error))
        log.info("mcp_server_stopped", server=self.name)

    async def _serve(self) -> None:
        async with self._open() as client:
            tools = await _list_tools(client)
            self._tools = tools
            self._broken.clear()
            self._client = client
            self._state = ServerState.READY
            self._ready.set()
            await self._notify()
            log.info("mcp_server_ready", server=self.name, tools=len(tools))
            if self._on_tools is not None:
                self._on_tools(self)
            await self._watch(client)

    async def _watch(self, client: Client) -> None:
        """Wait for a call to find the connection closed; meanwhile check an idle connection
        every ``ping_interval_s`` with a fresh listing (ping is deprecated in newer protocol
        revisions), picking up a changed listing on the way.

        Only an idle connection is checked: a server working on a call (a large result, a
        tool that holds its event loop) may answer nothing else until it is done, and on a
        slow machine that took longer than the check allows, so the session was ended and
        the running call cut off with it. A call needs no check: one whose server dies
        fails with the closed connection, one whose server hangs ends at its own timeout
        (``call_timeout_s``), and the next idle check then finds the server. For the same
        reason a listing that is late because a call began while it waited does not count."""
        interval = self.config.ping_interval_s
        while True:
            try:
                async with asyncio.timeout(interval):
                    await self._broken.wait()
            except TimeoutError:
                if self._calls or time.monotonic() - self._last_call_end < interval:
                    continue
                begun = self._calls_begun
                try:
                    async with asyncio.timeout(min(interval, 10.0)):
                        tools = await _list_tools(client, refresh=True)
                except TimeoutError:
                    if self._calls_begun == begun:
                        raise
                    log.info("mcp_server_check_late_while_busy", server=self.name)
                    continue
                if tools != self._tools:
                    self._tools = tools
                    if self._on_tools is not None:
                        self._on_tools(self)
                continue
            log.warning("mcp_server_connection_lost", server=self.name)
            return

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[Client]:
        async with AsyncExitStack() as stack:
            if self.config.command:
                env = dict(self.config.env)
                env.update(self._secrets(self.config.env_from))
                server = StdioServerParameters(
                    command=self.config.command[0],
                    args=list(self.config.command[1:]),
                    env=env,
                    cwd=self.config.cwd,
                )
                transport = bounded_stdio(
                    server, name=self.name, max_result_bytes=self.config.max_result_bytes
                )
                client = Client(transport, mode="legacy")
            else:
                assert self.config.url is not None
                limit = self.config.max_result_bytes
                http = await stack.enter_async_context(
                    capped_http_client(
                        self.config.url,
                        server=self.name,
                        limit=limit,
                        headers=self._secrets(self.config.headers_from),
                    )
                )
                # the transport cuts events at the cap first; the SDK's own event limit (in
                # decoded characters) is only a backstop
                client = Client(
                    streamable_http_client(
                        self.config.url, http_client=http, max_sse_event_size=4 * limit
                    ),
                    mode="auto",
                )
            yield await stack.enter_async_context(client)

    def _secrets(self, names: Mapping[str, str]) -> dict[str, str]:
        values: dict[str, str] = {}
        for key, env_name in names.items():
            value = self._environ.get(env_name)
            if value:
                register_secret(value)
                values[key] = value
            else:
                log.warning("mcp_secret_missing", server=self.name, key=key, env=env_name)
        return values

    # -- calls -------------------------------------------------------------------------

    async def call(self, tool: str, arguments: Mapping[str, object]) -> CallToolResult:
        """Call ``tool``. Raises ``ToolEnvironmentError`` when the server is down or dies
        during the call, :class:`McpCallFailed` when it answers with a protocol error."""
        client = self._client
        if client is None or self._state is not ServerState.READY:
            raise ToolEnvironmentError(
                f"MCP server {self.name!r} is unavailable ({self._state.value}); "
                + (
                    "the daemon is stopping"
                    if self._state is ServerState.STOPPED
                    else "it is being restarted, try again later"
                )
            )
        self._calls += 1
        self._calls_begun += 1
        try:
            return await client.call_tool(tool, dict(arguments))
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self._lost()
                raise ToolEnvironmentError(
                    f"MCP server {self.name!r} stopped during the call; it is being restarted"
                ) from None
            raise McpCallFailed(self._refusal(exc)) from None
        except _CLOSED:
            self._lost()
            raise ToolEnvironmentError(
                f"MCP server {self.name!r} connection closed during the call; it is being restarted"
            ) from None
        finally:
            self._calls -= 1
            self._last_call_end = time.monotonic()

    def _refusal(self, exc: MCPError) -> str:
        """A protocol error as the model reads it: the SDK's and the reply cap's own words
        as they are; a message the server wrote (unknown tool, invalid parameters, …) after
        a line of ours, marked as data that is not the user's."""
        if exc.code in (REQUEST_TIMEOUT, REPLY_TOO_LARGE):
            return f"MCP server {self.name!r}: {exc.message}"
        return f"MCP server {self.name!r} refused the call:\n" + untrusted(
            f"MCP server {self.name}", exc.message
        )

    def _lost(self) -> None:
        self._state = ServerState.RESTARTING
        self._broken.set()


async def _list_tools(client: Client, *, refresh: bool = False) -> tuple[RemoteTool, ...]:
    tools: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh" if refresh else "use")
        tools.extend(RemoteTool.of(t) for t in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(tools)


def _describe(exc: BaseException) -> str:
    """The error type(s) only: messages may quote configuration (URLs with credentials)."""
    if isinstance(exc, BaseExceptionGroup):
        inner: Sequence[BaseException] = exc.exceptions
        return ",".join(sorted({_describe(e) for e in inner}))
    return type(exc).__name__
