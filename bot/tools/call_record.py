"""The record of a call outside history: the observer's start and finish events and the
call's ``tool_calls`` row.

Secrets never reach either. A finish event carries the result scrubbed, then cut
(:meth:`ToolCallFinished.of`). A row carries the arguments as they ran, scrubbed and in
canonical JSON; for a call whose arguments never decoded, the raw argument text scrubbed,
then clipped to :data:`MAX_RAW_ARGUMENT_CHARS`; and the observation scrubbed, then bounded
as the model sees it. (Scrubbing first matters: a secret that crosses a cut would otherwise
keep its first characters.) A row also carries the SHA-256 of the full arguments and result,
and, for a call the pipeline promised a receipt, the receipt sealed over the row as built
(:mod:`bot.tools.receipt`). These functions only build values: the pipeline decides when an
event is emitted and writes the rows of a batch together with its history.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from bot.approval.gate import canonical_json
from bot.observe import ToolCallFinished, ToolCallStarted
from bot.scrub import scrub_mapping, scrub_text
from bot.store import ToolCallRecord
from bot.tools.call import CallDecision
from bot.tools.outcome import ToolOutcome
from bot.tools.receipt import PendingReceipt, arguments_digest, sha256_text
from bot.tools.truncation import bound_text
from bot.turn import TurnIdentity

MAX_RAW_ARGUMENT_CHARS = 2000


def started_event(turn: TurnIdentity, *, call_id: str, tool: str) -> ToolCallStarted:
    """The event of a handler launching."""
    return ToolCallStarted(
        tool=tool,
        call_id=call_id,
        channel=turn.channel,
        conversation_id=turn.envelope.conversation_id,
        turn_id=turn.turn_id,
    )


def finished_event(turn: TurnIdentity, outcome: ToolOutcome) -> ToolCallFinished:
    """The event of an outcome, also of a call that never launched."""
    return ToolCallFinished.of(
        tool=outcome.tool,
        call_id=outcome.call_id,
        channel=turn.channel,
        conversation_id=turn.envelope.conversation_id,
        turn_id=turn.turn_id,
        status=outcome.status.value,
        synthetic=outcome.synthetic,
        duration_s=outcome.duration_s,
        result=outcome.observation,
    )


def tool_call_row(
    turn: TurnIdentity,
    outcome: ToolOutcome,
    *,
    arguments: Mapping[str, object] | None,
    raw_arguments: str,
    max_observation_chars: int,
    receipt: PendingReceipt | None,
    approved_by: str | None,
    decision: CallDecision | None = None,
) -> ToolCallRecord:
    """The row of one call, stamped with the time it is built. ``arguments`` are ``None``
    when they never decoded; then ``raw_arguments`` (the model's text) is recorded instead,
    and no arguments digest. The observation is bounded to
    ``max_observation_chars`` like the one the model sees. ``approved_by`` is who let the
    call run (:attr:`~bot.tools.call.PreparedCall.approved_by`), ``None`` for a call that
    never got that far. With a ``receipt`` (promised at the result, with the digests of the
    full call), the row carries those digests and is sealed with its receipt. How the call
    ended (``failed``, the outcome's reason) and ``decision`` are recorded beside it."""
    if arguments is not None:
        recorded_arguments = canonical_json(scrub_mapping(arguments))
    else:
        recorded_arguments = scrub_text(raw_arguments)[:MAX_RAW_ARGUMENT_CHARS]
    if receipt is not None:
        arguments_sha256: str | None = receipt.arguments_sha256
        result_sha256 = receipt.result_sha256
    else:
        arguments_sha256 = None if arguments is None else arguments_digest(arguments)
        result_sha256 = sha256_text(outcome.observation)
    record = ToolCallRecord(
        turn_id=turn.turn_id,
        call_id=outcome.call_id,
        session_key=turn.session_key,
        channel=turn.channel,
        tool=outcome.tool,
        arguments=recorded_arguments,
        status=outcome.status.value,
        synthetic=outcome.synthetic,
        observation=bound_text(scrub_text(outcome.observation), max_observation_chars),
        duration_ms=outcome.duration_s * 1000,
        approved_by=approved_by,
        arguments_sha256=arguments_sha256,
        result_sha256=result_sha256,
        created_at=time.time(),
        failed=outcome.failed,
        failure=None if outcome.failure is None else scrub_text(outcome.failure.label),
        reason=outcome.reason.value,
        decision=None if decision is None else decision.decision,
        decided_by=None if decision is None else scrub_text(decision.decided_by),
        decision_reason=None if decision is None else scrub_text(decision.reason) or None,
        grant_id=None if decision is None else decision.grant_id,
        fingerprint=None if decision is None else decision.fingerprint or None,
    )
    return record if receipt is None else receipt.seal(record)
