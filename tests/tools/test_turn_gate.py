"""The per-turn shared/exclusive FIFO gate."""

from __future__ import annotations

import asyncio

from bot.tools.turn_gate import TurnGate


async def _enter(
    gate: TurnGate, name: str, exclusive: bool, log: list[str], release: asyncio.Event
) -> None:
    async with gate.hold(exclusive=exclusive):
        log.append(f"in {name}")
        await release.wait()
    log.append(f"out {name}")


async def test_reads_share_and_a_write_is_a_fifo_barrier() -> None:
    gate = TurnGate()
    log: list[str] = []
    release = {n: asyncio.Event() for n in ("r1", "r2", "w", "r3")}
    async with asyncio.TaskGroup() as group:
        group.create_task(_enter(gate, "r1", False, log, release["r1"]))
        group.create_task(_enter(gate, "r2", False, log, release["r2"]))
        group.create_task(_enter(gate, "w", True, log, release["w"]))
        group.create_task(_enter(gate, "r3", False, log, release["r3"]))
        for _ in range(10):
            await asyncio.sleep(0)
        assert log == ["in r1", "in r2"]  # r3 waits behind the queued write
        release["r1"].set()
        release["r2"].set()
        for _ in range(10):
            await asyncio.sleep(0)
        assert log[-1] == "in w" and "in r3" not in log
        release["w"].set()
        release["r3"].set()
    assert log.index("out w") < log.index("in r3")


async def test_a_cancelled_waiting_writer_unblocks_later_readers() -> None:
    gate = TurnGate()
    log: list[str] = []
    hold = asyncio.Event()
    free = asyncio.Event()
    free.set()
    reader = asyncio.create_task(_enter(gate, "r1", False, log, hold))
    await asyncio.sleep(0)
    writer = asyncio.create_task(_enter(gate, "w", True, log, free))
    await asyncio.sleep(0)
    late = asyncio.create_task(_enter(gate, "r2", False, log, free))
    await asyncio.sleep(0)
    assert log == ["in r1"]
    writer.cancel()
    await asyncio.gather(writer, return_exceptions=True)
    await late
    hold.set()
    await reader
    assert "in w" not in log and "in r2" in log
