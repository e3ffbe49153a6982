"""The tool pipeline: the one module that orders the stages of ``pipeline.md``.

Per batch (one model reply's tool calls):

1. parsing (ids normalised first, so every call has one id to answer);
2. preparation, per call in the model's order: turn admission → lookup and schema
   validation → before-hooks (a rewrite is validated again; hooks only tighten) → delivery
   defaults → ``approved`` marker stripped → approval (policy assessment, then a person or
   the runtime for ASK; the repeated-prompt guard runs before asking) → duplicate guard;
3. execution: sequential unless parallel tools are on, more than one call is runnable, none
   needed a prompt and no ``tool_search`` is in the batch; each call passes the per-turn gate,
   the process-wide scheduler and its path locks, then runs with its timeout and retries;
4. recording, per call in the model's order: observer finish event → after-hooks →
   receipt → result bounded → ``tool_calls`` row → loop detection;
5. history: the assistant tool-call message and one result per call id, appended at once.

A batch interrupted from outside (the turn's wall-clock budget) is completed by
:meth:`ToolPipeline.salvage`, which fills open slots with INTERRUPTED results so that history
stays well-formed.

Each stage is its own module and imports no other stage; what the pipeline keeps between
stages is a :class:`~bot.tools.batch.Batch`, what it records outside history is built by
:mod:`bot.tools.call_record`, and what it is given per agent is
:class:`~bot.tools.services.PipelineServices`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence

import structlog

from bot import telemetry
from bot.approval.card import decision_for
from bot.approval.gate import (
    ApprovalDecision,
    ApprovalParked,
    ApprovalRequest,
    Assessment,
    canonical_json,
)
from bot.approval.reasons import RUNTIME, RuntimeReason
from bot.config import OnInterrupted
from bot.crashpoints import crash_point
from bot.progress import ProgressSink, grant_line, progress_hint
from bot.providers.base import ToolCallRequest
from bot.store import UnitOfWork
from bot.store.approvals import ApprovalStatus
from bot.store.audit import Decision
from bot.tools.admission import TurnAdmission
from bot.tools.authorization import (
    approval_request,
    binding_refusal,
    decision_outcome,
    policy_approver,
    policy_denial,
    previewed,
    strip_marker,
)
from bot.tools.batch import Batch, BatchReport, BatchVerdict
from bot.tools.call import CallDecision, ParsedCall, PreparedCall
from bot.tools.call_record import finished_event, started_event, tool_call_row
from bot.tools.cancellation import CancelSignal, unless_cancelled
from bot.tools.delivery import with_delivery_defaults
from bot.tools.dispatch import dispatch, runs_in_parallel
from bot.tools.duplicates import DuplicateGuard
from bot.tools.execution import Invocation, execute
from bot.tools.file_locks import path_arguments
from bot.tools.hooks import HookCall, run_after_hooks, run_before_hooks, strictest
from bot.tools.outcome import (
    OutcomeReason,
    ToolOutcome,
    interrupted,
    not_executed,
    progress_reason,
    result_unknown,
)
from bot.tools.parking import BatchTicket, parked_outcomes, parking_work, resumed_message
from bot.tools.parsing import normalise_ids, parse_call
from bot.tools.registry import ToolEntry, ToolExecutor
from bot.tools.repetition import LOOP_WARNING, LoopDetector, Repetition
from bot.tools.services import PipelineServices
from bot.tools.spec import ToolContext, ToolKind
from bot.tools.transcript import assistant_message, result_messages
from bot.tools.truncation import bound_text
from bot.tools.turn_gate import TurnGate
from bot.tools.validation import resolve
from bot.turn import CancelReason

log = structlog.get_logger(__name__)


class ToolPipeline:
    """Runs the tool calls of one turn, batch by batch. One instance per turn."""

    def __init__(
        self,
        *,
        services: PipelineServices,
        executor: ToolExecutor,
        context: ToolContext,
        progress: ProgressSink,
        cancel: CancelSignal,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._services = services
        self._executor = executor
        self._context = context
        self._turn = context.turn
        self._progress = progress
        self._cancel = cancel
        self._clock = clock
        self._admission = TurnAdmission()
        self._guard = DuplicateGuard()
        self._loops = LoopDetector()
        self._turn_gate = TurnGate()
        self._batch: Batch | None = None
        self._with_batch: UnitOfWork | None = None
        #: a resumed batch's parked row, and whether an earlier resumption was cut off
        self._resuming: str | None = None
        self._cut_off = False
        #: whether the resumed row went, with the batch's outcomes or its parking again
        self._resumed_dropped = False

    # -- batch -------------------------------------------------------------------------

    async def run_batch(
        self,
        text: str,
        requests: Sequence[ToolCallRequest],
        with_batch: UnitOfWork | None = None,
    ) -> BatchReport:
        """Run one reply's tool calls and append them with their results to history.
        ``with_batch`` is what the caller records with the batch (the model call's usage):
        committed in the batch's own transaction, salvaged or not."""
        batch = self._batch = Batch(text, normalise_ids(requests))
        return await self._run(batch, with_batch)

    async def resume_batch(
        self,
        text: str,
        requests: Sequence[ToolCallRequest],
        cards: Mapping[int, str],
        *,
        parked: str | None = None,
        cut_off: bool = False,
    ) -> BatchReport:
        """Run a parked batch once its card is decided (:mod:`bot.agent.resume`): every call
        is prepared again under the configuration in force now, a call asked on one of
        ``cards`` (by index) takes that card's decision instead of asking (the fingerprint
        must still match: a file whose content changed does not run), and the outcomes join
        history as one new message (the parked results are there already). A later call of
        the batch may ask, and park, again. ``parked``: the row resumed, dropped with the
        outcomes (so a row still ``resuming`` after a kill means none was recorded);
        ``cut_off``: an earlier resumption of it was cut off before that, so a call whose
        tool is not ``retry_safe`` may have run: it is not run again, its result unknown."""
        batch = self._batch = Batch(text, requests)
        batch.resumed = cards
        batch.cards.update(cards)
        self._resuming, self._cut_off = parked, cut_off
        return await self._run(batch, None)

    @property
    def resumed_dropped(self) -> bool:
        """Whether the row of the batch resumed (:meth:`resume_batch`'s ``parked``) went,
        in the transaction that recorded its outcomes (or parked the turn again)."""
        return self._resumed_dropped

    async def _run(self, batch: Batch, with_batch: UnitOfWork | None) -> BatchReport:
        self._with_batch = with_batch
        self._guard.new_iteration()
        for index, request in enumerate(batch.slots.requests):
            if batch.aborted or batch.parked is not None or self._cancel.cancelled:
                break
            with telemetry.tool_stage("prepare", request.name, request.id):
                prepared = await self._prepare(batch, index, request)
            if isinstance(prepared, PreparedCall):
                batch.prepared[index] = prepared
            else:
                batch.slots.fill(index, prepared)
        if batch.parked is not None:
            return await self._park(batch)
        if self._cut_off:
            for index, call in list(batch.prepared.items()):
                if not call.spec.retry_safe:
                    tool = call.spec.name
                    log.warning("resumed_call_not_repeated", tool=tool, call_id=call.call_id)
                    batch.slots.fill(index, result_unknown(call_id=call.call_id, tool=tool))
                    del batch.prepared[index]
        runnable = [] if batch.aborted else list(batch.prepared.values())
        parallel = runs_in_parallel(
            runnable,
            (r.name for r in batch.slots.requests),
            enabled=self._services.settings.parallel_tools,
            asked=batch.asked,
        )
        if self._services.settings.on_interrupted is OnInterrupted.RETRY and any(
            call.spec.kind is not ToolKind.READ_ONLY for call in runnable
        ):
            # a turn cut off from here on must not run again after a restart
            await self._services.store.inbox.note_side_effects(self._turn.inbox)
        await dispatch(runnable, self._run_one, batch.slots, self._cancel, parallel=parallel)
        batch.fill_interrupted()
        return await self._finish(batch)

    async def salvage(self) -> BatchReport | None:
        """Complete a batch interrupted from outside: open slots become INTERRUPTED, every
        call is recorded once, and history gets the calls with one result each."""
        batch = self._batch
        if batch is None:
            return None
        batch.fill_interrupted()
        return await self._finish(batch)

    async def _finish(self, batch: Batch) -> BatchReport:
        outcomes: list[ToolOutcome] = []
        for index, outcome in enumerate(batch.slots.outcomes()):
            final = batch.final.get(index)
            if final is None:
                with telemetry.tool_stage("record", outcome.tool, outcome.call_id) as span:
                    final = await self._record(batch, index, outcome)
                    span.set("hatchway.tool.status", final.status.value)
            outcomes.append(final)
        messages = [
            assistant_message(batch.text, batch.slots.requests),
            *result_messages(outcomes),
        ]
        if batch.resumed is not None:
            # the parked results are in history already: the real ones come as a new message
            messages = [resumed_message(outcomes)]
        self._batch = None
        # the batch's rows and its history messages commit together: all or none
        work, self._with_batch = self._with_batch or UnitOfWork(), None
        resumed = self._resuming if batch.resumed is not None else None
        if resumed is not None:
            work.drop_parked(resumed)
        work.record_tool_calls(batch.rows)
        work.append_history(self._turn.session_key, self._turn.turn_id, messages)
        await self._services.store.commit(work)
        if resumed is not None:
            self._resumed_dropped = True
        return BatchReport(
            outcomes=tuple(outcomes), messages=tuple(messages), verdict=batch.verdict
        )

    async def _park(self, batch: Batch) -> BatchReport:
        """The batch waits on a card with the turn parked (:mod:`bot.tools.parking`): history
        gets the calls with one "waiting" result each (not again for a resumed batch, whose
        calls are there already), the row and the inbox entry become ``parked``."""
        assert batch.parked is not None and batch.ticket is not None
        record = batch.ticket.record
        assert record is not None
        filled = batch.slots.filled()
        filled.pop(record.waiting, None)
        outcomes = parked_outcomes(record.calls, record.waiting, record.since, filled)
        work = self._with_batch or UnitOfWork()
        self._batch, self._with_batch = None, None
        at = time.time()
        if batch.resumed is None:
            work = parking_work(record, outcomes, at=at, owner=self._services.replica_id, work=work)
        else:
            work.park(record.approval_id, record.inbox, at=at, owner=self._services.replica_id)
            if self._resuming is not None:
                work.drop_parked(self._resuming)
        await self._services.store.commit(work)
        if batch.resumed is not None and self._resuming is not None:
            self._resumed_dropped = True
        log.info(
            "turn_parked", approval_id=record.approval_id, tool=record.calls[record.waiting].name
        )
        messages = (
            ()
            if batch.resumed is not None
            else tuple([assistant_message(record.text, record.calls), *result_messages(outcomes)])
        )
        return BatchReport(outcomes=tuple(outcomes), messages=messages, verdict=BatchVerdict.PARKED)

    async def _waits_elsewhere(self, fingerprint: str) -> bool:
        """Whether the same call already waits on a card of a parked turn of this session
        (the duplicate guard covers parked calls)."""
        return fingerprint in await self._services.store.parked.open_fingerprints(
            self._turn.session_key, excluding=self._turn.turn_id
        )

    async def _decided(self, approval_id: str, request: ApprovalRequest) -> ApprovalDecision:
        """A resumed call's decision: its card's, for the call as it is now."""
        record = await self._services.store.approvals.get(approval_id)
        if record is None:
            return ApprovalDecision.by_runtime(RuntimeReason.RESTART, Decision.EXPIRED)
        return decision_for(record, request.fingerprint)

    async def _expired_card(
        self, batch: Batch, index: int, call_id: str, tool: str
    ) -> ToolOutcome | None:
        """A resumed call whose tool is gone: the outcome of its card if it expired (which
        names the removal, :mod:`bot.gateway.parked_config`), instead of "no tool named"."""
        card = None if batch.resumed is None else batch.resumed.get(index)
        record = None if card is None else await self._services.store.approvals.get(card)
        if record is None or record.status is not ApprovalStatus.EXPIRED:
            return None
        why = RuntimeReason.parse(record.reason)
        decision = ApprovalDecision.by_runtime(why, Decision.EXPIRED)
        return decision_outcome(decision, call_id=call_id, tool=tool)

    # -- preparation -------------------------------------------------------------------

    async def _prepare(
        self, batch: Batch, index: int, request: ToolCallRequest
    ) -> PreparedCall | ToolOutcome:
        parsed = parse_call(request, index)
        if isinstance(parsed, ToolOutcome):
            return parsed
        batch.arguments[index] = parsed.arguments
        call_id, name = parsed.call_id, parsed.name
        if not self._admission.admit():
            return not_executed(
                OutcomeReason.BATCH_FULL,
                call_id=call_id,
                tool=name,
                detail=str(self._admission.limit),
                retryable=True,
            )
        found = resolve(self._executor, call_id=call_id, name=name, arguments=parsed.arguments)
        if isinstance(found, ToolOutcome):
            return await self._expired_card(batch, parsed.index, call_id, name) or found
        entry, arguments, require = found, parsed.arguments, Assessment.ALLOW
        if self._services.hooks.before:
            hooked = await run_before_hooks(
                self._services.hooks,
                HookCall(call_id=call_id, name=name, arguments=parsed.arguments, turn=self._turn),
            )
            if hooked.cancelled:
                return not_executed(OutcomeReason.HOOK_CANCELLED, call_id=call_id, tool=name)
            if hooked.rewritten:
                found = resolve(
                    self._executor,
                    call_id=call_id,
                    name=hooked.name,
                    arguments=hooked.arguments,
                    after_hook=True,
                )
                if isinstance(found, ToolOutcome):
                    return found
                entry, arguments = found, hooked.arguments
            require = hooked.require
        arguments = with_delivery_defaults(entry.spec, arguments, self._turn.envelope)
        arguments = strip_marker(arguments)
        batch.arguments[index] = arguments
        key = (entry.spec.name, canonical_json(dict(arguments)))
        batch.keys[index] = key
        return await self._authorize(batch, parsed, entry, arguments, key, require)

    async def _authorize(
        self,
        batch: Batch,
        parsed: ParsedCall,
        entry: ToolEntry,
        arguments: Mapping[str, object],
        key: tuple[str, str],
        require: Assessment,
    ) -> PreparedCall | ToolOutcome:
        spec, call_id = entry.spec, parsed.call_id
        request = approval_request(self._context, spec, call_id=call_id, arguments=arguments)
        policy = await self._services.gate.assess(request)
        assessment = strictest(policy.assessment, require)
        if policy.assessment is not Assessment.ASK and (
            request.requires_approval or policy.assessment is Assessment.DENY
        ):
            # the policy decided (its audit row says so): the row records the same
            batch.decisions[parsed.index] = CallDecision(
                decision=(
                    Decision.POLICY_DENIED
                    if policy.assessment is Assessment.DENY
                    else Decision.POLICY_ALLOWED
                ),
                decided_by=RUNTIME,
                reason=policy.audit_reason,
                grant_id=policy.grant_id,
                fingerprint=request.fingerprint,
            )
        if assessment is Assessment.DENY:
            return policy_denial(call_id=call_id, tool=spec.name, reason=policy.text)
        duplicate = self._guard.seen(key) and not spec.dedup_exempt
        if duplicate:
            return not_executed(OutcomeReason.DUPLICATE, call_id=call_id, tool=spec.name)
        if assessment is Assessment.ALLOW:
            if policy.grant_id is not None:
                await self._say_grant(spec.name, call_id, policy.grant_id)
            return PreparedCall(
                call=parsed, entry=entry, arguments=arguments, approved_by=policy_approver(request)
            )
        batch.asked = True
        if self._guard.refused_before(key):
            log.warning("turn_aborted_repeated_prompt", tool=spec.name, call_id=call_id)
            batch.abort()
            return not_executed(OutcomeReason.REPEATED_PROMPT, call_id=call_id, tool=spec.name)
        asked = await previewed(request, spec, arguments, self._context)
        if isinstance(asked, str):  # the call cannot run as asked: nobody is asked about it
            return not_executed(
                OutcomeReason.BAD_ARGUMENTS, call_id=call_id, tool=spec.name, detail=asked
            )
        request = asked
        card = None if batch.resumed is None else batch.resumed.get(parsed.index)
        # the terminal console's prompt is the process: it cannot park (nor be parked on)
        parks = not self._turn.envelope.capabilities.terminal_prompt
        if parks and card is None and await self._waits_elsewhere(request.fingerprint):
            return not_executed(
                OutcomeReason.WAITING_FOR_APPROVAL,
                call_id=call_id,
                tool=spec.name,
                detail="the same call already waits for approval (asked earlier).",
            )
        if card is not None:
            decision: ApprovalDecision | None = await self._decided(card, request)
            # a resumed turn's progress message still shows the card's wait: close it
            await self._progress.approval_resolved(
                tool=spec.name, approved=decision is not None and decision.allowed
            )
        else:
            if parks:
                batch.ticket = BatchTicket(
                    self._services.store,
                    self._turn,
                    text=batch.text,
                    calls=batch.slots.requests,
                    index=parsed.index,
                    cards=batch.cards,
                    owner=self._services.replica_id,
                )
                request = dataclasses.replace(request, park=batch.ticket)
            await self._progress.waiting_for_approval(tool=spec.name)
            with telemetry.tool_stage("approval", spec.name, call_id) as span:
                try:
                    decision = await unless_cancelled(
                        self._services.gate.ask(request), self._cancel
                    )
                except ApprovalParked as parked:
                    batch.parked = parked
                    return not_executed(
                        OutcomeReason.WAITING_FOR_APPROVAL,
                        call_id=call_id,
                        tool=spec.name,
                        detail="this call is waiting for approval.",
                    )
                if decision is not None:
                    span.set("hatchway.approval.verdict", decision.verdict.value)
            await self._progress.approval_resolved(
                tool=spec.name, approved=decision is not None and decision.allowed
            )
        if decision is None:  # cancelled while waiting: the slot is filled as interrupted
            return interrupted(call_id=call_id, tool=spec.name, before_launch=True)
        batch.decisions[parsed.index] = CallDecision(
            decision=decision.verdict,
            decided_by=decision.decided_by,
            reason="" if decision.runtime_reason is None else decision.runtime_reason.value,
            fingerprint=request.fingerprint,
        )
        if decision.runtime_reason is RuntimeReason.SHUTDOWN:
            # the daemon is stopping: the turn ends here, and says so (bot.agent.loop)
            self._cancel.cancel(CancelReason.SHUTDOWN)
        refusal = decision_outcome(decision, call_id=call_id, tool=spec.name)
        if refusal is not None:
            self._guard.remember_refusal(key)
            return refusal
        return PreparedCall(
            call=parsed,
            entry=entry,
            arguments=arguments,
            approved_by=decision.decided_by,
            binding=request.binding,
        )

    async def _say_grant(self, tool: str, call_id: str, grant_id: int) -> None:
        """The progress line of a call a grant lets run without a card."""
        grant = await self._services.store.grants.get(grant_id)
        if grant is not None:
            line = grant_line(
                tool, grant_id=grant.id, granted_by=grant.granted_by, expires_at=grant.expires_at
            )
            await self._progress.ran_under_grant(call_id=call_id, line=line)

    # -- execution ---------------------------------------------------------------------

    async def _run_one(self, call: PreparedCall) -> ToolOutcome:
        spec = call.spec
        # the turn gate is entered first, before any await: tasks start in model order
        async with self._turn_gate.hold(exclusive=not spec.concurrency_safe):
            lease = self._services.scheduler.enqueue(self._turn.session_key, spec.kind)
            if lease is None:
                log.warning("tool_scheduler_full", tool=spec.name)
                return not_executed(
                    OutcomeReason.BUSY, call_id=call.call_id, tool=spec.name, retryable=True
                )
            async with lease:
                paths = path_arguments(spec.path_arguments, call.arguments)
                if not paths:
                    return await self._launch(call)
                async with self._services.locks.hold(paths, base=self._context.workspace):
                    changed = await self._changed_since_approval(call)
                    if changed is not None:
                        return changed
                    return await self._launch(call)

    async def _changed_since_approval(self, call: PreparedCall) -> ToolOutcome | None:
        """Under the call's path lock: None when what the approval bound the call to (a
        file's content) is still so, else the call's refusal (``file changed``)."""
        spec = call.spec
        if not call.binding or spec.approval_binding is None:
            return None
        now = await spec.approval_binding(call.arguments, self._context)
        if now == call.binding:
            return None
        log.info("tool_call_binding_changed", tool=spec.name, call_id=call.call_id)
        assert self._batch is not None
        refused = await binding_refusal(self._services.store, self._context, call)
        self._batch.decisions[call.call.index] = refused
        return not_executed(OutcomeReason.FILE_CHANGED, call_id=call.call_id, tool=spec.name)

    async def _launch(self, call: PreparedCall) -> ToolOutcome:
        assert self._batch is not None
        spec = call.spec
        self._batch.slots.mark_launched(call.call.index)
        self._services.observer.tool_started(
            started_event(self._turn, call_id=call.call_id, tool=spec.name)
        )
        await self._progress.tool_started(
            call_id=call.call_id, tool=spec.name, hint=progress_hint(call.arguments)
        )
        timeout_s = self._services.settings.tool_timeout_s
        with telemetry.tool_stage("execute", spec.name, call.call_id) as span:
            outcome = await execute(
                Invocation.of(call, self._context, default_timeout_s=timeout_s),
                cancel=self._cancel,
                retry=self._services.retry,
                clock=self._clock,
            )
            span.set("hatchway.tool.status", outcome.status.value)
        crash_point("after_tool")
        await self._progress.tool_finished(
            call_id=call.call_id,
            tool=spec.name,
            ok=outcome.ok,
            duration_s=outcome.duration_s,
            reason=progress_reason(outcome),
        )
        return outcome

    # -- recording ---------------------------------------------------------------------

    async def _record(self, batch: Batch, index: int, outcome: ToolOutcome) -> ToolOutcome:
        services, turn = self._services, self._turn
        batch.final[index] = outcome  # recorded at most once, even if interrupted below
        arguments = batch.arguments.get(index)
        services.observer.tool_finished(finished_event(turn, outcome))
        if services.hooks.after:
            call = HookCall(
                call_id=outcome.call_id, name=outcome.tool, arguments=arguments or {}, turn=turn
            )
            await run_after_hooks(services.hooks, call, outcome)
        receipt = None
        if services.signer is not None and outcome.returned and arguments is not None:
            receipt = services.signer.sign(outcome.tool, arguments, outcome.observation)
        bounded = bound_text(outcome.observation, services.settings.max_tool_result_chars)
        prepared = batch.prepared.get(index)
        batch.rows.append(
            tool_call_row(
                turn,
                outcome,
                arguments=arguments,
                raw_arguments=batch.slots.requests[index].arguments,
                max_observation_chars=services.settings.max_tool_result_chars,
                receipt=receipt,
                approved_by=None if prepared is None else prepared.approved_by,
                decision=batch.decisions.get(index),
            )
        )
        final = outcome if bounded is outcome.observation else outcome.with_observation(bounded)
        key = batch.keys.get(index)
        if outcome.returned and key is not None:
            repetition, count = self._loops.observe(key, outcome.observation)
            if repetition is Repetition.STOP:
                log.warning("turn_loop_detected", tool=outcome.tool, repeats=count)
                batch.stop_for_loop()
            elif repetition is Repetition.WARN:
                final = final.with_observation(final.observation + LOOP_WARNING.format(count=count))
        if outcome.ok and key is not None and prepared is not None and prepared.spec.completes_run:
            batch.complete_run()
        batch.final[index] = final
        return final
