"""A migrated SQLite database to copy, as ``tests/pg.py`` keeps a migrated PostgreSQL template.

Building the schema of a new file (every migration in ``bot/store/sqlite/migrations``) costs
about 30 ms of CPU, and a test that opens a new store only needs the result. So each session
(each pytest-xdist worker, under that worker's own temporary folder) migrates one file with
:meth:`bot.store.Store.open` itself and closes it (the copy is then the whole database, no
``-wal`` file beside it), and while the tests run, a SQLite database opened to be created and
migrated (``Database.open`` with ``create`` and ``migrate``, as ``Store.open`` and every
``App`` do) whose file does not exist yet starts as a copy of that file (half a millisecond,
made as ``Database.open`` makes a new file: missing folders ``0700``, the file ``0600``).
``Database.open`` then runs as ever on it: it prepares the connection and finds no migration
to apply. Nothing else about the open changes; a file that exists (a restart, a database a
test made at an older schema), ``create=False``, ``migrate=False`` and PostgreSQL are left as
they are, and so are the daemons and commands tests run as subprocesses.

The template is named after the migrations' content (their names and SQL, hashed): an open
whose migrations on disk differ from the template's (a migration added or edited while the
session runs) migrates a new file as without the template, so a copy is always the schema
the tree's migrations build.

Tests about migrating, or about what opening a new file does, are marked
``@pytest.mark.fresh_sqlite`` (a module or a class may be): their opens make new files.

Fixtures (imported by ``tests/conftest.py``, so every test package has them):

* ``migrated_sqlite`` (session): the template's path; read it, never write it.
* ``sqlite_template`` (session, autouse): copies the template as above.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import uuid
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from bot.private_files import FILE_MODE, private_file, private_folder
from bot.store import Store
from bot.store.sqlite.database import Database
from bot.store.sqlite.schema import migrations
from tests.pg import _run_async

MARKER = "fresh_sqlite"

fresh_only = False
"""Set for each test by ``tests/conftest.py``: true when it is marked ``fresh_sqlite``."""


def migrations_digest() -> str:
    """The migrations on disk, as a short hash of their names and SQL; hashed again only
    when a file of the folder is added, removed, or written (its size or mtime changes)."""
    folder = Path(str(resources.files("bot.store.sqlite") / "migrations"))
    signature = tuple(
        sorted((e.name, e.stat().st_mtime_ns, e.stat().st_size) for e in os.scandir(folder))
    )
    if (known := _digests.get(signature)) is not None:
        return known
    digest = hashlib.sha256()
    for _number, name, sql in migrations():
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update(sql.encode())
        digest.update(b"\0")
    _digests[signature] = found = digest.hexdigest()[:16]
    return found


_digests: dict[tuple[tuple[str, int, int], ...], str] = {}


async def _migrate(path: Path) -> None:
    async with await Store.open(path) as store:
        await store.schema_version()


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty database at the last migration, for :func:`copy_migrated`."""
    path = tmp_path_factory.mktemp("sqlite-template") / f"hatchway-{migrations_digest()}.db"
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


def _is_new(path: Path) -> bool:
    return not (path.exists() or path.is_symlink() or Path(f"{path}-wal").exists())


def _copy_if_new(template: Path, path: Path) -> None:
    """Put a copy of ``template`` at ``path`` if nothing is there: written beside it under
    another name, then linked into place, so no opener ever sees half a file and one that
    got there first keeps its own. Any failure leaves ``path`` to ``Database.open`` (which
    reports it as it would have)."""
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.template")
    try:
        private_folder(path.parent)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            with template.open("rb") as source, os.fdopen(fd, "wb", closefd=False) as target:
                shutil.copyfileobj(source, target)
        finally:
            os.close(fd)
        os.link(partial, path)
    except OSError:
        pass  # FileExistsError included: another opener made the file first
    finally:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


@pytest.fixture(scope="session", autouse=True)
def sqlite_template(migrated_sqlite: Path) -> Iterator[Path]:
    """While the session runs, ``Database.open`` starts a new file (to be created and
    migrated) from :func:`migrated_sqlite` when the migrations are still the template's,
    outside tests marked ``fresh_sqlite``."""
    digest = migrations_digest()
    opener = Database.open.__func__  # type: ignore[attr-defined]

    async def open_from_template(
        cls: type[Database], path: str | Path, *, migrate: bool = True, create: bool = True
    ) -> Any:
        file = Path(path)
        new = create and migrate and not fresh_only and _is_new(file)
        if new and migrations_digest() == digest:
            _copy_if_new(migrated_sqlite, file)
        return await opener(cls, path, migrate=migrate, create=create)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Database, "open", classmethod(open_from_template))
        yield migrated_sqlite
