"""Recovery after a restart: what the inbox says was left unfinished.

An entry still ``received`` left no trace (its turn never began) and is queued again. One
``processing`` was cut off mid-turn: when a reply to it was recorded in the outbox ledger,
the ledger settles it (:meth:`bot.gateway.ledger.ReplyLedger.recover`: an answer that went
out, or may have, is never followed by a notice); when none was but the run's answer is in
history, that answer is sent; otherwise its sender is told once to ask again
(:data:`SHUTDOWN_MESSAGE`, itself recorded first), or, under ``agent.on_interrupted =
"retry"``, a run in which nothing with side effects ran (read-only tools only) is run again
once: what it appended to history is removed and the entry queued as new. An entry whose
reply goes to a channel whose delivery check writes to the platform and waits for it
(:class:`~bot.channel.BackgroundDeliveryCheck`: Telegram's edit probe) is settled by these
rules after start-up, in the background (:meth:`ReplyLedger.defer`), so that no check
holds the start, nor one chat's check the others' replies. A message from a
channel that does not replay (``Capabilities.replay_on_restart`` false: the console, whose
reader is gone with the process that read it) is marked ``failed`` either way, quietly:
nobody is asked to repeat it and it is never answered in a later run. Messages queued by
this process (the channels start before recovery runs) are left alone, whether still running
or already finished. The same rules settle, while the process runs, the entries its own turns
left ``processing`` when the database went away under them (:mod:`~bot.gateway.handover`);
their senders are told of an outage (:data:`OUTAGE_MESSAGE`), not of a restart that never
happened (``cause = "outage"``; the notice names no detail of it).

A background run (``IngressEnvelope.background``: a scheduled job) whose answer was recorded
is settled by the ledger like any other entry (never run again). One cut off before its
answer has no sender to tell; recovery is the one place that runs it again, and never says
"ask again":

* it is re-run once, as a new inbox entry whose message id is the old one plus
  :data:`RERUN_SUFFIX` (the old entry is marked ``failed``), when the restart comes within
  ``schedules.misfire_grace_s`` of the run's start or ``schedules.missed_run_policy`` is
  ``run_once`` — the catch-up policy of missed occurrences, applied to the cut-off run;
* under ``skip``, later than the grace period, it is marked ``failed`` and logged
  (``background_run_skipped``);
* a re-run that is cut off in turn is marked ``failed`` and logged
  (``background_run_failed``), never run a third time.

The schedule runner never delivers an occurrence twice (the inbox keeps the old entry's
message id), so nothing else runs a cut-off run again.
"""

from __future__ import annotations

import enum
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal

import structlog
from structlog.contextvars import bound_contextvars

from bot.config import OnInterrupted, SchedulesConfig
from bot.envelope import IngressEnvelope, envelope_from_json, envelope_to_json
from bot.gateway.ledger import ReplyLedger, may_run_again
from bot.gateway.sessions import Sessions
from bot.store import InboxKey, InboxStatus, Store, UnitOfWork
from bot.store.inbox import InboxEntry
from bot.store.parked import ParkState, UnreadableParkRecord
from bot.turn import TurnIdentity

log = structlog.get_logger(__name__)

SHUTDOWN_MESSAGE = "⏹ The bot is restarting; this request was interrupted. Please ask again."
#: The notice for a turn a live replica's database outage cut off (no detail of the outage).
OUTAGE_MESSAGE = "⏹ The bot had a brief outage; this request was interrupted. Please ask again."
#: The inbox error of a message dropped at start-up because its channel does not replay.
NOT_REPLAYED = "not replayed after restart"
#: The inbox error of a cut-off message whose sender was told to ask again.
INTERRUPTED = "interrupted by restart"
#: The inbox error of a message whose turn the database going away cut off, its sender told.
INTERRUPTED_BY_OUTAGE = "interrupted by a database outage"


class CutOffBy(enum.StrEnum):
    """What cut entries off: a restart (or a replica gone: crashed or stopped), or the
    database going away under a replica that lived on."""

    RESTART = "restart"
    OUTAGE = "outage"


#: The notice and the inbox error of each cause.
NOTICES: dict[CutOffBy, tuple[str, str]] = {
    CutOffBy.RESTART: (SHUTDOWN_MESSAGE, INTERRUPTED),
    CutOffBy.OUTAGE: (OUTAGE_MESSAGE, INTERRUPTED_BY_OUTAGE),
}
#: Appended to a cut-off background run's message id for its one re-run.
RERUN_SUFFIX = ":rerun"
#: The inbox errors of cut-off background runs: re-run, skipped, or cut off again.
RERUN_QUEUED = "interrupted by restart; run again"
RERUN_SKIPPED = "interrupted by restart; not run again (missed_run_policy skip)"
RERUN_CUT_OFF = "interrupted by restart again after its re-run"


