"""The daily retention job: records older than their ``[retention]`` window deleted, the file
kept compact.

The App starts :meth:`RetentionJob.run`. A run is due a day after the last one finished (the
time is kept in the database, so restarts do not run it again sooner); the first ever waits
:data:`FIRST_RUN_DELAY_S` after start-up, so that a start is never slowed by it. Each run
reads the configuration as it is then (a reload applies to the next run), deletes by age
(:class:`bot.store.retention.Retention`, table by table, in small batches) and, with
``vacuum`` on, gives the freed pages back to the file system (:meth:`bot.store.Store.compact`;
the first time on a file from before incremental vacuum, one full ``VACUUM`` that rewrites
it: logged as ``db_auto_vacuum_switched`` with how long it took). A failed run is logged and
tried again an hour later.

Files users sent are pruned by their own job, ``attachments.keep_days`` after they arrived
(:mod:`bot.attachments.retention`); memory notes are kept until deleted or forgotten. Group
context lines past their own window (``context.group_minutes``) are deleted at every run,
whatever ``[retention]`` says.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from bot.backoff import cancel_requested
from bot.config.retention import RetentionConfig
from bot.store import Compaction, Store

log = structlog.get_logger(__name__)

DAY_S = 86_400.0
FIRST_RUN_DELAY_S = 600.0
RETRY_S = 3600.0


@dataclass(slots=True, kw_only=True)
class RetentionRun:
    """What one run deleted, by table, and what compacting gave back (None: not run)."""

    removed: dict[str, int] = field(default_factory=dict)
    compaction: Compaction | None = None


class RetentionJob:
    """Deletes by age once a day (see the module docstring)."""

    def __init__(
        self,
        *,
        store: Store,
        config: Callable[[], RetentionConfig],
        clock: Callable[[], float] = time.time,
        first_run_delay_s: float = FIRST_RUN_DELAY_S,
    ) -> None:
        self._store = store
        self._config = config
        self._clock = clock
        self._first_delay = first_run_delay_s

    async def run(self) -> None:
        """Run whenever a run is due; lives until cancelled."""
        await asyncio.sleep(self._first_delay)
        while True:
            wait = RETRY_S
            try:
                wait = await self._until_due()
                if wait <= 0:
                    if self._config().enabled:
                        await self.run_once()
                    wait = DAY_S
            except Exception as exc:
                if cancel_requested():
                    raise asyncio.CancelledError from exc  # a stop, not a bad run
                # Boundary: the daemon outlives a failed run (a busy or full disk); the
                # next try is an hour away.
                log.exception("retention_failed")
                wait = RETRY_S
            await asyncio.sleep(wait)

    async def _until_due(self) -> float:
        last = await self._store.retention.last_run()
        return 0.0 if last is None else last + DAY_S - self._clock()

    async def run_once(self) -> RetentionRun:
        """Delete what is older than its window, compact, and record the run."""
        config = self._config()
        now = self._clock()
        store, run = self._store, RetentionRun()

        def cutoff(days: int) -> float:
            return now - days * DAY_S

        if config.history_days:
            run.removed["messages"] = await store.retention.prune_history(
                cutoff(config.history_days)
            )
        if config.tool_calls_days:
            calls, approvals = await store.retention.prune_tool_calls(
                cutoff(config.tool_calls_days)
            )
            run.removed["tool_calls"], run.removed["approvals"] = calls, approvals
        if config.inbox_days:
            entries, replies = await store.retention.prune_inbox(cutoff(config.inbox_days))
            run.removed["inbox"], run.removed["outbox"] = entries, replies
            run.removed["display_names"] = await store.retention.prune_display_names(
                cutoff(config.inbox_days)
            )
            run.removed["conversation_titles"] = await store.retention.prune_conversation_titles(
                cutoff(config.inbox_days)
            )
        if config.usage_days:
            rows, notices = await store.retention.prune_usage(cutoff(config.usage_days))
            run.removed["usage"], run.removed["budget_notices"] = rows, notices
        if config.audit_days:
            run.removed["audit"] = await store.retention.prune_audit(cutoff(config.audit_days))
        # group context keeps its own window (docs/context.md): what silent conversations left
        lines = await store.context_lines.prune(now)
        if lines:
            run.removed["context_lines"] = lines
        if config.vacuum:
            run.compaction = await store.compact()
            if run.compaction.switched:
                log.info("db_auto_vacuum_switched", vacuum_s=round(run.compaction.vacuum_s, 2))
        await store.retention.record_run(self._clock())
        log.info(
            "retention_done",
            removed=run.removed,
            pages_freed=run.compaction.pages_freed if run.compaction else 0,
        )
        return run
