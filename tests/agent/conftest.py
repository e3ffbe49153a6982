from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.store import Store
from tests.sqlite_template import copy_migrated


@pytest.fixture
async def store(tmp_path: Path, migrated_sqlite: Path) -> AsyncIterator[Store]:
    async with await Store.open(copy_migrated(migrated_sqlite, tmp_path / "hatchway.db")) as opened:
        yield opened
