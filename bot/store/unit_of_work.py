"""A unit of work: what one step of a turn records, committed all together or not at all.

The caller says what it records; the store decides how it travels. Building a unit does no
I/O. :meth:`bot.store.Store.commit` then runs its writes, in the order they were added, in
one transaction — on SQLite in one trip to the database thread, however many rows::

    work = UnitOfWork()
    work.mark_inbox(key, InboxStatus.PROCESSING)
    work.append_history(session_key, turn_id, [user_message])
    history = await store.commit(work, then=store.history.loading(session_key))
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.providers.base import ChatMessage
from bot.store.history import appending
from bot.store.inbox import InboxKey, InboxStatus, marking, starting
from bot.store.outbox import ReplyKind, ReplyStatus, recording_reply, settling_reply
from bot.store.parked import ParkRecord, adopting, dropping, parking, reparking
from bot.store.statements import Write
from bot.store.tool_calls import ToolCallRecord, recording
from bot.store.usage import UsageRecord
from bot.store.usage import recording as recording_usage


class UnitOfWork:
    """The records of one atomic step (see the module docstring). Each method adds to the
    unit and returns it; a unit is committed once, and a unit never committed writes
    nothing."""

    def __init__(self) -> None:
        self._writes: list[Write] = []

    @property
    def writes(self) -> tuple[Write, ...]:
        """The statements, in order (what the engine runs)."""
        return tuple(self._writes)

    def mark_inbox(
        self, key: InboxKey, status: InboxStatus, error: str | None = None
    ) -> UnitOfWork:
        """The inbox entry ``key`` moves to ``status`` (``processing`` commits with the turn's
        first record: after a crash, an entry is ``processing`` exactly when its turn began)."""
        self._writes.append(marking(key, status, error))
        return self

    def park(
        self, approval_id: str, inbox: InboxKey, *, at: float, owner: str | None
    ) -> UnitOfWork:
        """The turn waiting on ``approval_id`` parks (:func:`bot.store.parked.parking`): its
        row and its inbox entry ``parked``, with the batch's history added to this unit."""
        self._writes.extend(parking(approval_id, inbox, at=at, owner=owner))
        return self

    def adopt_parked(self, approval_id: str, *, owner: str, at: float) -> UnitOfWork:
        """The turn parked on ``approval_id`` becomes the replica ``owner``'s, its card's
        ``replica_id`` with it (:func:`bot.store.parked.adopting`)."""
        self._writes.extend(adopting(approval_id, owner=owner, at=at))
        return self

    def repark_cut_off(self, record: ParkRecord, *, at: float) -> UnitOfWork:
        """The turn whose resumption was cut off parks again, marked ``cut_off``
        (:func:`bot.store.parked.reparking`)."""
        self._writes.extend(reparking(record, at=at))
        return self

    def drop_parked(self, approval_id: str) -> UnitOfWork:
        """The parked row of ``approval_id`` goes (its resumed batch is recorded here)."""
        self._writes.append(dropping(approval_id))
        return self

    def start_inbox(self, key: InboxKey, turn_id: str) -> UnitOfWork:
        """The inbox entry ``key`` becomes ``processing`` as the run ``turn_id`` begins (the
        turn's first record; the run is counted)."""
        self._writes.append(starting(key, turn_id))
        return self

    def record_reply(
        self, key: InboxKey, kind: ReplyKind, *, reply_key: str, target: str, body: str
    ) -> UnitOfWork:
        """The reply ``body`` to the entry ``key`` is recorded ``sending`` (before its send;
        a turn's answer rides with its history where the channel can check a delivery)."""
        self._writes.append(
            recording_reply(key, kind, reply_key=reply_key, target=target, body=body)
        )
        return self

    def settle_reply(
        self,
        key: InboxKey,
        kind: ReplyKind,
        status: ReplyStatus,
        *,
        sent_ids: Sequence[str] = (),
        error: str | None = None,
    ) -> UnitOfWork:
        """The reply ended ``sent`` (with the platform's message ids) or ``failed``."""
        self._writes.append(settling_reply(key, kind, status, sent_ids=sent_ids, error=error))
        return self

    def append_history(
        self, session_key: str, turn_id: str, messages: Sequence[ChatMessage]
    ) -> UnitOfWork:
        """``messages`` join the session's history (its current generation)."""
        self._writes += appending(session_key, turn_id, messages)
        return self

    def record_tool_calls(self, records: Sequence[ToolCallRecord]) -> UnitOfWork:
        """One ``tool_calls`` row per record."""
        self._writes += recording(records)
        return self

    def record_usage(self, records: Sequence[UsageRecord]) -> UnitOfWork:
        """One ``usage`` row per model call (a turn's calls ride with its own records)."""
        self._writes += recording_usage(records)
        return self
