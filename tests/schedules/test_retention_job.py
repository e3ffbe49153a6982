"""The daily retention job on a real SQLite file: a run deletes what is older than each
configured window and nothing younger, keeps what a 0 window keeps for ever, compacts the
file and records itself; the job runs at once when no run was ever recorded, and only a day
after the last one."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from bot.config.retention import RetentionConfig
from bot.schedules.retention import DAY_S, RetentionJob
from bot.store import Store
from bot.store.context_lines import ContextLine
from tests.schedules.conftest import wait_until
from tests.store.records import audit_row, count, envelope, turn


async def aged(store: Store, now: float) -> None:
    """A turn, a usage row, an audit row, a display name and a conversation title 400 days
    old, and the same a day old."""
    for n, age in (("1", 400), ("2", 1)):
        await turn(store, envelope("1001", "-100", n, text=f"{age} days"), at=now - age * DAY_S)
        await audit_row(store, requester="1001", decided_by="2002", at=now - age * DAY_S)
        # the console's name of someone who last wrote then
        await store.display_names.remember(
            f"telegram:{age}", f"seen {age} days ago", now - age * DAY_S
        )
        # and the console's title of a group last written in then
        await store.conversation_titles.remember(
            f"telegram.main:-{age}", f"group of {age} days ago", now - age * DAY_S
        )


async def context_lines(store: Store, now: float) -> None:
    """Two group context lines kept for an hour, in two conversations: one kept two hours
    ago (its conversation silent since), one just now."""
    for message, at in (("old", now - 7200), ("new", now)):
        line = ContextLine(
            channel="telegram.main",
            conversation_id=f"-{message}",
            message_id=message,
            sender_id="1001",
            text=message,
            at=at,
        )
        await store.context_lines.keep(line, window=10, keep_s=3600)


async def test_a_run_deletes_past_each_window(tmp_path: Path) -> None:
    now = time.time()
    config = RetentionConfig(
        history_days=90, tool_calls_days=90, inbox_days=90, usage_days=90, audit_days=365
    )
    async with await Store.open(tmp_path / "h.db") as store:
        await aged(store, now)
        await context_lines(store, now)
        run = await RetentionJob(store=store, config=lambda: config).run_once()
        assert run.removed == {
            "context_lines": 1,  # past its own window, whatever [retention] says
            "messages": 4,
            "tool_calls": 1,
            "approvals": 0,
            "inbox": 1,
            "outbox": 1,
            "display_names": 1,
            "conversation_titles": 1,
            "usage": 1,
            "budget_notices": 0,
            "audit": 1,
        }
        assert run.compaction is not None and not run.compaction.switched
        tables = (
            "messages",
            "tool_calls",
            "inbox",
            "outbox",
            "display_names",
            "conversation_titles",
            "usage",
            "audit",
        )
        for table in tables:
            assert await count(store, f"SELECT COUNT(*) FROM {table}") > 0, table
        last = await store.retention.last_run()
        assert last is not None and last >= now


async def test_windows_of_zero_keep_everything(tmp_path: Path) -> None:
    now = time.time()
    config = RetentionConfig(inbox_days=0, vacuum=False)
    async with await Store.open(tmp_path / "h.db") as store:
        await aged(store, now)
        run = await RetentionJob(store=store, config=lambda: config).run_once()
        assert run.removed == {} and run.compaction is None
        assert await count(store, "SELECT COUNT(*) FROM messages") == 8


async def test_the_job_runs_when_due(tmp_path: Path) -> None:
    now = time.time()
    config = RetentionConfig(history_days=90)
    async with await Store.open(tmp_path / "h.db") as store:
        await aged(store, now)
        job = RetentionJob(store=store, config=lambda: config, first_run_delay_s=0)
        async with asyncio.TaskGroup() as group:
            task = group.create_task(job.run())

            async def ran() -> bool:
                return await store.retention.last_run() is not None

            await wait_until(ran)
            task.cancel()
        assert await count(store, "SELECT COUNT(*) FROM messages") == 4
        # the next run is a day after this one, whenever the job starts again
        later = RetentionJob(store=store, config=lambda: config, clock=lambda: now + 3600)
        assert 0 < await later._until_due() <= DAY_S