def is_rerun(envelope: IngressEnvelope) -> bool:
    """Whether ``envelope`` is the re-run of a cut-off background run."""
    return envelope.background and envelope.message_id.endswith(RERUN_SUFFIX)


async def recover(
    *,
    store: Store,
    sessions: Sessions,
    ledger: ReplyLedger,
    schedules: SchedulesConfig,
    on_interrupted: OnInterrupted = OnInterrupted.NOTIFY,
    now: float | None = None,
    entries: Sequence[InboxEntry] | None = None,
    cause: CutOffBy = CutOffBy.RESTART,
) -> tuple[int, int]:
    """Re-queue messages that never started; settle cut-off ones by their recorded replies,
    or tell their senders to ask again (or run them again, ``on_interrupted = "retry"``);
    drop, without a word, those whose channel does not replay; re-run or fail cut-off
    background runs under the catch-up policy (module docstring). Returns (requeued,
    interrupted); re-runs and retries count as requeued. ``entries``: only these (the
    entries a gone replica left, or those this replica's own turns left when the database
    went away under them, :mod:`~bot.gateway.handover`) instead of every unfinished one,
    and this process's start-up recovery is not over with them. ``cause``: what cut them
    off, which the notice to ask again and the entry's error say (:data:`NOTICES`)."""
    at = time.time() if now is None else now
    counts = dict.fromkeys(
        (
            "requeued",
            "rerun",
            "retried",
            "interrupted",
            "settled",
            "answered",
            "dropped",
            "abandoned",
            "deferred",
            "reparked",
        ),
        0,
    )
    unfinished = await store.inbox.unfinished() if entries is None else entries
    # a turn killed while it waited on a card is parked, not cut off (bot.store.parked)
    waiting = {r.inbox for r in await store.parked.rows(states=(ParkState.WAITING,))}
    # a resumption cut off before its batch's outcomes were recorded parks again
    resuming = {
        r.inbox: r.approval_id for r in await store.parked.rows(states=(ParkState.RESUMING,))
    }
    for entry in unfinished:
        # a message of this run (the channels start before recovery) is this run's to finish
        if (
            not entry.payload
            or sessions.is_live(entry.envelope_id)
            or sessions.queued_here(entry.envelope_id)
            or (entry.status is InboxStatus.PROCESSING and entry.key in waiting)
        ):
            continue
        envelope = envelope_from_json(entry.payload)
        if not envelope.capabilities.replay_on_restart:
            await store.inbox.mark(entry.key, InboxStatus.FAILED, error=NOT_REPLAYED)
            log.info(
                "inbox_entry_not_replayed",
                channel=entry.key.channel,
                message_id=entry.key.message_id,
                was=entry.status.value,
            )
            counts["dropped"] += 1
        elif entry.status is InboxStatus.RECEIVED:
            _enqueue(sessions, envelope, entry.session_key)
            counts["requeued"] += 1
        elif entry.key in resuming and await _repark(store, resuming[entry.key], at):
            counts["reparked"] += 1
        else:
            cut_off = _CutOff(
                store=store,
                sessions=sessions,
                ledger=ledger,
                schedules=schedules,
                on_interrupted=on_interrupted,
                at=at,
                cause=cause,
                entry=entry,
                envelope=envelope,
            )
            if ledger.checks_later(envelope.reply_target):
                # its channel's check writes to the platform and waits for it (Telegram):
                # settled after start-up, in the background, the entry held meanwhile
                ledger.defer(entry.key, cut_off.settle)
                counts["deferred"] += 1
            elif outcome := await cut_off.settle():
                counts[outcome] += 1
    if entries is None:
        sessions.recovered()
        ledger.open_checks()
    if any(counts.values()):
        log.info("inbox_recovered", cause=cause, **counts)
    return counts["requeued"] + counts["rerun"] + counts["retried"], counts["interrupted"]


@dataclass(frozen=True, slots=True, kw_only=True)
class _CutOff:
    """One entry cut off mid-turn, and how recovery settles it (module docstring)."""

    store: Store
    sessions: Sessions
    ledger: ReplyLedger
    schedules: SchedulesConfig
    on_interrupted: OnInterrupted
    at: float
    cause: CutOffBy
    entry: InboxEntry
    envelope: IngressEnvelope

    async def settle(self) -> str:
        """Settle the entry; what it counts as (a key of recovery's counts, or "")."""
        entry, envelope, ledger = self.entry, self.envelope, self.ledger
        notice, interrupted = NOTICES[self.cause]
        if await ledger.recover(entry.key, envelope, interrupted=interrupted) is not None:
            return "settled"  # its reply went out, or may have: never run or told again
        if await ledger.answer_again(entry, envelope):
            return "answered"  # cut off between its answer and the reply: sent now
        if envelope.background:
            return await _recover_background(
                self.store, self.sessions, entry, envelope, self.schedules, self.at
            )
        if self.on_interrupted is OnInterrupted.RETRY and await _retry(
            self.store, self.sessions, entry, envelope
        ):
            return "retried"
        turn = TurnIdentity(
            envelope=envelope, session_key=entry.session_key, turn_id=uuid.uuid4().hex
        )
        # its lines name the run that was cut off, when the entry knows it
        run = entry.turn_id or turn.turn_id
        with bound_contextvars(turn_id=run, session=entry.session_key):
            await ledger.notify(turn, notice, error=interrupted)
        return "interrupted"


