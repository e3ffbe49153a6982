"""The ``schedule_add`` / ``schedule_list`` / ``schedule_remove`` tools.

``schedule_add`` is channel-aware: the pipeline fills a missing ``channel`` / ``to`` /
``thread`` from the conversation the request came from, so a job announces back to where it
was created unless the model names another conversation. Like ``send_message``, a job that
announces to *another* conversation needs approval (``approval_check``), and the target must
be one the bot may post to. ``delivery = "none"`` keeps results out of the chat.

Jobs are listed and removed per conversation: a conversation sees and removes only the jobs
created in it (operators use ``hatchway schedules``). A background (scheduled) turn cannot
create jobs, so a job never multiplies itself. Listing and removing need no approval: they
touch only this conversation's own jobs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Literal

from pydantic import Field

from bot.envelope import ChannelRef, DeliveryTarget
from bot.schedules.book import ScheduleBook
from bot.schedules.job import DeliveryMode, JobSpec, ScheduleError, StoredTarget
from bot.schedules.recurrence import describe, parse_time
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.messaging import needs_approval
from bot.tools.builtin.observation import ToolFailed, ToolRefused
from bot.tools.spec import ToolContext, ToolKind, ToolResult, ToolSpec

TargetCheck = Callable[[DeliveryTarget], bool]
"""Whether the bot may post to a target (the outbox's ``allows``)."""


class ScheduleAddArguments(ToolArguments):
    prompt: str = Field(
        min_length=1, max_length=4000, description="What to do (or say) when the job runs."
    )
    cron: str | None = Field(
        default=None, description="Repeat on a 5-field cron expression, e.g. '0 9 * * 1-5'."
    )
    at: str | None = Field(
        default=None, description="Run once at this ISO 8601 time, e.g. 2030-01-31T09:00."
    )
    timezone: str = Field(default="UTC", description="IANA time zone, e.g. Europe/Berlin.")
    name: str = Field(default="", max_length=100, description="A short label.")
    delivery: Literal["announce", "none"] = Field(
        default="announce",
        description="announce: post the result; none: only record it.",
    )
    channel: str | None = Field(
        default=None, description="Announce to channel kind.alias; default: this one."
    )
    to: str | None = Field(default=None, description="Announce to conversation id.")
    thread: str | None = Field(default=None, description="Announce to thread id.")


class ScheduleRemoveArguments(ToolArguments):
    id: str = Field(min_length=1, max_length=64, description="The job id from schedule_list.")


class NoArguments(ToolArguments):
    pass


def _target(args: ScheduleAddArguments, origin: DeliveryTarget) -> DeliveryTarget:
    channel = args.channel or str(origin.channel)
    conversation = args.to or origin.conversation_id
    kind, dot, alias = channel.partition(".")
    if not dot or not kind or not alias:
        raise ToolFailed(f"channel must look like kind.alias (e.g. slack.main), not {channel!r}")
    same = (channel, conversation) == (str(origin.channel), origin.conversation_id)
    thread = args.thread
    if same and thread is None:
        thread = origin.thread_id
    elif not same and thread == origin.thread_id:
        thread = None  # the defaults filled the origin's thread; it does not exist there
    return DeliveryTarget(
        channel=ChannelRef(kind=kind, alias=alias), conversation_id=conversation, thread_id=thread
    )


def schedule_tools(
    book: ScheduleBook,
    *,
    allows: TargetCheck | None = None,
    clock: Callable[[], float] = time.time,
) -> list[ToolSpec]:
    """The three schedule tools over ``book``; ``allows`` vets explicit targets."""

    async def add(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(ScheduleAddArguments, arguments)
        if context.background:
            raise ToolRefused("a scheduled run cannot create schedules")
        origin = context.delivery
        target = _target(args, origin)
        if target != origin and allows is not None and not allows(target):
            raise ToolRefused(
                f"{target.channel}:{target.conversation_id} is not a conversation this bot "
                "can post to"
            )
        try:
            at = parse_time(args.at, args.timezone) if args.at else None
            spec = JobSpec(
                prompt=args.prompt,
                name=args.name,
                cron=args.cron,
                at=at,
                timezone=args.timezone,
                delivery=DeliveryMode(args.delivery),
                origin=StoredTarget.of(origin),
                target=StoredTarget.of(target),
                creator_id=context.requester,
                origin_is_direct=context.is_direct,
                origin_is_group=not context.is_direct,
                origin_guild_id=context.turn.envelope.guild_id,
            )
            job = await book.add(spec, now=clock())
        except ScheduleError as exc:
            raise ToolFailed(str(exc)) from None
        where = (
            "results are only recorded"
            if spec.delivery is DeliveryMode.NONE
            else f"results go to {target.channel}:{target.conversation_id}"
        )
        return (
            f"scheduled job {job.id}: {spec.when()}; next run "
            f"{describe(job.next_run_at, spec.timezone)}; {where}"
        )

    async def listing(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        parse_arguments(NoArguments, arguments)
        jobs = [j for j in await book.for_conversation(context.delivery) if j.enabled or j.paused]
        if not jobs:
            return "no scheduled jobs in this conversation"
        lines = []
        for job in jobs:
            spec = job.spec
            label = f' "{spec.name}"' if spec.name else ""
            timing = (
                "paused by an admin (it does not run until resumed)"
                if job.paused
                else f"next {describe(job.next_run_at, spec.timezone)}"
            )
            lines.append(
                f"{job.id}{label}: {spec.when()}; {timing}"
                f"; delivery {spec.delivery.value}; task: {spec.prompt[:200]}"
            )
        return "\n".join(lines)

    async def remove(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(ScheduleRemoveArguments, arguments)
        job = await book.get(args.id)
        if job is None or not job.belongs_to(context.delivery):
            raise ToolFailed(f"no job {args.id!r} in this conversation (see schedule_list)")
        await book.remove(job.id)
        return f"removed job {job.id}"

    return [
        ToolSpec(
            name="schedule_add",
            description=(
                "Schedule a task: repeating (cron) or once (at). When it runs, its result is "
                "posted to this conversation unless delivery is 'none' or another "
                "conversation is named (which needs approval). Scheduled runs cannot ask "
                "for approvals."
            ),
            parameters=schema_of(ScheduleAddArguments),
            handler=add,
            requires_approval=True,
            approval_check=needs_approval,
            kind=ToolKind.WRITE,
            channel_aware=True,
        ),
        ToolSpec(
            name="schedule_list",
            description="List the scheduled jobs of this conversation.",
            parameters=schema_of(NoArguments),
            handler=listing,
            requires_approval=False,
            kind=ToolKind.READ_ONLY,
            concurrency_safe=True,
        ),
        ToolSpec(
            name="schedule_remove",
            description="Remove a scheduled job of this conversation by its id.",
            parameters=schema_of(ScheduleRemoveArguments),
            handler=remove,
            requires_approval=False,
            kind=ToolKind.WRITE,
        ),
    ]
