"""SIGTERM in every state of every supervised part: the daemon exits 0, every time.

Each case runs ``hatchway run`` as a real process (``--drain-timeout 1``), brings one part to
one state, sends SIGTERM and waits for the exit (``WAIT_S`` is a failure guard, not a timed
assertion). States are reached deterministically: the MCP servers are real processes on the
``mcp`` SDK (``tests/mcp/stop_server.py``) that write each state to a marks file, the rest
are log events the daemon writes or requests the loopback fakes receive.

After the exit, every case checks the same things: status 0; ``daemon_stopped`` logged; no
MCP server was (re)started once the parts were being stopped (``app_stopping``); no stop
bound was overrun (``mcp_server_stop_timeout``, ``app_stop_incomplete``,
``stop_deadline_exceeded``); and no MCP server process is left alive, whatever it does with
SIGTERM or its stdin.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot.schedules.book import ScheduleBook
from bot.schedules.job import JobSpec, StoredTarget
from bot.store import Store
from channels.console.adapter import CONVERSATION_ID
from tests.fakes.discord_server import BOT_TOKEN as DISCORD_TOKEN
from tests.fakes.discord_server import FakeDiscord
from tests.mcp.stop_marks import Marks, alive, stop_server_command
from tests.ops.conftest import HeldOpenAI, write_config
from tests.ops.daemon_process import USER, WAIT_S, DaemonProcess, start_daemon
from tests.tools.workspace_files import files_named

pytestmark = [pytest.mark.slow, pytest.mark.long]

DRAIN = ("--drain-timeout", "1", "--ready-timeout", "2")
#: Everything a hostile server can do to its own shutdown.
HOSTILE = ("ignore-sigterm", "linger")
STOP_OVERRUN = ("mcp_server_stop_timeout", "app_stop_incomplete", "stop_deadline_exceeded")
TOKENS = {
    "STOPTEST_TELEGRAM_TOKEN": "123456:AAstop-matrix-telegram-token",
    "STOPTEST_SLACK_BOT_TOKEN": "xoxb-1111-2222-stop-matrix-token",
    "STOPTEST_SLACK_APP_TOKEN": "xapp-1-A0001-stop-matrix-token",
    "STOPTEST_DISCORD_TOKEN": DISCORD_TOKEN,
    "STOPTEST_LLM_KEY": "stop-matrix-model-key",
}


# -- the states, and how a test waits for one ------------------------------------------------


def mcp_server(marks: Path, *flags: str, **keys: float) -> str:
    """``[mcp.servers.bad]`` running the stop server with ``flags``; ``keys`` override the
    quick reconnects."""
    command = stop_server_command(marks, *flags)
    values = {"reconnect_initial_s": 0.1, "reconnect_max_s": 0.2, **keys}
    lines = [
        "[mcp.servers.bad]",
        "command = [" + ", ".join(f'"{part}"' for part in command) + "]",
        "requires_approval = false",
        *(f"{key} = {value}" for key, value in values.items()),
    ]
    return "\n".join(lines) + "\n"


# -- one case ------------------------------------------------------------------------------


@dataclass(kw_only=True)
class Stage:
    """What a case runs the daemon with."""

    tmp_path: Path
    llm: HeldOpenAI
    marks: Marks
    extra: list[str] = field(default_factory=list)

    def config(self) -> Path:
        return write_config(
            self.tmp_path / "hatchway.toml",
            llm_url=self.llm.base_url,
            allowed_users=[USER],
            extra="\n".join(self.extra),
        )


@pytest.fixture
def stage(tmp_path: Path, llm: HeldOpenAI, monkeypatch: pytest.MonkeyPatch) -> Stage:
    for name, value in TOKENS.items():
        monkeypatch.setenv(name, value)
    return Stage(tmp_path=tmp_path, llm=llm, marks=Marks(tmp_path / "marks"))


def after(events: Sequence[dict[str, object]], name: str) -> list[str]:
    """The names of the events logged after the first ``name`` event."""
    names = [str(e.get("event")) for e in events]
    return names[names.index(name) + 1 :] if name in names else []


async def stop_and_check(daemon: DaemonProcess, marks: Marks) -> None:
    daemon.signal(signal.SIGTERM)
    assert await daemon.wait_exit() == 0, daemon.events[-20:]
    names = [str(e.get("event")) for e in daemon.events]
    assert "daemon_stopped" in names
    assert [e for e in daemon.events if e.get("event") in STOP_OVERRUN] == []
    closing = after(daemon.events, "app_stopping")
    assert "mcp_server_restarting" not in closing
    assert "mcp_server_ready" not in closing
    servers = marks.pids("started")
    if servers:
        assert "mcp_server_stopped" in closing
    assert [pid for pid in servers if alive(pid)] == []


async def run_case(stage: Stage, reach: Callable[[DaemonProcess], object]) -> DaemonProcess:
    """Start the daemon, bring it to the case's state (``reach``), SIGTERM, check the exit."""
    async with start_daemon(stage.config(), *DRAIN) as daemon:
        try:
            state = reach(daemon)
            if asyncio.iscoroutine(state):
                try:
                    await state
                except TimeoutError:
                    tail = "\n".join(json.dumps(e) for e in daemon.events[-30:])
                    raise AssertionError(
                        f"the state was never reached; marks {stage.marks.lines()}, "
                        f"stdout {daemon.stdout[-5:]}, last events:\n{tail}"
                    ) from None
            await stop_and_check(daemon, stage.marks)
        finally:
            # a grandchild holding stdout is out of the daemon's reach by design; servers
            # are killed here only when the daemon failed to
            for pid in stage.marks.pids("holder") + stage.marks.pids("started"):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    return daemon


