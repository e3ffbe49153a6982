"""Several real daemons over one PostgreSQL database, shared with ``bench/replicas.py``.

A :class:`Fleet` runs replicas of one bot on one host as an operator would on several: each
replica is ``hatchway run`` (:func:`tests.ops.daemon_process.start_daemon`) with a state
directory and a config file of its own, the same ``[storage] url`` and the same platform
table, where the replica's name marks its calls to the platform fake
(:meth:`~tests.reliability.platform_drivers.PlatformDriver.channel_table` with ``client``,
plus ``channel_extra`` keys). The config is the crash matrix's
(:func:`tests.reliability.crash_rig.write_config`: a model at a URL, ``shell`` allowed
without approval unless ``auto_approve`` says otherwise, the workspace in the state
directory) plus the storage URL, quick leases (:data:`QUICK_LEASES`) and ``/readyz`` on a
free port. Without a URL (``url=None``) a replica keeps a SQLite file in its state
directory: one process, as a bench compares.

Each start of a replica is a run of its own; :meth:`Fleet.kill` is ``kill -9``,
:meth:`Fleet.stop` a SIGTERM that must end in exit 0. Which replica holds a lease is read
from the database (the ``leases`` row, its holder's id naming the process id). When the
block of ``async with Fleet(...)`` fails, the last log events of every run of every replica
are printed (pytest shows them with the failure), with the rows saying who holds what (inbox,
outbox, session owners, replicas, leases) kept beside the state directories; each run's whole
log is kept there whatever the outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import asyncpg

from bench.crash_tally import (
    INBOX_BY_STATUS,
    NOTICES_SENT,
    UNCONFIRMED,
    UNDECIDED,
    StoreReadout,
)
from tests.ops.daemon_process import WAIT_S, DaemonProcess, start_daemon
from tests.reliability.crash_rig import approval_keys, daemon_env, write_config
from tests.reliability.platform_drivers import PlatformDriver

#: Leases short enough for a takeover within a few seconds on a loaded machine, long enough
#: that a replica busy with turns does not miss them (``[replicas]`` keys).
QUICK_LEASES = {"heartbeat_s": 0.5, "lease_ttl_s": 3.0, "max_clock_skew_s": 0.5}
TELEGRAM_POLL = "telegram.main.poll"
TAIL = 40
#: What :meth:`Fleet.keep_tables` keeps after a failure.
KEPT_TABLES = {
    "inbox": "SELECT id, message_id, session_key, status, error, replica_id, received_at,"
    " updated_at FROM inbox ORDER BY id",
    "outbox": "SELECT * FROM outbox ORDER BY 1",
    "session_owners": "SELECT * FROM session_owners ORDER BY session_key",
    "replicas": "SELECT * FROM replicas",
    "leases": "SELECT * FROM leases",
}


async def until(check: Callable[[], bool], timeout_s: float, *, every_s: float = 0.05) -> bool:
    """Poll ``check`` until it is true or ``timeout_s`` passed; whether it came true."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        await asyncio.sleep(every_s)
    return bool(check())


@dataclass
class Replica:
    """One replica: its state directory, config file, and every run so far."""

    name: str
    state: Path
    config: Path
    runs: list[DaemonProcess] = field(default_factory=list)
    _release: asyncio.Event | None = None
    _task: asyncio.Task[None] | None = None

    @property
    def workspace(self) -> Path:
        return self.state / "workspace"

    @property
    def daemon(self) -> DaemonProcess:
        """The current (last) run."""
        assert self.runs, f"{self.name} never started"
        return self.runs[-1]

    @property
    def running(self) -> bool:
        return bool(self.runs) and self.daemon.proc.returncode is None

    @property
    def pid(self) -> int:
        return self.daemon.proc.pid

    def tail(self, lines: int = TAIL) -> str:
        out = []
        for number, run in enumerate(self.runs, 1):
            status = run.proc.returncode
            out.append(f"--- {self.name} run {number} (pid {run.proc.pid}, exit {status}) ---")
            out += [json.dumps(event) for event in run.events[-lines:]]
        return "\n".join(out)


