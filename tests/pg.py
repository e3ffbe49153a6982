"""A real PostgreSQL server for the tests: one per test session, a fresh database per test.

Under pytest-xdist each worker is a session of its own, so each worker that needs PostgreSQL
starts its own server (about a second); databases, the template among them, are named
after the worker, so two workers never clash even on one server.

The server is Debian's ``postgresql`` package (``/usr/lib/postgresql/<version>/bin``; ``.ci/run``
installs it when it is missing), started with ``initdb`` and ``pg_ctl`` on a temporary data
directory, listening on 127.0.0.1 on a free port (its unix socket stays in the data
directory). PostgreSQL refuses to run as root, so under root the binaries run as the
``postgres`` user the package creates. Nothing is skipped: without the binaries the
fixtures fail, saying what to install.

Fixtures (imported by ``tests/conftest.py``, so every test package has them):

* ``pg_server`` (session): the :class:`PgServer`; ``pg_server.url(name)`` is a database's
  URL, ``create_database``/``drop_database`` make and remove one;
* ``pg_url``: the URL of a fresh database, migrated (a copy of a template migrated once
  per session), dropped after the test;
* ``pg_empty_url``: the URL of a fresh database with no tables at all;
* ``pg_store``: a :class:`~bot.store.Store` open on ``pg_url``;
* :func:`collated_url`: the URL of a fresh migrated database whose default collation is one
  of :data:`COLLATIONS` (ICU's ``en-US``, glibc's ``en_US.UTF-8``) instead of the server's
  ``C.UTF-8``, where text sorts the way people read it (``;`` before ``:``, case and
  punctuation weighed last): the store's queries must mean the same there.

The superuser ``postgres`` connects over TCP without a password; the role ``hatchway``
(password :data:`PASSWORD`) needs one, for tests of ``[storage] password_env``.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")

PASSWORD = "pg-test-secret-7c1"
"""The password of the role ``hatchway`` (scram-sha-256 over TCP)."""

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
"""The pytest-xdist worker this process is (``gw0``, ``gw1`` …), ``main`` without xdist."""

TEMPLATE = f"hatchway_template_{WORKER}"
"""The database migrated once per session; each test's ``pg_url`` is a copy of it."""

_HBA = """\
local all all trust
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
"""


def find_bin_dir() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding ``initdb``; fails the test
    (naming the package) when PostgreSQL is not installed."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: (
            int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0
        ),
    )
    if not found:
        pytest.fail(
            "PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin/initdb): "
            "install Debian's 'postgresql' package (.ci/run does it)",
            pytrace=False,
        )
    return Path(found[-1]).parent


