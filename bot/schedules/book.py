"""The schedule book: jobs as values over the ``schedules`` repository.

Tools, the runner and ``hatchway schedules`` all go through :class:`ScheduleBook`; it
validates a definition before it is stored (cron syntax, time zone, one-shot time in the
future, per-conversation limit) and turns stored rows back into :class:`ScheduledJob`
values. A row that no longer parses is logged and left out, never fatal.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import structlog

from bot.envelope import DeliveryTarget
from bot.schedules.job import JobSpec, ScheduledJob, ScheduleError
from bot.schedules.recurrence import check_cron, first_run, next_run, zone
from bot.store.schedules import ScheduleRow, Schedules

log = structlog.get_logger(__name__)


def _new_id() -> str:
    return uuid.uuid4().hex[:10]


class ScheduleBook:
    """Create, list, pause, resume and remove jobs; read the due ones."""

    def __init__(self, schedules: Schedules, *, max_per_conversation: int = 20) -> None:
        self._schedules = schedules
        self._max_per_conversation = max_per_conversation

    async def add(self, spec: JobSpec, *, now: float) -> ScheduledJob:
        """Validate and store a new job. Raises :class:`ScheduleError` naming the problem."""
        zone(spec.timezone)
        if (spec.cron is None) == (spec.at is None):
            raise ScheduleError("give exactly one of cron (repeating) or at (once)")
        if spec.cron is not None:
            spec = spec.model_copy(update={"cron": check_cron(spec.cron)})
        origin = spec.origin.target()
        existing = [j for j in await self.jobs() if j.enabled and j.belongs_to(origin)]
        if len(existing) >= self._max_per_conversation:
            raise ScheduleError(
                f"this conversation already has {len(existing)} active jobs (the limit); "
                "remove one first"
            )
        job = ScheduledJob(
            id=_new_id(),
            spec=spec,
            next_run_at=first_run(spec, now),
            last_run_at=None,
            enabled=True,
            created_at=now,
        )
        await self._schedules.add(job.to_row())
        log.info(
            "schedule_added",
            job_id=job.id,
            channel=spec.origin.channel,
            delivery=spec.delivery.value,
            next_run_at=job.next_run_at,
        )
        return job

    async def jobs(self) -> Sequence[ScheduledJob]:
        """Every readable job, oldest first."""
        return self._parse(await self._schedules.list())

    async def for_conversation(self, target: DeliveryTarget) -> Sequence[ScheduledJob]:
        return [j for j in await self.jobs() if j.belongs_to(target)]

    async def get(self, job_id: str) -> ScheduledJob | None:
        row = await self._schedules.get(job_id)
        if row is None:
            return None
        parsed = self._parse([row])
        return parsed[0] if parsed else None

    async def due(self, now: float) -> Sequence[ScheduledJob]:
        return self._parse(await self._schedules.due(now))

    async def claim(self, job_id: str, *, run_at: float, by: str, now: float, until: float) -> bool:
        """Claim the run due at ``run_at`` for the replica ``by`` (several replicas); False
        when another one has it."""
        return await self._schedules.claim(job_id, run_at=run_at, by=by, now=now, until=until)

    async def mark_run(
        self, job_id: str, *, run_at: float, last_run_at: float | None, next_run_at: float | None
    ) -> bool:
        """Record the run due at ``run_at``; False when it is no longer the job's next run
        (recorded already by the replica that took it over)."""
        return await self._schedules.mark_run(
            job_id, run_at=run_at, last_run_at=last_run_at, next_run_at=next_run_at
        )

    async def pause(self, job_id: str) -> bool:
        """Stop an active job from coming due; False unless it was active."""
        paused = await self._schedules.pause(job_id)
        if paused:
            log.info("schedule_paused", job_id=job_id)
        return paused

    async def resume(self, job_id: str, *, now: float) -> ScheduledJob | None:
        """Let a paused job come due again from ``now`` on (runs missed while it was paused
        are skipped, not caught up). None when it is not paused, or is a one-shot job whose
        time passed meanwhile (:class:`ScheduleError`)."""
        job = await self.get(job_id)
        if job is None or not job.paused:
            return None
        following = next_run(job.spec, now)
        if following is None:
            raise ScheduleError(
                f"job {job_id} was to run {job.spec.when()}, which passed while it was"
                " paused; remove it instead"
            )
        if not await self._schedules.resume(job_id, following):
            return None
        log.info("schedule_resumed", job_id=job_id, next_run_at=following)
        return await self.get(job_id)

    async def remove(self, job_id: str) -> bool:
        removed = await self._schedules.remove(job_id)
        if removed:
            log.info("schedule_removed", job_id=job_id)
        return removed

    def _parse(self, rows: Sequence[ScheduleRow]) -> list[ScheduledJob]:
        jobs: list[ScheduledJob] = []
        for row in rows:
            try:
                jobs.append(ScheduledJob.from_row(row))
            except ScheduleError as exc:
                log.error("schedule_unreadable", job_id=row.id, error=str(exc))
        return jobs
