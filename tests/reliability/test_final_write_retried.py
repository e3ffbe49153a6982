"""One process on SQLite whose turn's last write fails: the database locked by another
process (a real second process holding ``BEGIN EXCLUSIVE``) from the model's answer until
after the transaction that settles the turn's reply gave up. The failure line still goes
out (the reply is sent even when it cannot be recorded); the transaction that marks the
entry is kept and committed again once the lock goes, so the entry is settled while the
process runs, not left ``processing`` for a restart to settle by guesswork."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import structlog

from bot.app import App
from bot.gateway import FAILURE_MESSAGE
from bot.providers.base import CompletionRequest, ProviderReply
from bot.store import InboxKey, InboxStatus
from tests.fakes.scripted_provider import ScriptedProvider, reply
from tests.reliability.test_storage_faults import locked, settings_for, wait_event
from tests.test_console import Terminal

# waits out SQLite's busy timeout more than once: .ci/run's second stage
pytestmark = [pytest.mark.slow, pytest.mark.long]


async def test_a_turn_whose_last_write_failed_is_settled_without_a_restart(
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
    with structlog.testing.capture_logs() as logs:
        async with App(
            settings_for(tmp_path), provider=provider, channels={"console.main": terminal.channel}
        ) as app:
            terminal.type("first")
            async with asyncio.timeout(60):
                await asked.wait()
            async with locked(db):
                release.set()
                await terminal.screen.wait_for(FAILURE_MESSAGE, within_s=60)
                # the transaction marking the entry failed too, while the lock was held
                await wait_event(logs, "turn_bookkeeping_failed")
            settled = await wait_event(logs, "reply_settled_late")
            key = InboxKey(channel=str(settled["channel"]), message_id=str(settled["message_id"]))
            entry = await app.store.inbox.get(key)
            assert entry is not None and entry.status is InboxStatus.FAILED
            assert await app.store.inbox.unfinished() == []

            terminal.type("second")
            screen = await terminal.screen.wait_for("answer after the lock", within_s=60)
            terminal.close()
    assert screen.count(FAILURE_MESSAGE) == 1
    assert "answer written while locked" not in screen