def free_port() -> int:
    """A loopback port free a moment ago; another process may take it before it is used
    (:func:`start_server` tries again on a clash)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections for the block: bound, so no other process
    (another test worker) can take it, but never listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def _run_async(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to its end from synchronous code, whether or not a loop runs here
    (a thread of its own has none)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(make())
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=target, name="pg-admin")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


@dataclass
class PgServer:
    """A running PostgreSQL server on 127.0.0.1:``port`` (data in ``root``/data)."""

    bin_dir: Path
    root: Path
    port: int
    as_postgres: bool
    host: str = "127.0.0.1"
    user: str = "postgres"
    _names: Iterator[int] = field(default_factory=itertools.count)
    #: Migrated databases by collation (:func:`collated_template`), made once each.
    collated: dict[str, str] = field(default_factory=dict)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log_file(self) -> Path:
        return self.root / "server.log"

    @property
    def version(self) -> int:
        return int(self.bin_dir.parent.name) if self.bin_dir.parent.name.isdigit() else 0

    def url(self, database: str = "postgres", *, user: str | None = None) -> str:
        """A ``postgresql://`` URL of ``database`` (no password: the superuser needs none;
        the role ``hatchway`` takes :data:`PASSWORD` from where the test puts it)."""
        return f"postgresql://{user or self.user}@{self.host}:{self.port}/{database}"

    # -- the server -----------------------------------------------------------------------

    def command(self, *args: str) -> list[str]:
        """``args`` as a command line run as the server's owner."""
        if self.as_postgres:
            return ["runuser", "-u", "postgres", "--", *args]
        return list(args)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args), capture_output=True, text=True, check=False, cwd=self.root
        )

    def start(self) -> None:
        options = " ".join(
            [
                f"-p {self.port}",
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={self.data}",
                "-c max_connections=200",
                # a test server: durability is not what is under test (a kill -9 of the
                # server is not; a kill -9 of a replica is, and loses nothing committed)
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
            ]
        )
        done = self.run(
            str(self.bin_dir / "pg_ctl"),
            "start",
            "-w",
            "-t",
            "60",
            "-D",
            str(self.data),
            "-l",
            str(self.log_file),
            "-o",
            options,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"pg_ctl start failed: {done.stdout}{done.stderr}\n{self.log_tail()}"
            )

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``mode``: smart, fast or immediate)."""
        self.run(str(self.bin_dir / "pg_ctl"), "stop", "-w", "-m", mode, "-D", str(self.data))

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # -- databases ------------------------------------------------------------------------

    def admin(self, *statements: str) -> None:
        """Run ``statements`` one by one as the superuser, on the ``postgres`` database."""
        import asyncpg

        async def go() -> None:
            conn = await asyncpg.connect(self.url("postgres"))
            try:
                for statement in statements:
                    await conn.execute(statement)
            finally:
                await conn.close()

        _run_async(go)

    def new_name(self, prefix: str = "t") -> str:
        return f"{prefix}_{WORKER}_{os.getpid()}_{next(self._names)}"

    def create_database(self, name: str | None = None, *, template: str | None = None) -> str:
        """Create a database (a copy of ``template`` if given); returns its name."""
        name = name or self.new_name()
        copy = f" TEMPLATE {template}" if template else ""
        self.admin(f'CREATE DATABASE "{name}"{copy}')
        return name

    def drop_database(self, name: str) -> None:
        self.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


COLLATIONS: dict[str, str] = {
    "icu-en-US": "LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'",
    "glibc-en_US": "LOCALE_PROVIDER libc LOCALE 'en_US.UTF-8'",
}
"""A database's collation by name, as ``CREATE DATABASE`` options (PostgreSQL 15 syntax)."""

_GLIBC_LOCALE = "en_US.UTF-8"


def _require_glibc_locale() -> None:
    """Fail, saying how to make it, when glibc has no ``en_US.UTF-8`` locale."""
    import locale

    try:
        previous = locale.setlocale(locale.LC_COLLATE)
        locale.setlocale(locale.LC_COLLATE, _GLIBC_LOCALE)
        locale.setlocale(locale.LC_COLLATE, previous)
    except locale.Error:
        pytest.fail(
            f"the glibc locale {_GLIBC_LOCALE} is missing: generate it with "
            "'localedef -i en_US -f UTF-8 en_US.UTF-8' (Debian's 'locales'; .ci/run does it)",
            pytrace=False,
        )


def collated_template(server: PgServer, collation: str) -> str:
    """A migrated database of ``collation`` (made once per session): what
    :func:`collated_url` copies."""
    name = server.collated.get(collation)
    if name is None:
        if collation.startswith("glibc"):
            _require_glibc_locale()
        name = f"{TEMPLATE}_{collation.replace('-', '_').lower()}"
        server.admin(f'CREATE DATABASE "{name}" {COLLATIONS[collation]} TEMPLATE template0')
        _migrate(server.url(name))
        server.collated[collation] = name
    return name