async def _repark(store: Store, approval_id: str, at: float) -> bool:
    """Park again the turn whose resumption (on ``approval_id``) was cut off before its
    batch's outcomes were recorded, marked ``cut_off`` (:func:`bot.store.parked.reparking`):
    its card is decided, so the next sweep resumes it, and a call of the batch that is not
    ``retry_safe`` is not run again (its result is unknown: it may have run). False when
    its row cannot be read (it goes; the entry is settled as any cut-off one)."""
    try:
        record = await store.parked.get(approval_id)
    except UnreadableParkRecord as exc:
        log.error("parked_turn_unreadable", approval_id=approval_id, error=str(exc))
        record = None
    if record is None or record.state is not ParkState.RESUMING:
        await store.parked.drop(approval_id)
        return False
    await store.commit(UnitOfWork().repark_cut_off(record, at=at))
    log.warning("parked_turn_resumption_cut_off", approval_id=approval_id)
    return True


async def _retry(
    store: Store, sessions: Sessions, entry: InboxEntry, envelope: IngressEnvelope
) -> bool:
    """Run a cut-off turn again from the start when nothing with side effects ran in it and
    it has not run :data:`~bot.gateway.ledger.MAX_RUNS` times; whether it was queued."""
    if not may_run_again(entry):
        log.info(
            "turn_not_retried",
            message_id=entry.key.message_id,
            side_effects=entry.side_effects,
            attempts=entry.attempts,
        )
        return False
    if entry.turn_id is not None:
        await store.history.forget_turn(entry.session_key, entry.turn_id)
    if not await store.inbox.requeue(entry.key):
        return False
    _enqueue(sessions, envelope, entry.session_key)
    log.info("turn_retried", message_id=entry.key.message_id, attempts=entry.attempts)
    return True


def _enqueue(sessions: Sessions, envelope: IngressEnvelope, session_key: str) -> None:
    sessions.enqueue(
        TurnIdentity(envelope=envelope, session_key=session_key, turn_id=uuid.uuid4().hex)
    )


async def _recover_background(
    store: Store,
    sessions: Sessions,
    entry: InboxEntry,
    envelope: IngressEnvelope,
    schedules: SchedulesConfig,
    now: float,
) -> Literal["rerun", "abandoned", ""]:
    """Re-run a cut-off background run once, or mark it failed. Returns what it counts as
    (``rerun``, ``abandoned``; nothing when its re-run was admitted by an earlier start,
    which counts for itself)."""
    message_id = entry.key.message_id
    late_s = round(now - envelope.received_at.timestamp())
    if is_rerun(envelope):
        await store.inbox.mark(entry.key, InboxStatus.FAILED, error=RERUN_CUT_OFF)
        log.error("background_run_failed", message_id=message_id, reason=RERUN_CUT_OFF)
        return "abandoned"
    on_time = late_s <= schedules.misfire_grace_s
    if not on_time and schedules.missed_run_policy == "skip":
        await store.inbox.mark(entry.key, InboxStatus.FAILED, error=RERUN_SKIPPED)
        log.info("background_run_skipped", message_id=message_id, late_s=late_s)
        return "abandoned"
    rerun = replace(
        envelope,
        message_id=message_id + RERUN_SUFFIX,
        envelope_id=uuid.uuid4().hex,
        received_at=datetime.fromtimestamp(now, UTC),
    )
    # Admitted before the old entry is marked: a crash in between leaves both unfinished,
    # and the next start finds the re-run already admitted (and queues it as ``received``).
    admitted = await store.inbox.admit(
        InboxKey(channel=entry.key.channel, message_id=rerun.message_id),
        envelope_id=rerun.envelope_id,
        session_key=entry.session_key,
        payload=envelope_to_json(rerun),
        sender_id=rerun.sender.id,
    )
    await store.inbox.mark(entry.key, InboxStatus.FAILED, error=RERUN_QUEUED)
    if not admitted:
        return ""
    _enqueue(sessions, rerun, entry.session_key)
    log.info(
        "background_run_rerun",
        message_id=message_id,
        rerun_id=rerun.message_id,
        late_s=late_s,
        catch_up=not on_time,
    )
    return "rerun"
