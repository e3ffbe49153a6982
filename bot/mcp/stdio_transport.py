"""The stdio transport: a server process, its messages read line by line within a cap.

Used in place of the SDK's ``stdio_client`` (which reads a whole line into memory, however
long, and hands the server our stderr). :func:`bounded_stdio` starts the server in its own
process group with three pipes and runs three tasks:

* **stdout**: read as session messages by :class:`~bot.mcp.stdio_messages.StdioMessages`,
  one JSON-RPC message per line of at most ``max_result_bytes``. A longer line is never
  held: its request is answered with :func:`~bot.mcp.reply_limit.too_large_error` and the
  rest of the line skipped, so the call fails naming the cap and the connection stays
  usable (unless no request can be matched to the reply: then the task raises
  :class:`~bot.mcp.stdio_messages.UnmatchedReply`, which ends the session, and the server is
  restarted).
* **stdin**: the session's messages, one JSON line each; the ids of our requests are
  remembered until answered (:class:`~bot.mcp.stdio_messages.OutstandingRequests`).
* **stderr**: logged line by line as data (:class:`~bot.mcp.server_stderr.StderrLog`).

Shutdown follows the SDK's (and the MCP spec's) order, shielded and bounded: stop traffic,
give the writer 0.5 s to flush, close stdin, wait 2 s for the server to exit, then SIGTERM
its process group and SIGKILL it 2 s later. POSIX only, like the daemon.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio
import anyio.lowlevel
import structlog
from anyio.abc import AsyncResource, ByteReceiveStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from bot.mcp.server_stderr import StderrLog
from bot.mcp.stdio_messages import OutstandingRequests, StdioMessages, UnmatchedReply

log = structlog.get_logger(__name__)

WRITER_FLUSH_S = 0.5
EXIT_GRACE_S = 2.0
KILL_AFTER_S = 2.0
REAP_S = 2.0
#: what an SDK transport yields: the session's read and write streams
Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]
_PIPE_ERRORS = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)


@asynccontextmanager
async def bounded_stdio(
    server: StdioServerParameters, *, name: str, max_result_bytes: int
) -> AsyncIterator[Streams]:
    """Start ``server`` and yield the session's read and write streams (an SDK transport)."""
    process = await anyio.open_process(
        [server.command, *server.args],
        env=get_default_environment() | (server.env or {}),
        cwd=server.cwd,
        start_new_session=True,
    )
    # No await until the task group is entered, or a cancellation in the gap leaks the process.
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    outstanding = OutstandingRequests()
    writer_done = anyio.Event()
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr

    async def read_stdout() -> None:
        messages = StdioMessages(name, max_result_bytes, outstanding)
        try:
            async with read_writer:
                while True:
                    try:
                        chunk = await stdout.receive()
                    except _PIPE_ERRORS:
                        break
                    for message in messages.feed(chunk):
                        await read_writer.send(message)
                    if messages.unmatched:
                        # ends the session (and the drain below would wait for its end)
                        raise UnmatchedReply(f"MCP server {name!r}: a reply named no request")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the session is gone
        await _drain(stdout)

    async def write_stdin() -> None:
        try:
            async with write_reader:
                async for session_message in write_reader:
                    outstanding.sent(session_message.message)
                    json = session_message.message.model_dump_json(
                        by_alias=True, exclude_unset=True
                    )
                    await stdin.send((json + "\n").encode())
        except _PIPE_ERRORS:
            # the server may still run: end the session rather than leave a call waiting
            await read_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()  # unblocks the reader into its drain
        write_stream.close()
        with anyio.move_on_after(WRITER_FLUSH_S):
            await writer_done.wait()
        await _stop(process, name)
        for stream in (read_stream, write_stream, read_writer, write_reader):
            await stream.aclose()
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(read_stdout)
        group.start_soon(write_stdin)
        group.start_soon(StderrLog(name).pump, stderr)
        try:
            yield read_stream, write_stream
        finally:
            # must finish under cancellation, or the server process would leak; every
            # wait inside is bounded
            with anyio.CancelScope(shield=True):
                await shutdown()
            group.cancel_scope.cancel()


async def _drain(stdout: ByteReceiveStream) -> None:
    """Discard what the server still writes, so that it never blocks on a full pipe while
    it should be exiting; ends when the pipe closes."""
    with anyio.CancelScope(shield=True), suppress(*_PIPE_ERRORS):
        while True:
            await stdout.receive()


async def _stop(process: Process, name: str) -> None:
    """Close stdin, wait for the exit, then terminate the process group; release the pipes."""
    await _close(process.stdin)
    if not await _exited(process, EXIT_GRACE_S):
        await terminate_posix_process_tree(process, KILL_AFTER_S)
        if not await _exited(process, REAP_S):
            log.warning("mcp_server_process_survived", server=name, pid=process.pid)
    if process.returncode is not None:
        await process.aclose()  # closes the pipes' transports too; the exit is known
    else:
        for stream in (process.stdout, process.stderr):
            await _close(stream)


async def _exited(process: Process, timeout_s: float) -> bool:
    # anyio's wait ends at the exit itself (asyncio's own also waits for the pipes, which a
    # descendant of the server may hold open)
    with anyio.move_on_after(timeout_s):
        await process.wait()
    return process.returncode is not None


async def _close(stream: AsyncResource | None) -> None:
    if stream is not None:
        with suppress(*_PIPE_ERRORS):
            await stream.aclose()