@contextlib.contextmanager
def collated_url(server: PgServer, collation: str) -> Iterator[str]:
    """The URL of a fresh migrated database whose default collation is ``collation`` (a key
    of :data:`COLLATIONS`), dropped afterwards."""
    name = server.create_database(template=collated_template(server, collation))
    try:
        yield server.url(name)
    finally:
        with contextlib.suppress(Exception):
            server.drop_database(name)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_orphans(bin_dir: Path, as_postgres: bool) -> None:
    """Stop the servers of earlier test runs that were killed before their teardown (their
    ``owner`` file names a process that is gone), and remove their data directories."""
    for owner in glob.glob(os.path.join(tempfile.gettempdir(), "hatchway-pg-*", "owner")):
        root = Path(owner).parent
        try:
            pid = int(Path(owner).read_text())
        except (OSError, ValueError):
            continue
        if _alive(pid):
            continue
        orphan = PgServer(bin_dir=bin_dir, root=root, port=0, as_postgres=as_postgres)
        if (orphan.data / "postmaster.pid").exists():
            orphan.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)


def start_server() -> PgServer:
    """initdb a temporary data directory and start a server on a free loopback port."""
    bin_dir = find_bin_dir()
    as_postgres = os.geteuid() == 0
    stop_orphans(bin_dir, as_postgres)
    root = Path(tempfile.mkdtemp(prefix="hatchway-pg-"))
    (root / "owner").write_text(str(os.getpid()))
    if as_postgres:
        try:
            shutil.chown(root, "postgres", "postgres")
        except LookupError:
            pytest.fail(
                "running as root, PostgreSQL needs the 'postgres' user (Debian's "
                "'postgresql' package creates it)",
                pytrace=False,
            )
    server = PgServer(bin_dir=bin_dir, root=root, port=0, as_postgres=as_postgres)
    done = server.run(
        str(bin_dir / "initdb"),
        "-D",
        str(server.data),
        "-U",
        "postgres",
        "--auth=trust",
        "-E",
        "UTF8",
        "--locale=C.UTF-8",
        "--no-sync",
    )
    if done.returncode != 0:
        raise RuntimeError(f"initdb failed: {done.stdout}{done.stderr}")
    hba = server.data / "pg_hba.conf"
    server.run("sh", "-c", f"cat > {hba} <<'EOF'\n{_HBA}EOF")
    last: Exception | None = None
    for _ in range(5):  # a free port may be taken between the probe and the start
        server.port = free_port()
        try:
            server.start()
        except RuntimeError as exc:
            last = exc
            continue
        server.admin(
            "SET password_encryption = 'scram-sha-256'",
            f"CREATE ROLE hatchway LOGIN CREATEDB PASSWORD '{PASSWORD}'",
        )
        return server
    shutil.rmtree(root, ignore_errors=True)
    raise RuntimeError(f"PostgreSQL did not start: {last}")


def _migrate(url: str) -> None:
    from bot.store.postgres import Database

    async def go() -> None:
        db = await Database.open(url)
        await db.aclose()

    _run_async(go)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    server = start_server()
    try:
        yield server
    finally:
        server.stop("immediate")
        shutil.rmtree(server.root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_template(pg_server: PgServer) -> str:
    """The name of a database migrated once per session (each ``pg_url`` copies it)."""
    pg_server.create_database(TEMPLATE)
    _migrate(pg_server.url(TEMPLATE))
    return TEMPLATE


@pytest.fixture
def pg_url(pg_server: PgServer, pg_template: str) -> Iterator[str]:
    """The URL of a fresh, migrated database of its own, dropped after the test."""
    name = pg_server.create_database(template=pg_template)
    try:
        yield pg_server.url(name)
    finally:
        with contextlib.suppress(Exception):
            pg_server.drop_database(name)


@pytest.fixture
def pg_empty_url(pg_server: PgServer) -> Iterator[str]:
    """The URL of a fresh database with no tables, dropped after the test."""
    name = pg_server.create_database()
    try:
        yield pg_server.url(name)
    finally:
        with contextlib.suppress(Exception):
            pg_server.drop_database(name)


@pytest.fixture
async def pg_store(pg_url: str) -> AsyncIterator[Any]:
    """A :class:`bot.store.Store` on a fresh migrated PostgreSQL database."""
    from bot.store import Store

    store = await Store.open_postgres(pg_url)
    try:
        yield store
    finally:
        await store.aclose()
