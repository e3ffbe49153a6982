"""The scheduled job: what runs, when, on whose behalf, and where its result goes.

A job is created in a conversation (the *origin*). Its runs are background turns in that
conversation's session, started as if the creator had asked again; the final answer goes to
the *target* — the origin unless the job names another conversation — or nowhere when the
delivery mode is ``none`` (the run is then only recorded in history and the log).

:class:`JobSpec` is the JSON stored in ``schedules.spec`` (validated with pydantic when read,
since the database is outside the process); :class:`ScheduledJob` is a job with its timing
state.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from bot.envelope import ChannelRef, DeliveryTarget
from bot.errors import HatchwayError
from bot.store.schedules import ScheduleRow


class ScheduleError(HatchwayError):
    """A job definition is invalid (bad cron expression, unknown time zone, past time)."""


class DeliveryMode(enum.StrEnum):
    ANNOUNCE = "announce"  # the run's answer is posted to the target
    NONE = "none"  # the run is recorded (history, log) but nothing is posted


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StoredTarget(_Frozen):
    """A :class:`DeliveryTarget` as JSON."""

    channel: str
    conversation_id: str
    thread_id: str | None = None

    @classmethod
    def of(cls, target: DeliveryTarget) -> StoredTarget:
        return cls(
            channel=str(target.channel),
            conversation_id=target.conversation_id,
            thread_id=target.thread_id,
        )

    def target(self) -> DeliveryTarget:
        kind, _, alias = self.channel.partition(".")
        return DeliveryTarget(
            channel=ChannelRef(kind=kind, alias=alias),
            conversation_id=self.conversation_id,
            thread_id=self.thread_id,
        )


class JobSpec(_Frozen):
    """The persisted definition of a job. Exactly one of ``cron`` and ``at`` is set."""

    prompt: str = Field(min_length=1)
    name: str = ""
    cron: str | None = None
    at: datetime | None = None
    timezone: str = "UTC"
    delivery: DeliveryMode = DeliveryMode.ANNOUNCE
    origin: StoredTarget
    target: StoredTarget
    creator_id: str
    creator_name: str = ""
    origin_is_direct: bool = False
    origin_is_group: bool = False
    #: The origin's Discord server, so that a run is routed to the conversation's agent.
    origin_guild_id: str | None = None

    def when(self) -> str:
        """A short human description of the timing."""
        if self.cron is not None:
            return f"cron '{self.cron}' ({self.timezone})"
        assert self.at is not None
        return f"once at {self.at.isoformat()}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduledJob:
    """A job with its timing state (epoch seconds). ``enabled`` is False once a one-shot
    job has run (finished: no next run) or while an admin has paused it (a next run kept)."""

    id: str
    spec: JobSpec
    next_run_at: float | None
    last_run_at: float | None
    enabled: bool
    created_at: float

    @classmethod
    def from_row(cls, row: ScheduleRow) -> ScheduledJob:
        """Raises :class:`ScheduleError` when the stored spec is not a valid job."""
        try:
            spec = JobSpec.model_validate_json(row.spec)
        except ValueError as exc:
            raise ScheduleError(f"schedule {row.id} has an invalid definition: {exc}") from None
        return cls(
            id=row.id,
            spec=spec,
            next_run_at=row.next_run_at,
            last_run_at=row.last_run_at,
            enabled=row.enabled,
            created_at=row.created_at,
        )

    def to_row(self) -> ScheduleRow:
        return ScheduleRow(
            id=self.id,
            spec=self.spec.model_dump_json(),
            next_run_at=self.next_run_at,
            last_run_at=self.last_run_at,
            enabled=self.enabled,
            created_at=self.created_at,
        )

    @property
    def paused(self) -> bool:
        return not self.enabled and self.next_run_at is not None

    def belongs_to(self, target: DeliveryTarget) -> bool:
        """True when the job was created in ``target``'s conversation (any thread)."""
        origin = self.spec.origin
        return origin.channel == str(target.channel) and (
            origin.conversation_id == target.conversation_id
        )
