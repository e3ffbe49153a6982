"""Start-up recovery of cut-off background (scheduled) runs on a real SQLite file: re-run once
under the catch-up policy, never "ask again", and a second cut-off ends failed, not looping."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.config import parse_settings
from bot.envelope import (
    Capabilities,
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
    envelope_to_json,
    target_to_json,
)
from bot.gateway import SHUTDOWN_MESSAGE, Gateway
from bot.gateway.recovery import (
    INTERRUPTED,
    RERUN_CUT_OFF,
    RERUN_QUEUED,
    RERUN_SKIPPED,
    RERUN_SUFFIX,
)
from bot.store import InboxKey, InboxStatus, ReplyKind, Store, UnitOfWork
from tests.fakes.channel import FakeChannel
from tests.gateway.test_gateway import AllowAll, until
from tests.gateway.test_recovery import Answering, Rig

TELEGRAM = ChannelRef(kind="telegram", alias="main")
SESSION = "telegram.main:c1"
STARTED = 1_900_000_000.0  # when the cut-off run was delivered
GRACE_S = 60.0


RigFactory = Callable[..., Awaitable[Rig]]


@pytest.fixture
async def make_rig(tmp_path: Path) -> AsyncIterator[RigFactory]:
    """A gateway on a real SQLite file with ``schedules`` settings the test chooses."""
    store = await Store.open(tmp_path / "h.db")
    tasks: list[asyncio.Task[None]] = []

    async def make(**schedules: Any) -> Rig:
        turns, channel = Answering(), FakeChannel(TELEGRAM)
        settings = {"state_dir": str(tmp_path), "schedules": schedules}
        gateway = Gateway(
            settings=parse_settings(settings, require_provider=False),
            store=store,
            access=AllowAll(),
            run_turn=turns,
            channel_for=lambda ref: channel,
        )
        tasks.append(asyncio.create_task(gateway.run()))
        await asyncio.sleep(0)
        return Rig(gateway, turns, channel, store)

    try:
        yield make
    finally:
        for task in tasks:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        await store.aclose()


def scheduled(
    message_id: str = "schedule:job1:1900000000", *, announce: bool = True
) -> IngressEnvelope:
    """A scheduled run's envelope as the schedule runner builds it."""
    return IngressEnvelope(
        channel=TELEGRAM,
        message_id=message_id,
        conversation_id="c1",
        sender=Sender(id="u1"),
        text="[Scheduled job job1] Task: stretch",
        reply_target=DeliveryTarget(channel=TELEGRAM, conversation_id="c1"),
        is_direct=True,
        addressed_to_bot=True,
        capabilities=Capabilities(),
        background=True,
        announce=announce,
        received_at=datetime.fromtimestamp(STARTED, UTC),
    )


def asked(text: str) -> IngressEnvelope:
    """A person's direct message."""
    return IngressEnvelope(
        channel=TELEGRAM,
        message_id=f"m-{text}",
        conversation_id="c2",
        sender=Sender(id="u2"),
        text=text,
        reply_target=DeliveryTarget(channel=TELEGRAM, conversation_id="c2"),
        is_direct=True,
        addressed_to_bot=True,
    )


def key(env: IngressEnvelope | str) -> InboxKey:
    message_id = env if isinstance(env, str) else env.message_id
    return InboxKey(channel=str(TELEGRAM), message_id=message_id)


async def left_by_a_crash(store: Store, env: IngressEnvelope, status: InboxStatus) -> None:
    """An entry as a killed process left it: ``received`` or ``processing`` (turn begun)."""
    await store.inbox.admit(
        key(env), envelope_id=env.envelope_id, session_key=SESSION, payload=envelope_to_json(env)
    )
    if status is InboxStatus.PROCESSING:
        await store.commit(UnitOfWork().mark_inbox(key(env), InboxStatus.PROCESSING))


async def status_of(store: Store, message_id: str) -> tuple[InboxStatus, str | None]:
    entry = await store.inbox.get(key(message_id))
    assert entry is not None, message_id
    return entry.status, entry.error


async def settled(rig: Rig) -> None:
    await until(lambda: rig.gateway.idle)


async def test_a_cut_off_run_is_run_again_once_and_nobody_is_told_to_ask_again(
    make_rig: RigFactory,
) -> None:
    rig = await make_rig()
    run = scheduled()
    await left_by_a_crash(rig.store, run, InboxStatus.PROCESSING)
    with capture_logs() as logs:
        assert await rig.gateway.recover(now=STARTED + 5) == (1, 0)
        await settled(rig)
    rerun_id = run.message_id + RERUN_SUFFIX
    assert rig.turns.ran == [rerun_id]
    assert rig.channel.texts == [f"answer to {run.text}"]
    assert await status_of(rig.store, run.message_id) == (InboxStatus.FAILED, RERUN_QUEUED)
    assert await status_of(rig.store, rerun_id) == (InboxStatus.DONE, None)
    [event] = [e for e in logs if e["event"] == "background_run_rerun"]
    assert (event["message_id"], event["rerun_id"], event["catch_up"]) == (
        run.message_id,
        rerun_id,
        False,
    )
    # a later start finds nothing to do
    assert await rig.gateway.recover(now=STARTED + 10) == (0, 0)
    assert rig.turns.ran == [rerun_id]


