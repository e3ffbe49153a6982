"""Parking a batch that waits on an approval card, and what history says of it.

A turn's pipeline gives each ask a :class:`BatchTicket` (:class:`~bot.approval.gate.ParkTicket`):
when the card is created the ticket records the batch (:class:`~bot.store.parked.ParkRecord`),
and when the ask ends in its turn it drops the record again. When the ask parks instead
(:class:`~bot.approval.gate.ApprovalParked`), the pipeline writes the batch to history with
one synthetic result per call id (:func:`parked_outcomes`: "waiting for approval since …"
for the call on the card, "not run yet" for the others: the provider's rule of one result
per call holds) together with the row and the inbox entry becoming ``parked``
(:func:`parking_work`). A turn killed while it waited is parked the same way at the next
start (:func:`adopt_waiting`). Once the card is decided, the resumption runs the batch and
appends its real outcomes as one new message (:func:`resumed_message`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime

import structlog

from bot.errors import StorageError
from bot.providers.base import ChatMessage, ToolCallRequest
from bot.store import Store, UnitOfWork
from bot.store.parked import PARKED, ParkRecord, ParkState, UnreadableParkRecord
from bot.tools.outcome import OutcomeReason, ToolOutcome, not_executed
from bot.tools.transcript import assistant_message, result_messages
from bot.turn import TurnIdentity

log = structlog.get_logger(__name__)


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")


def parked_outcomes(
    calls: Sequence[ToolCallRequest], waiting: int, since: float, filled: Mapping[int, ToolOutcome]
) -> list[ToolOutcome]:
    """One result per call of a parked batch: those already known (``filled``: refused,
    invalid), "waiting for approval since …" for the call on the card, "not run yet" for
    the others (they run, or are asked about, when the turn resumes)."""
    outcomes = []
    for index, call in enumerate(calls):
        known = filled.get(index)
        if known is not None:
            outcomes.append(known)
            continue
        if index == waiting:
            detail = f"this call is waiting for approval since {_when(since)}."
        else:
            detail = f"this call waits with the batch for the approval of call {calls[waiting].id}."
        outcomes.append(
            not_executed(
                OutcomeReason.WAITING_FOR_APPROVAL, call_id=call.id, tool=call.name, detail=detail
            )
        )
    return outcomes


def parking_work(
    record: ParkRecord,
    outcomes: Sequence[ToolOutcome],
    *,
    at: float,
    owner: str | None,
    work: UnitOfWork | None = None,
) -> UnitOfWork:
    """``work`` (or a new unit) with the parked batch joining history (the assistant's
    tool-call message and ``outcomes``) and the row and the inbox entry becoming ``parked``."""
    work = work or UnitOfWork()
    messages = [assistant_message(record.text, record.calls), *result_messages(outcomes)]
    work.append_history(record.session_key, record.turn_id, messages)
    return work.park(record.approval_id, record.inbox, at=at, owner=owner)


class BatchTicket:
    """The :class:`~bot.approval.gate.ParkTicket` of one call of a batch in flight."""

    def __init__(
        self,
        store: Store,
        turn: TurnIdentity,
        *,
        text: str,
        calls: Sequence[ToolCallRequest],
        index: int,
        cards: dict[int, str],
        owner: str | None,
    ) -> None:
        self._store = store
        self._turn = turn
        self._text = text
        self._calls = tuple(calls)
        self._index = index
        self._cards = cards
        self._owner = owner
        self.record: ParkRecord | None = None

    async def hold(self, approval_id: str, since: float) -> bool:
        turn = self._turn
        self._cards[self._index] = approval_id
        record = ParkRecord(
            approval_id=approval_id,
            turn_id=turn.turn_id,
            session_key=turn.session_key,
            envelope=turn.envelope,
            text=self._text,
            calls=self._calls,
            waiting=self._index,
            since=since,
            asked=dict(self._cards),
            owner=self._owner,
        )
        if not await self._store.parked.hold(record):
            log.warning("approval_not_parkable", approval_id=approval_id, reason="batch too large")
            return False
        self.record = record
        await _announce(self._store, approval_id)
        return True

    async def release(self, approval_id: str) -> None:
        await self._store.parked.drop(approval_id)


async def _announce(store: Store, approval_id: str) -> None:
    """Wake the other replicas' resumption sweeps (their idle gate): a row is there. A lost
    signal costs them up to their idle check (:data:`bot.gateway.resumption.IDLE_CHECK_S`)."""
    try:
        await store.signals.notify(PARKED, approval_id)
    except StorageError as exc:
        log.warning("parked_signal_failed", approval_id=approval_id, error=str(exc))


async def adopt_waiting(
    store: Store,
    *,
    owner: str | None,
    gone: frozenset[str] | None,
    owns: Callable[[str], Awaitable[bool]] | None = None,
) -> int:
    """At a start: park the turns a stop or a kill left ``waiting`` (their batch was never
    written to history), so that start-up recovery leaves their entries alone and their
    cards stay open. ``gone``: only the rows of these replicas (None: every row, one
    process), and of those only the ones whose session ``owns`` says is this replica's
    (the replica that takes a session over adopts its parked turns: their rows and cards
    name it from then on, :func:`~bot.store.parked.adopting`). A row whose body cannot be
    read is parked as it is: its resumption fails it with a notice. Returns how many were
    parked."""
    count = 0
    for row in await store.parked.rows(states=(ParkState.WAITING,)):
        if gone is not None and row.owner not in gone:
            continue
        if owns is not None and not await owns(row.session_key):
            continue  # another live replica runs its session: that one adopts it
        now = time.time()
        try:
            record = await store.parked.get(row.approval_id)
        except UnreadableParkRecord:
            work = UnitOfWork().park(row.approval_id, row.inbox, at=now, owner=owner)
        else:
            if record is None:
                continue
            outcomes = parked_outcomes(record.calls, record.waiting, record.since, {})
            work = parking_work(record, outcomes, at=now, owner=owner)
        if gone is not None and owner is not None:
            work.adopt_parked(row.approval_id, owner=owner, at=now)
        await store.commit(work)
        count += 1
    if count:
        log.info("parked_turns_adopted", count=count)
    return count


#: The head of the message that brings a parked batch's outcomes back to the model.
RESUMED_HEAD = (
    "[runtime] The tool calls that were waiting for approval have been decided; these are "
    "their real results (they replace the earlier 'not executed yet' results):"
)


def resumed_message(outcomes: Sequence[ToolOutcome]) -> ChatMessage:
    """The batch's real outcomes, as one new message after the history the turn parked
    with (its results are already there: a provider takes one result per call id)."""
    lines = [RESUMED_HEAD]
    for outcome in outcomes:
        lines.append(f"- call {outcome.call_id} ({outcome.tool}): {outcome.observation}")
    return ChatMessage(role="user", content="\n".join(lines))