# -- MCP servers -----------------------------------------------------------------------------


async def test_mcp_server_starting(stage: Stage) -> None:
    """The server never answers ``initialize`` (and ignores stdin's end and SIGTERM)."""
    stage.extra.append(mcp_server(stage.marks.path, "slow-init", *HOSTILE))
    await run_case(stage, lambda daemon: stage.marks.wait_for("initialising"))


async def test_mcp_server_healthy_and_hostile_to_its_shutdown(stage: Stage) -> None:
    """Serving, while it ignores SIGTERM, outlives its stdin, and has a grandchild in a
    session of its own holding its stdout open."""
    stage.extra.append(mcp_server(stage.marks.path, *HOSTILE, "hold-stdout"))
    await run_case(stage, lambda daemon: daemon.wait_event("mcp_server_ready"))


async def test_mcp_health_check_hanging(stage: Stage) -> None:
    """The periodic tool listing has been sent and will never be answered."""
    stage.extra.append(mcp_server(stage.marks.path, "hang-health", ping_interval_s=5.0))
    await run_case(stage, lambda daemon: stage.marks.wait_for("health_check"))


async def test_mcp_shutdown_after_a_failed_health_check(stage: Stage) -> None:
    """The health check timed out and the transport is shutting the server down, which
    ignores the end of its stdin and SIGTERM: the SIGTERM of issue 28 that used to hang."""
    stage.extra.append(mcp_server(stage.marks.path, "hang-health", *HOSTILE, ping_interval_s=1.0))
    await run_case(stage, lambda daemon: stage.marks.wait_for("stdin_closed"))


async def test_mcp_server_crashed_and_backing_off(stage: Stage) -> None:
    stage.extra.append(
        mcp_server(
            stage.marks.path, "crash-at-start", reconnect_initial_s=60.0, reconnect_max_s=60.0
        )
    )
    await run_case(stage, lambda daemon: daemon.wait_event("mcp_server_restarting"))


async def test_mcp_tool_call_running(stage: Stage) -> None:
    """A turn is inside a tool call that never returns; the drain budget cuts it."""
    stage.extra.append(mcp_server(stage.marks.path, *HOSTILE))
    stage.llm.queue_tool_calls([("bad__sleep", {})])

    async def reach(daemon: DaemonProcess) -> None:
        await daemon.wait_event("mcp_server_ready")
        await daemon.send_line("sleep, please")
        await stage.marks.wait_for("in_call")

    daemon = await run_case(stage, reach)
    assert "drain_finished" in [e.get("event") for e in daemon.events]


async def test_mcp_http_server_not_answering(stage: Stage) -> None:
    """A streamable-HTTP server that reads the client's first request and never answers."""
    async with misbehaving("stalls") as server:
        stage.extra.append(f'[mcp.servers.remote]\nurl = "{server.url}/mcp"\n')

        async def reach(daemon: DaemonProcess) -> None:
            async with asyncio.timeout(WAIT_S):
                await server.requested.wait()

        daemon = await run_case(stage, reach)
    assert "mcp_server_stopped" in after(daemon.events, "app_stopping")


# -- channels reconnecting -----------------------------------------------------------------

CHANNELS = {
    "telegram": """
[channels.telegram.main]
token_env = "STOPTEST_TELEGRAM_TOKEN"
api_base_url = "{url}/bot"
""",
    "slack": """
[channels.slack.main]
bot_token_env = "STOPTEST_SLACK_BOT_TOKEN"
app_token_env = "STOPTEST_SLACK_APP_TOKEN"
api_base_url = "{url}/api/"
""",
    "discord": """
[channels.discord.main]
token_env = "STOPTEST_DISCORD_TOKEN"
api_base_url = "{url}/api/v10"
gateway_url = "ws://127.0.0.1:9/gateway"
sync_commands = false
""",
}
QUICK_RECONNECTS = "reconnect_initial_s = 0.05\nreconnect_max_s = 0.2\n"


@dataclass(kw_only=True)
class Endpoint:
    """A platform API on loopback that misbehaves: ``refuses`` connections, ``drops`` each
    one as soon as it is made, or ``stalls`` (reads the request and never answers)."""

    behaviour: str
    url: str = ""
    requested: asyncio.Event = field(default_factory=asyncio.Event)