async def test_a_rerun_cut_off_again_ends_failed_with_a_log_line(make_rig: RigFactory) -> None:
    rig = await make_rig()
    original = scheduled()
    await left_by_a_crash(rig.store, original, InboxStatus.PROCESSING)
    await rig.store.inbox.mark(key(original), InboxStatus.FAILED, error=RERUN_QUEUED)
    rerun = scheduled(original.message_id + RERUN_SUFFIX)
    await left_by_a_crash(rig.store, rerun, InboxStatus.PROCESSING)
    with capture_logs() as logs:
        assert await rig.gateway.recover(now=STARTED + 5) == (0, 0)
    await settled(rig)
    assert rig.turns.ran == []
    assert rig.channel.texts == []
    assert await status_of(rig.store, rerun.message_id) == (InboxStatus.FAILED, RERUN_CUT_OFF)
    [failed] = [e for e in logs if e["event"] == "background_run_failed"]
    assert (failed["log_level"], failed["message_id"]) == ("error", rerun.message_id)
    assert await rig.gateway.recover(now=STARTED + 10) == (0, 0)  # no loop


@pytest.mark.parametrize(
    ("policy", "late_s", "rerun"),
    [
        pytest.param("run_once", 5.0, True, id="run_once within grace"),
        pytest.param("run_once", 3600.0, True, id="run_once after downtime: catch up"),
        pytest.param("skip", 5.0, True, id="skip within grace: on time"),
        pytest.param("skip", 3600.0, False, id="skip after downtime"),
    ],
)
async def test_the_catch_up_policy_decides_a_rerun_after_downtime(
    make_rig: RigFactory, policy: str, late_s: float, rerun: bool
) -> None:
    rig = await make_rig(missed_run_policy=policy, misfire_grace_s=GRACE_S)
    run = scheduled()
    await left_by_a_crash(rig.store, run, InboxStatus.PROCESSING)
    with capture_logs() as logs:
        assert await rig.gateway.recover(now=STARTED + late_s) == (int(rerun), 0)
        await settled(rig)
    assert SHUTDOWN_MESSAGE not in rig.channel.texts
    if rerun:
        assert rig.turns.ran == [run.message_id + RERUN_SUFFIX]
        [event] = [e for e in logs if e["event"] == "background_run_rerun"]
        assert event["catch_up"] is (late_s > GRACE_S)
    else:
        assert rig.turns.ran == []
        assert rig.channel.texts == []
        assert await status_of(rig.store, run.message_id) == (InboxStatus.FAILED, RERUN_SKIPPED)
        [event] = [e for e in logs if e["event"] == "background_run_skipped"]
        assert event["late_s"] == late_s


async def test_a_persons_cut_off_message_is_still_told_beside_a_rerun(
    make_rig: RigFactory,
) -> None:
    rig = await make_rig()
    run, person, waiting = scheduled(), asked("cut off"), scheduled("schedule:job2:1900000000")
    await left_by_a_crash(rig.store, run, InboxStatus.PROCESSING)
    await left_by_a_crash(rig.store, person, InboxStatus.PROCESSING)
    await left_by_a_crash(rig.store, waiting, InboxStatus.RECEIVED)
    assert await rig.gateway.recover(now=STARTED + 5) == (2, 1)
    await settled(rig)
    to_person = [text for target, text in rig.channel.sent if target.conversation_id == "c2"]
    to_job = [text for target, text in rig.channel.sent if target.conversation_id == "c1"]
    assert to_person == [SHUTDOWN_MESSAGE]
    assert to_job == [f"answer to {run.text}"] * 2  # the re-run and the never-started run
    assert sorted(rig.turns.ran) == sorted([waiting.message_id, run.message_id + RERUN_SUFFIX])
    assert await status_of(rig.store, person.message_id) == (InboxStatus.FAILED, INTERRUPTED)


async def test_a_start_cut_off_between_admitting_the_rerun_and_marking_runs_it_once(
    make_rig: RigFactory,
) -> None:
    """The re-run's entry was admitted, then the process died before the old entry was
    marked: the next start marks the old one and runs the re-run once."""
    rig = await make_rig()
    run = scheduled()
    await left_by_a_crash(rig.store, run, InboxStatus.PROCESSING)
    await left_by_a_crash(rig.store, scheduled(run.message_id + RERUN_SUFFIX), InboxStatus.RECEIVED)
    assert await rig.gateway.recover(now=STARTED + 5) == (1, 0)
    await settled(rig)
    assert rig.turns.ran == [run.message_id + RERUN_SUFFIX]
    assert await status_of(rig.store, run.message_id) == (InboxStatus.FAILED, RERUN_QUEUED)


async def test_a_silent_jobs_rerun_posts_nothing(make_rig: RigFactory) -> None:
    rig = await make_rig()
    run = scheduled(announce=False)
    await left_by_a_crash(rig.store, run, InboxStatus.PROCESSING)
    assert await rig.gateway.recover(now=STARTED + 5) == (1, 0)
    await settled(rig)
    assert rig.turns.ran == [run.message_id + RERUN_SUFFIX]
    assert rig.channel.texts == []


async def test_a_run_cut_off_after_its_answer_began_to_go_out_is_not_run_again(
    make_rig: RigFactory,
) -> None:
    """Its answer is in the outbox ledger: settled like any reply (here unconfirmable),
    neither re-run nor answered twice."""
    rig = await make_rig(misfire_grace_s=GRACE_S)
    run = scheduled()
    await left_by_a_crash(rig.store, run, InboxStatus.PROCESSING)
    await rig.store.outbox.record(
        key(run),
        ReplyKind.ANSWER,
        reply_key="k-run",
        target=target_to_json(run.reply_target),
        body="stretch now",
    )
    with capture_logs() as logs:
        assert await rig.gateway.recover(now=STARTED + 5) == (0, 0)
    await settled(rig)
    assert rig.turns.ran == []
    assert rig.channel.texts == []
    assert await status_of(rig.store, run.message_id) == (InboxStatus.DONE, None)
    assert await rig.store.inbox.get(key(run.message_id + RERUN_SUFFIX)) is None
    assert [e["outcome"] for e in logs if e["event"] == "reply_recovered"] == ["unconfirmed"]
