"""A migrated SQLite database to copy, as ``tests/pg.py`` keeps a migrated PostgreSQL template.

Building the schema of a new file (every migration in ``bot/store/sqlite/migrations``) costs
about 30 ms of CPU, and a test that opens a new store only needs the result: the fixtures of
such tests put a copy of this session's migrated file where their store goes
(:func:`copy_migrated`, half a millisecond), and :meth:`bot.store.Store.open` then finds
nothing to apply. The template is made by ``Store.open`` itself, once per session (per
pytest-xdist worker, under that worker's own temporary folder), and closed, so the copy is
the whole database (no ``-wal`` file beside it).

Tests about migrating, or about what opening a new file does, open a new file instead.

Fixture (imported by ``tests/conftest.py``, so every test package has it):

* ``migrated_sqlite`` (session): the template's path; read it, never write it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.private_files import private_file, private_folder
from bot.store import Store
from tests.pg import _run_async


async def _migrate(path: Path) -> None:
    async with await Store.open(path) as store:
        await store.schema_version()


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty database at the last migration, for :func:`copy_migrated`."""
    path = tmp_path_factory.mktemp("sqlite-template") / "hatchway.db"
    _run_async(lambda: _migrate(path))
    leftovers = [p.name for p in path.parent.iterdir() if p != path]
    assert not leftovers, f"the closed template left {leftovers} beside it"
    return path


def copy_migrated(template: Path, path: Path) -> Path:
    """``path`` as a copy of ``template``, made as ``Store.open`` makes a new file (missing
    folders ``0700``, the file ``0600``); returns ``path``."""
    private_folder(path.parent)
    private_file(path)
    shutil.copyfile(template, path)
    return path