@asynccontextmanager
async def misbehaving(behaviour: str) -> AsyncIterator[Endpoint]:
    endpoint = Endpoint(behaviour=behaviour)
    if behaviour == "refuses":
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            endpoint.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        yield endpoint
        return
    held: list[asyncio.StreamWriter] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if behaviour == "drops":
            writer.close()
            return
        held.append(writer)
        await reader.read(1)
        endpoint.requested.set()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    endpoint.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    async with server:
        try:
            yield endpoint
        finally:
            for writer in held:
                writer.close()


def retrying(daemon: DaemonProcess, channel: str) -> bool:
    return any(
        e.get("event") == "channel_health"
        and e.get("channel") == channel
        and (e.get("state") == "reconnecting" or "retrying" in str(e.get("detail")))
        for e in daemon.events
    )


@pytest.mark.parametrize("behaviour", ["refuses", "drops", "stalls"])
@pytest.mark.parametrize("kind", sorted(CHANNELS))
async def test_channel_reconnecting(stage: Stage, kind: str, behaviour: str) -> None:
    """The platform's API misbehaves: SIGTERM while the adapter waits to retry, or while
    its request is in flight to a server that never answers."""
    async with misbehaving(behaviour) as api:
        stage.extra.append(CHANNELS[kind].format(url=api.url) + QUICK_RECONNECTS)

        async def reach(daemon: DaemonProcess) -> None:
            if behaviour == "stalls":
                async with asyncio.timeout(WAIT_S):
                    await api.requested.wait()
            else:
                await daemon.wait_until(lambda: retrying(daemon, f"{kind}.main"), "a retry")

        await run_case(stage, reach)


async def test_discord_gateway_reconnecting_inside_discord_py(stage: Stage) -> None:
    """Logged in, but the gateway drops every connection: discord.py's own reconnect loop."""
    async with FakeDiscord() as fake, misbehaving("drops") as gateway:
        stage.extra.append(
            f"""
[channels.discord.main]
token_env = "STOPTEST_DISCORD_TOKEN"
api_base_url = "{fake.base_url}"
gateway_url = "{gateway.url.replace("http", "ws")}/gateway"
sync_commands = false
"""
        )

        def reconnecting(daemon: DaemonProcess) -> bool:
            return any("Attempting a reconnect" in str(e.get("event")) for e in daemon.events)

        await run_case(
            stage, lambda daemon: daemon.wait_until(lambda: reconnecting(daemon), "a reconnect")
        )


# -- turns: a schedule firing, an approval pending, an HTTP request open ----------------------


async def store_due_job(db: Path) -> None:
    """A yearly job for the console's conversation, stored with an occurrence due now."""
    console = StoredTarget(channel="console.main", conversation_id=CONVERSATION_ID)
    spec = JobSpec(
        prompt="the scheduled task",
        cron="0 0 1 1 *",
        origin=console,
        target=console,
        creator_id=USER,
        creator_name=USER,
        origin_is_direct=True,
    )
    async with await Store.open(db) as store:
        job = await ScheduleBook(store.schedules).add(spec, now=time.time())
        assert job.next_run_at is not None
        await store.schedules.mark_run(
            job.id, run_at=job.next_run_at, last_run_at=None, next_run_at=time.time() - 1
        )


async def test_schedule_firing(stage: Stage) -> None:
    """A job due at start fires; its turn is waiting for the model when SIGTERM comes."""
    stage.extra.append("[schedules]\ntick_s = 0.2\n")
    await store_due_job(stage.tmp_path / "hatchway.db")
    stage.llm.hold_next()

    async def reach(daemon: DaemonProcess) -> None:
        async with asyncio.timeout(WAIT_S):
            await stage.llm.arrived.wait()

    daemon = await run_case(stage, reach)
    assert "schedule_run_delivered" in [e.get("event") for e in daemon.events]


async def test_turn_waiting_for_approval(stage: Stage) -> None:
    stage.llm.queue_tool_calls([("file_write", {"path": "a.txt", "content": "x"})])
    stage.llm.queue_text("never asked for")

    async def reach(daemon: DaemonProcess) -> None:
        await daemon.wait_notify("READY", "1")
        await daemon.send_line("write a file")
        await daemon.wait_stdout("Approve file_write")

    await run_case(stage, reach)
    assert not files_named(stage.tmp_path / "workspace", "a.txt")


async def test_http_request_stalled_mid_headers(stage: Stage) -> None:
    """A client opened a request to the daemon's HTTP server and never finished it."""
    opened: list[asyncio.StreamWriter] = []

    async def reach(daemon: DaemonProcess) -> None:
        port = await daemon.port()
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        await writer.drain()
        opened.append(writer)

    try:
        await run_case(stage, reach)
    finally:
        for writer in opened:
            writer.close()