class Fleet:
    """Replicas of one bot over one database (module docstring)."""

    def __init__(
        self,
        root: Path,
        *,
        url: str | None,
        llm_url: str,
        driver: PlatformDriver,
        env: Mapping[str, str],
        leases: Mapping[str, float] = QUICK_LEASES,
        concurrency: int | None = None,
        auto_approve: Sequence[str] = ("shell",),
        channel_extra: str = "",
        extra: str = "",
        log_level: str = "info",
        storage_extra: str = "",
    ) -> None:
        self.root = root
        self.url = url
        self._llm_url = llm_url
        self._driver = driver
        self._env = dict(env)
        self._leases = dict(leases)
        self._concurrency = concurrency
        self._auto_approve = tuple(auto_approve)
        self._channel_extra = channel_extra
        self._extra = extra
        self._log_level = log_level
        self._storage_extra = storage_extra
        self.replicas: dict[str, Replica] = {}

    async def __aenter__(self) -> Fleet:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            await self.aclose()
        finally:
            self.keep_logs()
            if exc is not None:
                print(self.tails(), flush=True)
                with contextlib.suppress(Exception):
                    await self.keep_tables()

    # -- replicas ---------------------------------------------------------------------------

    def add(self, name: str) -> Replica:
        """The replica ``name``: its state directory and config (written once)."""
        if name in self.replicas:
            return self.replicas[name]
        state = self.root / name
        (state / "workspace").mkdir(parents=True)
        leases = "".join(f"{key} = {value}\n" for key, value in self._leases.items())
        shared = f"\n[server]\nenabled = true\nport = 0\n{self._extra}"
        if self.url is not None:
            storage = f'url = "{self.url}"\n{self._storage_extra}'
            shared = f"\n[storage]\n{storage}\n[replicas]\n{leases}" + shared
        config = write_config(
            state / "hatchway.toml",
            llm_url=self._llm_url,
            tables=[shared, self._driver.channel_table(name) + self._channel_extra],
            workspace=state / "workspace",
            concurrency=self._concurrency,
            auto_approve=self._auto_approve,
            log_level=self._log_level,
        )
        replica = Replica(name=name, state=state, config=config)
        self.replicas[name] = replica
        return replica

    async def start(
        self, name: str, *, ready: bool = True, env: Mapping[str, str] | None = None
    ) -> Replica:
        """Start a run of ``name`` (added if new); with ``ready``, wait for its READY.
        ``env``: variables of this run only, over the fleet's (a crash point)."""
        replica = self.add(name)
        run_env = {**self._env, **(env or {})}
        assert not replica.running, f"{name} is running"
        started: asyncio.Future[DaemonProcess] = asyncio.get_running_loop().create_future()
        release = asyncio.Event()

        async def hold() -> None:
            try:
                async with start_daemon(replica.config, env=run_env) as daemon:
                    started.set_result(daemon)
                    await release.wait()
            except BaseException as exc:
                if not started.done():
                    started.set_exception(exc)
                raise

        replica._release = release
        replica._task = asyncio.create_task(hold(), name=f"replica:{name}")
        replica.runs.append(await started)
        if ready:
            await self.wait_ready(name)
        return replica

    async def wait_ready(self, name: str) -> None:
        replica = self.replicas[name]
        await replica.daemon.wait_notify("READY", "1")

    async def kill(self, name: str) -> int:
        """``kill -9`` the replica; its exit status (``-SIGKILL``)."""
        replica = self.replicas[name]
        replica.daemon.proc.kill()
        return await self._ended(replica)

    async def exited(self, name: str) -> int:
        """Wait for the replica's run to end by itself (a crash point); its exit status."""
        return await self._ended(self.replicas[name])

    async def stop(self, name: str) -> int:
        """SIGTERM, and wait for the replica's exit status."""
        replica = self.replicas[name]
        replica.daemon.signal(signal.SIGTERM)
        return await self._ended(replica)

    async def _ended(self, replica: Replica) -> int:
        status = await replica.daemon.wait_exit()
        await asyncio.sleep(0.2)  # its last log lines, still in the pipe
        assert replica._release is not None and replica._task is not None
        replica._release.set()
        await replica._task
        return status

    def running(self) -> list[Replica]:
        return [r for r in self.replicas.values() if r.running]

    async def aclose(self) -> None:
        """Stop what still runs (SIGTERM; killed when it does not end)."""
        for replica in self.running():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.stop(replica.name), WAIT_S)
        for replica in self.replicas.values():
            if replica._release is not None and replica._task is not None:
                replica._release.set()
                with contextlib.suppress(BaseException):
                    await replica._task

    def tails(self, lines: int = TAIL) -> str:
        """The last log events of every run of every replica."""
        return "\n".join(r.tail(lines) for r in self.replicas.values())

    def keep_logs(self) -> None:
        """Every run's log events in a file of its own beside the state directories
        (``<root>/<name>-<run>.jsonl``), for reading after a failure."""
        for replica in self.replicas.values():
            for number, run in enumerate(replica.runs, 1):
                lines = "".join(json.dumps(event) + "\n" for event in run.events)
                (self.root / f"{replica.name}-{number}.jsonl").write_text(lines, encoding="utf-8")

    async def keep_tables(self) -> None:
        """The rows that say who holds what (:data:`KEPT_TABLES`), one file per table
        beside the state directories (``<root>/<table>.txt``), for reading after a failure."""
        if self.url is None:
            return
        conn = await asyncpg.connect(self.url)
        try:
            for table, query in KEPT_TABLES.items():
                rows = await conn.fetch(query)
                text = "".join(json.dumps(dict(row), default=str) + "\n" for row in rows)
                (self.root / f"{table}.txt").write_text(text, encoding="utf-8")
        finally:
            await conn.close()

    def events(self, name: str) -> list[dict[str, Any]]:
        """The log events of every run of ``name``, oldest first."""
        return [e for run in self.replicas[name].runs for e in run.events]

    # -- what the database says -------------------------------------------------------------

    async def holder(self, lease: str) -> Replica | None:
        """The running replica holding ``lease`` now (by its row), or None."""
        assert self.url is not None, "leases are kept only in a shared database"
        conn = await asyncpg.connect(self.url)
        try:
            row = await conn.fetchrow(
                "SELECT holder FROM leases"
                " WHERE name = $1 AND expires_at > extract(epoch FROM now())",
                lease,
            )
        finally:
            await conn.close()
        if row is None:
            return None
        pid = int(str(row["holder"]).split(":")[-2])
        return next((r for r in self.running() if r.pid == pid), None)

    async def wait_holder(self, lease: str, *, among: Sequence[str] | None = None) -> Replica:
        """Wait until a running replica (one of ``among``) holds ``lease``."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            found = await self.holder(lease)
            if found is not None and (among is None or found.name in among):
                return found
            await asyncio.sleep(0.1)
        raise AssertionError(f"no replica of {among or 'the fleet'} took {lease}")

    async def readiness(self, name: str) -> tuple[int, dict[str, Any]]:
        """The replica's ``/readyz``: status and body."""
        status, text = await self.replicas[name].daemon.get("/readyz")
        return status, json.loads(text)

    async def readout(self) -> StoreReadout:
        """What the tally reads from the store (:mod:`bench.crash_tally`)."""
        assert self.url is not None
        conn = await asyncpg.connect(self.url)
        try:
            inbox = {str(r[0]): int(r[1]) for r in await conn.fetch(INBOX_BY_STATUS)}
            notices = [(str(r[0]), str(r[1] or "")) for r in await conn.fetch(NOTICES_SENT)]
            unconfirmed = [(str(r[0]),) for r in await conn.fetch(UNCONFIRMED)]
            undecided = [(str(r[0]),) for r in await conn.fetch(UNDECIDED)]
        finally:
            await conn.close()
        return StoreReadout(
            integrity=None,
            inbox=inbox,
            notices=notices,
            unconfirmed=unconfirmed,
            undecided=undecided,
        )

    def workspaces(self) -> list[Path]:
        return [r.workspace for r in self.replicas.values()]


def approval_fleet(
    root: Path, *, url: str, llm_url: str, driver: PlatformDriver, approvers: Sequence[str]
) -> Fleet:
    """Replicas whose ``shell`` calls ask ``approvers`` on the driver's platform
    (:func:`~tests.reliability.crash_rig.approval_keys`), with the driver's variables."""
    return Fleet(
        root,
        url=url,
        llm_url=llm_url,
        driver=driver,
        env=daemon_env(driver.environment()),
        auto_approve=(),
        channel_extra=approval_keys(driver, approvers),
    )
