"""The usage of every model call, and the budgets that stop a turn: :class:`UsageMeter` per
process, :class:`TurnUsage` per turn.

The turn loop (:mod:`bot.agent.loop`) asks its :class:`TurnUsage`:

* :meth:`TurnUsage.refusal` before the turn begins: with a budget of the turn already used
  up it makes no model call; the conversation is told once per budget window (a
  ``budget_notices`` row decides; later turns of that window answer nothing);
* :meth:`TurnUsage.add` after each model call: the call's usage (the provider's, or an
  estimate when it reported none), cost, latency and the provider that answered, kept in
  memory until the turn's next record is committed;
* :meth:`TurnUsage.record` when the turn commits a tool batch or its answer: the rows go in
  that same transaction (no trip of their own), then count in the process's
  :class:`~bot.usage.ledger.SpendLedger`;
* :meth:`TurnUsage.cut_short` before each further model call: once the turn has used up a
  budget, it ends there with what was answered so far and the notice;
* :meth:`TurnUsage.finish` when it ends: rows no record carried (an empty answer, a turn cut
  off) are written by :meth:`UsageMeter.run`, the meter's own task, not by the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import structlog

from bot.config import Settings
from bot.errors import StorageBusy, StorageError
from bot.providers.base import CompletionRequest, ProviderReply, Usage
from bot.store import Store, UnitOfWork, UsageRecord
from bot.turn import TurnIdentity
from bot.usage.budgets import OWNERS, Budget, BudgetRules, Held, Metric, ScopeKeys
from bot.usage.estimate import estimated_usage
from bot.usage.ledger import SpendLedger
from bot.usage.pricing import PriceTable
from bot.usage.windows import BudgetCalendar, Period, Window

log = structlog.get_logger(__name__)

#: How long the writer waits before trying a busy database again.
BUSY_RETRY_S = 0.5

UsageHook = Callable[[UsageRecord], None]
"""Told of every call as it is recorded (the metrics); must not block or raise."""


class UsageMeter:
    """Records every model call of the process and keeps the budgets (module doc).

    Built once per process by the composition root; :meth:`update` applies a reloaded
    configuration to the turns that start after it; :meth:`run` is the writer of the rows
    turns leave over, and must run while turns do (the App supervises it)."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        on_record: UsageHook | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.clock = clock
        self._on_record = on_record
        self._leftover: list[UsageRecord] = []
        self._wake = asyncio.Event()
        self.ledger: SpendLedger | None = None
        self.update(settings)

    def update(self, settings: Settings) -> None:
        """Use ``settings``' prices and budgets from now on (a new ledger, read again, when
        what it sums or the time zone changed)."""
        self.prices = PriceTable(settings.pricing)
        self.rules = rules = BudgetRules(settings.budgets, settings.channels)
        old = self.ledger
        zone = settings.budgets.time_zone
        if not rules.scopes:
            self.ledger = None
        elif (
            old is None
            or (old.scopes, old.monthly) != (rules.scopes, rules.monthly)
            or old.calendar.zone_name != zone
        ):
            self.ledger = SpendLedger(
                self.store.usage,
                BudgetCalendar(zone),
                scopes=rules.scopes,
                monthly=rules.monthly,
                refresh_s=settings.budgets.refresh_s,
                clock=self.clock,
            )
        else:
            old.refresh_s = settings.budgets.refresh_s

    def turn(self, turn: TurnIdentity, *, agent: str, provider: str) -> TurnUsage:
        """The usage of one turn of ``agent`` (``provider``: the name its calls are recorded
        under when a reply names none)."""
        if self.ledger is None:
            return TurnUsage(self, turn, agent=agent, provider=provider, keys=(), held=())
        keys = self.rules.keys(turn, agent=agent)
        held = self.rules.for_turn(turn, keys, agent=agent)
        return TurnUsage(self, turn, agent=agent, provider=provider, keys=keys, held=held)

    def committed(self, records: list[UsageRecord], keys: ScopeKeys | None = None) -> None:
        """``records`` were written: count them in the budgets (``keys``: theirs, when they
        are one turn's)."""
        if self.ledger is not None:
            self.ledger.add(records, keys)

    def later(self, records: list[UsageRecord]) -> None:
        """Write ``records`` from the meter's own task (:meth:`run`)."""
        self._leftover += records
        self._wake.set()

    async def run(self) -> None:
        """Write the rows turns leave over, as they come; on cancellation, what is left once
        more. A busy database is tried again; another storage error is logged and the rows
        are dropped (the turn that made them had ended)."""
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                await self._write()
        finally:
            with contextlib.suppress(StorageError):
                await self._write()

    async def _write(self) -> None:
        while self._leftover:
            batch, self._leftover = self._leftover, []
            try:
                await self.store.usage.record(batch)
            except StorageBusy:
                self._leftover = batch + self._leftover
                await asyncio.sleep(BUSY_RETRY_S)
                continue
            except StorageError as exc:
                log.warning("usage_rows_lost", rows=len(batch), error=str(exc))
                continue
            self.committed(batch)

    def transcribed(
        self,
        turn: TurnIdentity,
        *,
        agent: str,
        provider: str,
        model: str,
        seconds: float,
        latency_s: float,
    ) -> None:
        """One transcription of ``seconds`` of audio for ``turn``: a row of no tokens, its
        cost from ``[pricing."<model>"] audio_minute``, written by :meth:`run` and counted
        in the budgets."""
        envelope = turn.envelope
        record = UsageRecord(
            at=self.clock(),
            turn_id=turn.turn_id,
            session_key=turn.session_key,
            channel=turn.channel,
            conversation_id=envelope.conversation_id,
            user_id=envelope.sender.id,
            agent=agent,
            provider=provider,
            model=model,
            usage=Usage(),
            latency_ms=round(latency_s * 1000),
            cost=self.prices.audio_cost(model, seconds),
            audio_seconds=seconds,
        )
        self.recorded(record)
        self.later([record])

    def recorded(self, record: UsageRecord) -> None:
        """Tell the hook of a call just recorded."""
        if self._on_record is not None:
            self._on_record(record)


