"""The store's contract runs on both engines: ``place`` (and ``store``, opened on it) is a
SQLite file in the test's folder, then a fresh migrated PostgreSQL database of the session's
server (``tests/pg.py``). ``text_place`` (and ``text_store``), for the tests that filter or
page on text, adds PostgreSQL databases whose collation is ICU's ``en-US`` and glibc's
``en_US.UTF-8`` (marked ``long``: CI's second stage runs them, the default run does not
double). A test that is about one engine only (PRAGMAs, WAL, the worker
thread, the pool) lives in ``tests/store/sqlite`` or ``tests/store/postgres`` instead."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.store import Store
from tests.pg import COLLATIONS, PgServer, collated_url

ENGINES = ("sqlite", "postgres")
COLLATED = (*ENGINES, *(pytest.param(name, marks=pytest.mark.long) for name in COLLATIONS))


@dataclass(frozen=True)
class StorePlace:
    """Where a test's database lives; :meth:`open` opens it (again: a restart)."""

    engine: str
    opener: Callable[[bool], Awaitable[Store]]

    async def open(self, *, migrate: bool = True) -> Store:
        return await self.opener(migrate)


@pytest.fixture(params=ENGINES)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> StorePlace:
    return _place(request, tmp_path)


def _place(request: pytest.FixtureRequest, tmp_path: Path) -> StorePlace:
    if request.param == "sqlite":
        path = tmp_path / "h.db"
        return StorePlace("sqlite", lambda migrate: Store.open(path, migrate=migrate))
    url = str(request.getfixturevalue("pg_url"))
    return StorePlace("postgres", lambda migrate: Store.open_postgres(url, migrate=migrate))


@pytest.fixture
async def store(place: StorePlace) -> AsyncIterator[Store]:
    async with await place.open() as opened:
        yield opened


@pytest.fixture(params=COLLATED)
def text_place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StorePlace]:
    """``place``, and PostgreSQL databases of each collation of :data:`COLLATIONS`."""
    if request.param in ENGINES:
        yield _place(request, tmp_path)
        return
    server: PgServer = request.getfixturevalue("pg_server")
    with collated_url(server, request.param) as url:
        yield StorePlace(request.param, lambda migrate: Store.open_postgres(url, migrate=migrate))


@pytest.fixture
async def text_store(text_place: StorePlace) -> AsyncIterator[Store]:
    async with await text_place.open() as opened:
        yield opened


@pytest.fixture
async def two(place: StorePlace) -> AsyncIterator[tuple[Store, Store]]:
    """Two stores open on one database at once, as two replicas (or two processes) are."""
    async with await place.open() as first, await place.open() as second:
        yield first, second
