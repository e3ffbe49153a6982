"""Saved attachments deleted by age: rows with their files, and stray files."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from bot.attachments.retention import DAY_S, prune_attachments, prune_periodically
from bot.config.attachments import AttachmentsConfig
from bot.store import AttachmentKind, AttachmentRecord, Store

NOW = 1_800_000_000.0


def _saved(folder: Path, name: str, *, age_days: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(name)
    when = NOW - age_days * DAY_S
    os.utime(path, (when, when))
    return path


def _row(id: str, path: Path, copy: Path, *, age_days: float) -> AttachmentRecord:
    return AttachmentRecord(
        id=id,
        session_key="telegram.main:1",
        turn_id="t",
        channel="telegram.main",
        conversation_id="1",
        user_id="u",
        name=path.name,
        kind=AttachmentKind.TEXT,
        mime_type="text/plain",
        size=1,
        path=str(path),
        workspace_path=str(copy),
        created_at=NOW - age_days * DAY_S,
    )


def _names(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


async def test_old_rows_files_and_strays_go_new_ones_stay(tmp_path: Path) -> None:
    folder, workspace = tmp_path / "attachments", tmp_path / "ws"
    old = _row(
        "old",
        _saved(folder, "old-a.txt", age_days=9),
        _saved(workspace, "old-a.txt", age_days=9),
        age_days=9,
    )
    new = _row(
        "new",
        _saved(folder, "new-b.txt", age_days=1),
        _saved(workspace, "new-b.txt", age_days=1),
        age_days=1,
    )
    _saved(folder, "stray-c.txt", age_days=8)  # saved, never recorded (a crash between)
    _saved(folder, "fresh-d.txt.part", age_days=0)  # a download under way
    async with await Store.open(tmp_path / "h.db") as store:
        await store.attachments.record(old, new)
        assert await prune_attachments(store, now=NOW, keep_days=7, folder=folder) == 2
        assert await store.attachments.get("old") is None
        assert await store.attachments.get("new") == new
        assert await prune_attachments(store, now=NOW, keep_days=7, folder=folder) == 0
    assert _names(folder) == ["fresh-d.txt.part", "new-b.txt"]
    assert _names(workspace) == ["new-b.txt"]


async def test_the_periodic_prune_runs_at_once_and_reads_its_config(tmp_path: Path) -> None:
    folder = tmp_path / "attachments"
    _saved(folder, "two-days.txt", age_days=2)
    config = AttachmentsConfig(keep_days=1)
    rounds: list[float] = []
    second_round = asyncio.Event()

    def clock() -> float:  # read once at the start of each round
        rounds.append(NOW)
        if len(rounds) == 2:
            second_round.set()
        return NOW

    async with await Store.open(tmp_path / "h.db") as store:
        task = asyncio.create_task(
            prune_periodically(store, config=lambda: config, folder=folder, clock=clock, every_s=0)
        )
        try:
            await asyncio.wait_for(second_round.wait(), 30)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    assert _names(folder) == []
