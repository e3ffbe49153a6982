"""Canonical-path file locks."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from bot.tools.file_locks import PathLocks, canonical_paths, path_arguments


async def _holder(
    locks: PathLocks, paths: list[str], log: list[str], name: str, release: asyncio.Event, base: str
) -> None:
    async with locks.hold(paths, base=base):
        log.append(f"in {name}")
        await release.wait()
    log.append(f"out {name}")


async def test_a_symlink_and_its_target_share_one_lock(tmp_path: Path) -> None:
    target = tmp_path / "data.txt"
    target.write_text("x")
    link = tmp_path / "link.txt"
    os.symlink(target, link)
    locks = PathLocks()
    log: list[str] = []
    first, second = asyncio.Event(), asyncio.Event()
    second.set()
    async with asyncio.TaskGroup() as group:
        group.create_task(_holder(locks, ["link.txt"], log, "via-link", first, str(tmp_path)))
        await asyncio.sleep(0)
        group.create_task(_holder(locks, [str(target)], log, "direct", second, str(tmp_path)))
        for _ in range(10):
            await asyncio.sleep(0)
        assert log == ["in via-link"]  # the target's lock is the link's lock
        first.set()
    assert log == ["in via-link", "out via-link", "in direct", "out direct"]
    assert locks.held() == ()  # unused locks are dropped


async def test_different_files_do_not_block_each_other(tmp_path: Path) -> None:
    locks = PathLocks()
    log: list[str] = []
    never = asyncio.Event()
    free = asyncio.Event()
    free.set()
    blocker = asyncio.create_task(_holder(locks, ["a"], log, "a", never, str(tmp_path)))
    await asyncio.sleep(0)
    await _holder(locks, ["b"], log, "b", free, str(tmp_path))
    assert log == ["in a", "in b", "out b"]
    blocker.cancel()
    await asyncio.gather(blocker, return_exceptions=True)
    assert locks.held() == ()


async def test_several_paths_are_locked_in_sorted_order_without_deadlock(tmp_path: Path) -> None:
    locks = PathLocks()
    log: list[str] = []
    go = asyncio.Event()
    async with asyncio.TaskGroup() as group:
        for i in range(10):
            paths = ["a", "b", "c"] if i % 2 else ["c", "b", "a"]
            group.create_task(_holder(locks, paths, log, str(i), go, str(tmp_path)))
        await asyncio.sleep(0)
        go.set()
    assert len([e for e in log if e.startswith("out")]) == 10


@pytest.mark.parametrize(
    ("paths", "expected"),
    [(["b", "a", "b"], ["a", "b"]), (["./a", "x/../a"], ["a"]), ([""], [])],
)
def test_canonical_paths_are_sorted_and_unique(
    tmp_path: Path, paths: list[str], expected: list[str]
) -> None:
    real = os.path.realpath(tmp_path)
    assert canonical_paths(paths, base=str(tmp_path)) == tuple(
        os.path.join(real, e) for e in expected
    )


def test_path_arguments_reads_strings_and_lists() -> None:
    arguments = {"path": "a", "paths": ["b", 3, "c"], "other": "z"}
    assert path_arguments(("path", "paths", "missing"), arguments) == ["a", "b", "c"]


async def test_pipeline_locks_path_arguments(tmp_path: Path) -> None:
    """Two calls on the same file through a symlink never overlap."""
    from collections.abc import Mapping

    from bot.store import Store
    from bot.tools.spec import ToolContext, ToolResult
    from tests.fakes.scripted_provider import call
    from tests.tools.harness import Harness, spec, text_schema

    (tmp_path / "f.txt").write_text("x")
    os.symlink(tmp_path / "f.txt", tmp_path / "alias.txt")
    running = 0
    peak = 0

    async def touch(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        for _ in range(10):
            await asyncio.sleep(0)
        running -= 1
        return "touched"

    async with await Store.open(tmp_path / "db.sqlite") as store:
        harness = Harness(
            store,
            [
                spec(
                    "touch",
                    touch,
                    parameters=text_schema("path"),
                    concurrency_safe=True,
                    path_arguments=("path",),
                )
            ],
            workspace=str(tmp_path),
        )
        report = await harness.run(
            call("touch", {"path": "f.txt"}), call("touch", {"path": "alias.txt"})
        )
    assert all(o.ok for o in report.outcomes)
    assert peak == 1