class TurnUsage:
    """One turn's calls and budgets (see the module doc). Not shared between turns."""

    def __init__(
        self,
        meter: UsageMeter,
        turn: TurnIdentity,
        *,
        agent: str,
        provider: str,
        keys: ScopeKeys,
        held: tuple[Held, ...],
    ) -> None:
        self._meter = meter
        self._turn = turn
        self._agent = agent
        self._provider = provider
        self._keys = keys
        self._held = held
        self._channel = turn.channel
        self._pending: list[UsageRecord] = []

    @property
    def budgeted(self) -> bool:
        """Whether a budget holds this turn: with none, :meth:`refusal` and
        :meth:`cut_short` answer None and need not be awaited."""
        return bool(self._held) and self._meter.ledger is not None

    async def refusal(self) -> str | None:
        """Before the turn's first call: ``None`` when no budget of the turn is used up;
        otherwise what to answer instead of calling the model: the notice, or ``""`` when
        this conversation was told already in the budget's window."""
        budget, window = await self._spent()
        if budget is None or window is None:
            return None
        told = await self._notice(budget, window)
        log.info("budget_spent", budget=budget.name, metric=budget.limit.metric.value, told=told)
        return _notice_text(budget, window) if told else ""

    async def spent(self) -> bool:
        """Whether a budget of the turn is used up already (nothing is recorded: a
        voice note is not transcribed for a turn :meth:`refusal` will refuse)."""
        budget, _ = await self._spent()
        return budget is not None

    async def cut_short(self) -> str | None:
        """Before each further call: ``None`` while the turn may go on; once its calls used
        up a budget, the notice that ends it (recorded as the window's notice)."""
        if not self._held:
            return None
        budget, window = await self._spent()
        if budget is None or window is None:
            return None
        await self._notice(budget, window)
        log.info("budget_spent_midway", budget=budget.name, metric=budget.limit.metric.value)
        return _notice_text(budget, window)

    def add(self, request: CompletionRequest, reply: ProviderReply, latency_s: float) -> None:
        """One model call, as it returned ``reply`` to ``request`` after ``latency_s``."""
        meter, turn = self._meter, self._turn
        usage = reply.usage or estimated_usage(request, reply)
        model = reply.model or "unknown"
        cost = meter.prices.cost(model, usage)
        envelope = turn.envelope
        record = UsageRecord(
            at=meter.clock(),
            turn_id=turn.turn_id,
            session_key=turn.session_key,
            channel=self._channel,
            conversation_id=envelope.conversation_id,
            user_id=envelope.sender.id,
            agent=self._agent,
            provider=reply.provider or self._provider,
            model=model,
            usage=usage,
            latency_ms=round(latency_s * 1000),
            cost=cost,
        )
        self._pending.append(record)
        meter.recorded(record)

    def record(self, work: UnitOfWork) -> UnitOfWork:
        """``work`` with the calls not yet recorded (call :meth:`committed` once it is)."""
        return work.record_usage(self._pending) if self._pending else work

    def committed(self) -> None:
        """The unit of work from :meth:`record` was committed."""
        if self._pending:
            self._meter.committed(self._pending, self._keys)
            self._pending = []

    def finish(self) -> None:
        """The turn ended: calls not yet recorded are written by the meter."""
        if self._pending:
            self._meter.later(self._pending)
            self._pending = []

    async def _spent(self) -> tuple[Budget | None, Window | None]:
        """The used-up budget whose window ends last (the longest wait), if any."""
        ledger = self._meter.ledger
        if not self._held or ledger is None:
            return None, None
        day, month = await ledger.current()
        found: tuple[Budget, Window] | None = None
        own = self._unrecorded()
        for scope, key, limits in self._held:
            sums = ledger.spent(scope, key)
            for limit in limits:
                if sums[limit.index] + own[limit.metric] < limit.amount:
                    continue
                window = day if limit.period is Period.DAY else month
                if found is None or window.end > found[1].end:
                    found = (Budget(scope=scope, key=key, limit=limit), window)
        return found if found is not None else (None, None)

    def _unrecorded(self) -> dict[Metric, float]:
        """This turn's calls the ledger has not counted yet."""
        if not self._pending:
            return _NONE
        tokens = sum(r.usage.total_tokens for r in self._pending)
        return {Metric.TOKENS: tokens, Metric.COST: sum(r.cost or 0.0 for r in self._pending)}

    async def _notice(self, budget: Budget, window: Window) -> bool:
        turn = self._turn
        try:
            return await self._meter.store.usage.notice_once(
                channel=self._channel,
                conversation_id=turn.envelope.conversation_id,
                budget=budget.name,
                window_start=window.start,
                at=self._meter.clock(),
                turn_id=turn.turn_id,
            )
        except StorageError as exc:
            # telling twice is better than saying nothing
            log.warning("budget_notice_unrecorded", error=str(exc))
            return True


_NONE = {Metric.TOKENS: 0.0, Metric.COST: 0.0}


def _notice_text(budget: Budget, window: Window) -> str:
    owner = OWNERS[budget.scope]
    return f"{owner} {window.period.adjective} budget is used up; it resets {window.resets}."
