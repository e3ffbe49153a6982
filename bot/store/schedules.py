"""Scheduled jobs: one row per job in ``schedules``.

The job definition is stored as JSON in ``spec`` (its shape belongs to
:mod:`bot.schedules.job`; this repository does not interpret it). ``next_run_at`` and
``last_run_at`` are epoch seconds; a job whose ``next_run_at`` is NULL or that is disabled
never comes due: disabled with a next run is *paused*, with none *finished*. Removing a job
deletes its row. Where several replicas share the database, a due run is claimed by one of
them first (``claimed_by`` until ``claimed_until``), and recording the run ends the claim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.engine import Database
from bot.store.statements import Row


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleRow:
    """A stored job as the database holds it."""

    id: str
    spec: str
    next_run_at: float | None
    last_run_at: float | None
    enabled: bool
    created_at: float


def _row(row: Row) -> ScheduleRow:
    return ScheduleRow(
        id=row["id"],
        spec=row["spec"],
        next_run_at=row["next_run_at"],
        last_run_at=row["last_run_at"],
        enabled=bool(row["enabled"]),
        created_at=float(row["created_at"]),
    )


_COLUMNS = "id, spec, next_run_at, last_run_at, enabled, created_at"


class Schedules:
    """The ``schedules`` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, row: ScheduleRow) -> None:
        await self._db.execute(
            f"INSERT INTO schedules ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
            (
                row.id,
                row.spec,
                row.next_run_at,
                row.last_run_at,
                int(row.enabled),
                row.created_at,
            ),
        )

    async def get(self, job_id: str) -> ScheduleRow | None:
        found = await self._db.fetchone(f"SELECT {_COLUMNS} FROM schedules WHERE id = ?", (job_id,))
        return None if found is None else _row(found)

    async def list(self) -> Sequence[ScheduleRow]:
        """Every job, oldest first."""
        rows = await self._db.fetchall(f"SELECT {_COLUMNS} FROM schedules")
        # by code point between jobs of the same moment, on every engine and collation
        return sorted((_row(r) for r in rows), key=lambda job: (job.created_at, job.id))

    async def due(self, now: float) -> Sequence[ScheduleRow]:
        """Enabled jobs whose next run is at or before ``now``, earliest first."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM schedules WHERE enabled = 1 AND next_run_at IS NOT NULL"
            " AND next_run_at <= ?",
            (now,),
        )
        return sorted((_row(r) for r in rows), key=lambda job: (job.next_run_at or 0.0, job.id))

    async def claim(self, job_id: str, *, run_at: float, by: str, now: float, until: float) -> bool:
        """Claim the run of ``job_id`` due at ``run_at`` for the replica ``by`` until
        ``until``, in one conditional statement: only while that run is still the job's next
        and no other replica's claim is current at ``now``. False when another replica
        claimed it or already recorded it."""
        found = await self._db.execute_returning(
            "UPDATE schedules SET claimed_by = ?, claimed_until = ? WHERE id = ? AND enabled = 1"
            " AND next_run_at = ? AND (claimed_until IS NULL OR claimed_until < ?"
            " OR claimed_by = ?) RETURNING id",
            (by, until, job_id, run_at, now, by),
        )
        return found is not None

    async def mark_run(
        self, job_id: str, *, run_at: float, last_run_at: float | None, next_run_at: float | None
    ) -> bool:
        """Record the run due at ``run_at`` (or its skip), ending its claim: the job is
        disabled when there is no next run. A job paused while its run was being delivered
        stays paused. Only while ``run_at`` is still the job's next run: a replica whose
        claim ran out while it delivered finds the run recorded by the one that took it
        over (perhaps the next ones too) and changes nothing, rather than set the next run
        back; False then."""
        found = await self._db.execute_returning(
            "UPDATE schedules SET last_run_at = COALESCE(?, last_run_at), next_run_at = ?,"
            " enabled = CASE WHEN ? = 0 THEN 0 ELSE enabled END, claimed_by = NULL,"
            " claimed_until = NULL WHERE id = ? AND next_run_at = ? RETURNING id",
            (last_run_at, next_run_at, int(next_run_at is not None), job_id, run_at),
        )
        return found is not None

    async def pause(self, job_id: str) -> bool:
        """Stop an active job from coming due, keeping its next run (a paused job is
        disabled with a next run; a finished one has none). False unless it was active."""
        found = await self._db.execute_returning(
            "UPDATE schedules SET enabled = 0 WHERE id = ? AND enabled = 1"
            " AND next_run_at IS NOT NULL RETURNING id",
            (job_id,),
        )
        return found is not None

    async def resume(self, job_id: str, next_run_at: float) -> bool:
        """Let a paused job come due again, next at ``next_run_at`` (the caller computes it
        from now, so runs missed while paused are not caught up). False unless it was
        paused."""
        found = await self._db.execute_returning(
            "UPDATE schedules SET enabled = 1, next_run_at = ? WHERE id = ? AND enabled = 0"
            " AND next_run_at IS NOT NULL RETURNING id",
            (next_run_at, job_id),
        )
        return found is not None

    async def remove(self, job_id: str) -> bool:
        """Delete a job; False when there was none with that id."""
        found = await self._db.execute_returning(
            "DELETE FROM schedules WHERE id = ? RETURNING id", (job_id,)
        )
        return found is not None
