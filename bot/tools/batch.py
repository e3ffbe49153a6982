"""One batch in flight: the per-call state the pipeline carries between its stages, and the
report of a finished batch.

A batch is one model reply's tool calls. Preparation notes, per call index, the arguments
as they will run (the row, the receipt and the after-hooks use them; a call whose arguments
never decoded has none), the call's key (the loop detector counts by it) and, for a call
that may run, the prepared call (dispatch runs it; recording asks its spec whether it
completes the run; an interrupted one is reported under the tool it runs as). Recording
notes each call's final outcome the moment it starts recording it, so that a call is
recorded at most once even when the batch is salvaged halfway, and collects the rows that
are written together with the batch's history messages.

The verdict only ever moves towards stopping the turn: a repeated refused prompt
(ABORTED) outranks the loop detector (LOOP_STOPPED), which outranks a ``completes_run``
tool's success (COMPLETED_RUN). A batch is owned by one pipeline and is not shared.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.approval.gate import ApprovalParked
from bot.providers.base import ChatMessage, ToolCallRequest
from bot.store import ToolCallRecord
from bot.tools.call import CallDecision, PreparedCall
from bot.tools.outcome import ToolOutcome, interrupted
from bot.tools.parking import BatchTicket
from bot.tools.slots import ResultSlots


class BatchVerdict(enum.StrEnum):
    CONTINUE = "continue"
    COMPLETED_RUN = "completed_run"  # a completes_run tool succeeded
    LOOP_STOPPED = "loop_stopped"  # the loop detector stopped the turn
    ABORTED = "aborted"  # a refused prompt-requiring call was repeated
    PARKED = "parked"  # a call waits on an approval card with the turn parked


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchReport:
    """What one batch did. ``messages`` were appended to history (assistant first)."""

    outcomes: tuple[ToolOutcome, ...]
    messages: tuple[ChatMessage, ...]
    verdict: BatchVerdict


class Batch:
    """Book-keeping of the batch in flight, indexed by the call's position in the reply."""

    __slots__ = (
        "arguments",
        "asked",
        "cards",
        "decisions",
        "final",
        "keys",
        "parked",
        "prepared",
        "resumed",
        "rows",
        "slots",
        "text",
        "ticket",
        "verdict",
    )

    def __init__(self, text: str, requests: Sequence[ToolCallRequest]) -> None:
        self.text = text
        self.slots = ResultSlots(requests)
        self.arguments: dict[int, Mapping[str, object]] = {}
        self.keys: dict[int, tuple[str, str]] = {}
        self.prepared: dict[int, PreparedCall] = {}
        self.decisions: dict[int, CallDecision] = {}  # what approval decided, by index
        self.final: dict[int, ToolOutcome] = {}
        self.rows: list[ToolCallRecord] = []
        self.asked = False  # a call of this batch needed a prompt: it runs sequentially
        self.verdict = BatchVerdict.CONTINUE
        #: parking (bot.tools.parking): the card of each call asked so far, by index; the
        #: cards whose decisions a resumed batch takes instead of asking; the park that
        #: ended the batch and the ticket that recorded it
        self.cards: dict[int, str] = {}
        self.resumed: Mapping[int, str] | None = None
        self.parked: ApprovalParked | None = None
        self.ticket: BatchTicket | None = None

    def fill_interrupted(self) -> None:
        """Fill every open slot with INTERRUPTED: "before launch" unless the call was
        launched, named as it would have run (a before-hook may have rewritten the tool)."""
        slots = self.slots
        for index in slots.open_indexes():
            request, prepared = slots.requests[index], self.prepared.get(index)
            outcome = interrupted(
                call_id=request.id,
                tool=request.name if prepared is None else prepared.name,
                before_launch=not slots.launched(index),
            )
            slots.fill(index, outcome)

    @property
    def aborted(self) -> bool:
        return self.verdict is BatchVerdict.ABORTED

    def abort(self) -> None:
        """A refused prompt-requiring call was repeated: nothing more of this batch runs."""
        self.verdict = BatchVerdict.ABORTED

    def stop_for_loop(self) -> None:
        """The loop detector stopped the turn (unless the batch was already aborted)."""
        if self.verdict is not BatchVerdict.ABORTED:
            self.verdict = BatchVerdict.LOOP_STOPPED

    def complete_run(self) -> None:
        """A ``completes_run`` tool succeeded (unless the turn already stops otherwise)."""
        if self.verdict is BatchVerdict.CONTINUE:
            self.verdict = BatchVerdict.COMPLETED_RUN
