"""The parked-turn sweep's idle gate (bot.gateway.resumption): an idle process reads
nothing for parked turns (the statements counted with SQLite's trace callback on the real
store's connection), a row recorded here or by another replica opens the gate, and a
decision made by another process (as ``hatchway approvals approve`` makes it: its own store
and service over the same database) still resumes the parked turn."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot.approval.service import ApprovalService
from bot.channel import ClickVerdict
from bot.gateway.resumption import Resumptions
from bot.providers.base import ToolCallRequest
from bot.store import Store
from bot.store.parked import ParkRecord
from bot.turn import TurnIdentity
from tests.approval.conftest import WAIT_S, make_envelope, make_settings, until_state
from tests.fakes.replica_apps import Replicas, message

#: Leases long enough that a loaded machine's slow heartbeat never has a replica refuse work.
STEADY = {"heartbeat_s": 1.0, "lease_ttl_s": 10.0, "max_clock_skew_s": 1.0}
PARK_SOON = {"approval": {"timeout_s": 60.0, "wait_in_turn_s": 0.2}, "replicas": STEADY}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Trace:
    """Every statement the store's one SQLite connection runs while :attr:`on`."""

    def __init__(self) -> None:
        self.statements: list[str] = []
        self.on = False

    def __call__(self, statement: str) -> None:
        if self.on:
            self.statements.append(statement)

    def take(self) -> list[str]:
        taken, self.statements = self.statements, []
        return taken

    @classmethod
    async def installed(cls, store: Store) -> Trace:
        """A trace of ``store``'s connection (a SQLite one), off until :attr:`on`."""
        trace = cls()

        def install(conn: sqlite3.Connection) -> None:
            conn.set_trace_callback(trace)

        await store.db._worker.submit(install)  # type: ignore[attr-defined]
        return trace


@pytest.fixture
async def traced(tmp_path: Path) -> AsyncIterator[tuple[Store, Trace]]:
    async with await Store.open(tmp_path / "hatchway.db") as store:
        yield store, await Trace.installed(store)


def record(approval_id: str) -> ParkRecord:
    envelope = make_envelope()
    return ParkRecord(
        approval_id=approval_id,
        turn_id="turn-1",
        session_key="slack.team:C1:T1",
        envelope=envelope,
        text="",
        calls=(ToolCallRequest(id="call-1", name="shell", arguments="{}"),),
        waiting=0,
        since=1.0,
    )


async def test_an_idle_process_reads_nothing_for_parked_turns(
    traced: tuple[Store, Trace],
) -> None:
    store, trace = traced
    service = ApprovalService(make_settings(), store, lambda _ref: None)
    queued: list[TurnIdentity] = []
    clock = Clock()
    sweeps = Resumptions(
        store=store,
        enqueue=queued.append,
        expire_due=service.expire_parked_due,
        show_outcome=service.show_outcome,
        idle_check_s=30.0,
        clock=clock,
    )
    trace.on = True
    # the first turn sweeps (rows may be left from before the start) and finds none
    assert await sweeps.tick() == 0
    assert any("parked_turns" in s for s in trace.take())
    assert sweeps.idle
    for _ in range(5):
        assert await sweeps.tick() == 0
    assert trace.take() == []
    # once every idle check: one statement
    clock.now += 30.0
    assert await sweeps.tick() == 0
    assert trace.take() == ["SELECT 1 FROM parked_turns LIMIT 1"]
    assert await sweeps.tick() == 0
    assert trace.take() == []

    # a turn of this process records a row: the next turn sweeps, without waiting for a check
    assert await store.parked.hold(record("apr-1"))
    trace.take()
    await sweeps.tick()
    assert not sweeps.idle
    assert any("parked_turns p" in s for s in trace.take())
    await sweeps.tick()
    assert any("parked_turns p" in s for s in trace.take())  # open while the row is there
    # the row goes: the next sweep closes the gate again
    await store.parked.drop("apr-1")
    await sweeps.tick()
    assert sweeps.idle
    trace.take()
    await sweeps.tick()
    assert trace.take() == []

    # a decision made here (a nudge) opens it too
    sweeps.nudge("apr-2")
    await sweeps.tick()
    assert any("parked_turns p" in s for s in trace.take())
    assert sweeps.idle


async def test_a_row_another_process_wrote_is_found_by_the_idle_check(
    traced: tuple[Store, Trace], tmp_path: Path
) -> None:
    store, _trace = traced
    service = ApprovalService(make_settings(), store, lambda _ref: None)
    clock = Clock()
    sweeps = Resumptions(
        store=store,
        enqueue=lambda _turn: None,
        expire_due=service.expire_parked_due,
        show_outcome=service.show_outcome,
        idle_check_s=30.0,
        clock=clock,
    )
    await sweeps.tick()
    assert sweeps.idle
    async with await Store.open(tmp_path / "hatchway.db") as other:
        assert await other.parked.hold(record("apr-9"))
    await sweeps.tick()
    assert sweeps.idle  # not told, and no check due yet
    clock.now += 30.0
    await sweeps.tick()
    assert not sweeps.idle


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(WAIT_S):
        # the sweep's state is the only signal there is
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.02)


async def test_the_gate_closes_in_a_daemon_and_a_cli_decision_still_resumes(
    replicas: Replicas, pg_url: str
) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    b = await replicas.start("b", extra=PARK_SOON)
    await until(lambda: a.app.resumptions.idle and b.app.resumptions.idle)

    await a.deliver(message("m1 deploy please", "1"))
    card = await asyncio.wait_for(a.channel.next_card(), WAIT_S)
    approval_id = card.card.approval_id
    # b was told (the signal) that a row is there
    await until(lambda: not b.app.resumptions.idle)
    await until_state(a.app.store, approval_id)

    # decided as hatchway approvals approve does: another store, another service
    cli = await Store.open_postgres(pg_url)
    try:
        settings = a.app.settings
        verdict = await ApprovalService(settings, cli, lambda _ref: None).decide_from_cli(
            approval_id, True, "operator:root"
        )
    finally:
        await cli.aclose()
    assert verdict is ClickVerdict.ACCEPTED
    # resumed by whichever replica's sweep claims it first
    await until(lambda: "done: deployed v2" in a.channel.texts + b.channel.texts)
    assert [r for r, _ in replicas.deployed] in (["a"], ["b"])
    # the row is gone: both gates close again
    await until(lambda: a.app.resumptions.idle and b.app.resumptions.idle)
