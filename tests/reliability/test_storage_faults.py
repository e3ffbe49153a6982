"""Storage faults: the database locked by another process for a while, and a read-only file.

The lock is held by a real second process (``sqlite3`` in a child Python) with
``BEGIN EXCLUSIVE``, for longer than the daemon's 5 s busy timeout, at two moments: when a
message arrives, and in the middle of a turn (while the model is answering). Afterwards the
lock is released and the bot must go on answering; the database must pass
``integrity_check`` and hold no half-written turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import structlog

from bot.app import App
from bot.config import Settings, parse_settings
from bot.errors import StorageError
from bot.gateway import FAILURE_MESSAGE
from bot.providers.base import CompletionRequest, ProviderReply
from bot.store import Store
from tests.fakes.scripted_provider import ScriptedProvider, reply
from tests.test_console import Terminal
from tests.tools.transcript_check import well_formed

pytestmark = pytest.mark.slow

HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


@contextlib.asynccontextmanager
async def locked(db: Path) -> AsyncIterator[None]:
    """Another process holds an exclusive lock on ``db`` for the block."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOLDER,
        str(db),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        async with asyncio.timeout(60):
            assert (await proc.stdout.readline()).strip() == b"locked"
        yield
    finally:
        proc.stdin.close()
        async with asyncio.timeout(60):
            await proc.wait()


def settings_for(tmp_path: Path) -> Settings:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": 120},
            "channels": {"console": {"main": {}}},
        },
        environ={},
        require_provider=False,
    )


async def wait_event(logs: list[dict[str, object]], name: str) -> dict[str, object]:
    """Wait for a log event (structlog's capture list has no change notification)."""
    for _ in range(1200):
        found = [e for e in logs if e.get("event") == name]
        if found:
            return found[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {name} event; saw {[e.get('event') for e in logs][-20:]}")


def check_database(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return [s for (s,) in conn.execute("SELECT status FROM inbox ORDER BY id")]


@pytest.mark.long  # waits out SQLite's busy timeout: .ci/run's second stage
async def test_message_arriving_while_the_database_is_locked_is_not_lost(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider([reply("answer to second"), reply("answer to first")])
    terminal = Terminal()
    db = tmp_path / "hatchway.db"
    with structlog.testing.capture_logs() as logs:
        async with App(
            settings_for(tmp_path), provider=provider, channels={"console.main": terminal.channel}
        ):
            async with locked(db):
                terminal.type("first")
                await wait_event(logs, "envelope_failed")
            terminal.type("second")
            screen = await terminal.screen.wait_for("answer to second", within_s=60)
            terminal.close()
    assert check_database(db) == ["done"]
    # the sender of "first" is answered or told it failed
    assert "answer to first" in screen or FAILURE_MESSAGE in screen


@pytest.mark.long  # waits out SQLite's busy timeout: .ci/run's second stage
async def test_database_locked_mid_turn_fails_that_turn_cleanly_and_recovers(
    tmp_path: Path,
) -> None:
    release = asyncio.Event()
    asked = asyncio.Event()

    async def slow(_request: CompletionRequest) -> ProviderReply:
        asked.set()
        await release.wait()
        return reply("answer written while locked")

    provider = ScriptedProvider([slow, reply("answer after the lock")])
    terminal = Terminal()
    db = tmp_path / "hatchway.db"
    async with App(
        settings_for(tmp_path), provider=provider, channels={"console.main": terminal.channel}
    ) as app:
        terminal.type("first")
        async with asyncio.timeout(60):
            await asked.wait()
        async with locked(db):
            release.set()
            # the turn cannot record its answer: it fails, and says so
            await terminal.screen.wait_for(FAILURE_MESSAGE, within_s=60)
        terminal.type("second")
        screen = await terminal.screen.wait_for("answer after the lock", within_s=60)
        terminal.close()
        history = await app.store.history.load("console.main:terminal")
    assert "answer written while locked" not in screen
    assert well_formed(history)
    # no half-written turn: the failed turn left no assistant message behind
    assert [m.content for m in history if m.role == "assistant"] == ["answer after the lock"]
    assert check_database(db)[-1] == "done"


def make_read_only(state_dir: Path, writable: bool = False) -> None:
    (state_dir / "hatchway.db").chmod(0o644 if writable else 0o444)
    state_dir.chmod(0o755 if writable else 0o555)


@pytest.mark.skipif(os.geteuid() == 0, reason="file modes do not stop root from writing")
async def test_read_only_database_fails_at_start_with_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "hatchway.db"
    async with await Store.open(db):
        pass
    make_read_only(tmp_path)
    try:
        with pytest.raises(StorageError) as raised:
            async with App(settings_for(tmp_path), provider=ScriptedProvider(), channels={}):
                pass
    finally:
        make_read_only(tmp_path, writable=True)
    assert str(db) in str(raised.value)
