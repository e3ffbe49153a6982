"""The scheduler task: turns due jobs into background envelopes for the gateway.

Each :meth:`ScheduleRunner.tick` reads the jobs due at the clock's "now" and, per job:

1. decides what to do with the occurrence: run it when it is on time (at most
   ``schedules.misfire_grace_s`` late); when it is later than that (the daemon was down),
   apply ``schedules.missed_run_policy`` — ``run_once`` runs one catch-up occurrence and
   continues from now, ``skip`` records the miss and continues from now;
2. delivers a background :class:`~bot.envelope.IngressEnvelope` through the gateway (access
   check, inbox dedupe, the session queue — the turn runs like any other, never prompts, and
   its answer goes to the job's target, or nowhere for delivery mode ``none``);
3. stores the next run (one-shot jobs are disabled after their run).

The envelope's ``message_id`` is ``schedule:{job_id}:{occurrence_epoch}``, and the envelope is
delivered *before* the next run is stored: a restart in between re-delivers the same
occurrence, which the gateway's inbox recognises, so an occurrence never runs twice. A run cut
off mid-turn by a crash is not delivered again from here: the gateway's start-up recovery
(:mod:`bot.gateway.recovery`) runs it once more under the same catch-up policy.

Where several replicas share the database, each runs a scheduler, and a due run is first
claimed by one of them (a conditional update of the job's row, :data:`CLAIM_S` long): the
others leave it alone, and storing the next run ends the claim. A replica that dies between
the claim and the store leaves the claim to expire; the next replica to find the run still
due delivers it, and the inbox drops it if it had been delivered already. Storing the next
run is conditional on the run handled still being the job's next: a replica that stalled
past its claim finds the run (and perhaps later ones) recorded by the replica that took it
over, and leaves that record alone instead of setting the next run back (which would deliver
a run again and skip a later one).

:meth:`run` ticks every ``schedules.tick_s`` until cancelled; tests drive :meth:`tick` with
their own clock.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import structlog

from bot.config import SchedulesConfig
from bot.envelope import Capabilities, IngressEnvelope, Sender
from bot.schedules.book import ScheduleBook
from bot.schedules.job import DeliveryMode, ScheduledJob, ScheduleError
from bot.schedules.recurrence import next_run
from bot.store.outage import repeat

log = structlog.get_logger(__name__)

#: How long a replica's claim on a due run holds (it delivers the run and stores the next
#: one well within it; a claim left by a replica that died expires after it).
CLAIM_S = 30.0

Deliver = Callable[[IngressEnvelope], Awaitable[None]]
"""The gateway's ``deliver``: admits an envelope (or refuses it) and returns once queued."""


class Occurrence(enum.StrEnum):
    ON_TIME = "on_time"
    CATCH_UP = "catch_up"  # late beyond the grace period; run once under ``run_once``
    SKIPPED = "skipped"  # late beyond the grace period under ``skip``


def job_message_id(job_id: str, run_at: float) -> str:
    """The idempotency key of one occurrence of a job."""
    return f"schedule:{job_id}:{int(run_at)}"


def job_envelope(job: ScheduledJob, run_at: float, now: float) -> IngressEnvelope:
    """The background envelope of one occurrence: in the origin conversation, from the
    creator, answered to the job's target, with no way to prompt anyone."""
    spec = job.spec
    origin = spec.origin.target()
    label = f' "{spec.name}"' if spec.name else ""
    text = (
        f"[Scheduled job {job.id}{label}, {spec.when()}] It is due now; nobody is waiting "
        f"at the keyboard and nothing can be approved. Task: {spec.prompt}"
    )
    return IngressEnvelope(
        channel=origin.channel,
        message_id=job_message_id(job.id, run_at),
        conversation_id=origin.conversation_id,
        thread_id=origin.thread_id,
        sender=Sender(id=spec.creator_id, display_name=spec.creator_name),
        text=text,
        reply_target=spec.target.target(),
        is_direct=spec.origin_is_direct,
        is_group=spec.origin_is_group,
        addressed_to_bot=True,
        capabilities=Capabilities(),
        background=True,
        announce=spec.delivery is DeliveryMode.ANNOUNCE,
        received_at=datetime.fromtimestamp(now, UTC),
        guild_id=spec.origin_guild_id,
    )


class ScheduleRunner:
    """Runs due jobs through ``deliver``. One per daemon."""

    def __init__(
        self,
        *,
        book: ScheduleBook,
        deliver: Deliver,
        settings: SchedulesConfig,
        clock: Callable[[], float] = time.time,
        replica_id: str | None = None,
    ) -> None:
        self._book = book
        self._deliver = deliver
        self._settings = settings
        self._clock = clock
        #: several replicas: the id under which this one claims due runs
        self._replica_id = replica_id

    def update_settings(self, settings: SchedulesConfig) -> None:
        """Swap in reloaded settings (policy and grace apply from the next tick)."""
        self._settings = settings

    async def run(self) -> None:
        """Tick every ``tick_s`` until cancelled. A failing tick is logged, never fatal."""
        log.info("scheduler_started", missed_run_policy=self._settings.missed_run_policy)
        # the scheduler survives a bad tick (e.g. the database is busy; one that cannot be
        # reached is one line until it is back)
        await repeat("scheduler_tick", self.tick, lambda: self._settings.tick_s, wait_first=False)

    async def tick(self) -> int:
        """Handle every job due now; returns how many occurrences were delivered."""
        now = self._clock()
        delivered = 0
        for job in await self._book.due(now):
            if await self._handle(job, now):
                delivered += 1
        return delivered

    def _classify(self, run_at: float, now: float) -> Occurrence:
        if now - run_at <= self._settings.misfire_grace_s:
            return Occurrence.ON_TIME
        if self._settings.missed_run_policy == "run_once":
            return Occurrence.CATCH_UP
        return Occurrence.SKIPPED

    async def _handle(self, job: ScheduledJob, now: float) -> bool:
        assert job.next_run_at is not None
        run_at = job.next_run_at
        if self._replica_id is not None and not await self._book.claim(
            job.id, run_at=run_at, by=self._replica_id, now=now, until=now + CLAIM_S
        ):
            log.debug("schedule_run_claimed_elsewhere", job_id=job.id, run_at=run_at)
            return False
        occurrence = self._classify(run_at, now)
        try:
            following = next_run(job.spec, now)
        except ScheduleError as exc:
            log.error("schedule_invalid", job_id=job.id, error=str(exc))
            await self._book.mark_run(job.id, run_at=run_at, last_run_at=None, next_run_at=None)
            return False
        bound = structlog.contextvars.bound_contextvars(job_id=job.id)
        with bound:
            if occurrence is Occurrence.SKIPPED:
                log.info("schedule_run_skipped", run_at=run_at, late_s=round(now - run_at))
                await self._book.mark_run(
                    job.id, run_at=run_at, last_run_at=None, next_run_at=following
                )
                return False
            if occurrence is Occurrence.CATCH_UP:
                log.info("schedule_run_catch_up", run_at=run_at, late_s=round(now - run_at))
            envelope = job_envelope(job, run_at, now)
            await self._deliver(envelope)
            if not await self._book.mark_run(
                job.id, run_at=run_at, last_run_at=now, next_run_at=following
            ):
                # our claim ran out while we delivered: the replica that took the run over
                # recorded it (the inbox drops one of the two copies); its record stands
                log.warning("schedule_run_recorded_elsewhere", run_at=run_at)
                return True
            log.info(
                "schedule_run_delivered",
                run_at=run_at,
                occurrence=occurrence.value,
                delivery=job.spec.delivery.value,
                next_run_at=following,
            )
            return True
