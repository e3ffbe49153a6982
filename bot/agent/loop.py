"""The turn loop: provider calls and tool batches until the turn ends.

A turn ends on final text, on a ``completes_run`` tool's success, on cancel, on the loop
detector, on a repeated refused prompt, on a usage budget used up (:mod:`bot.usage.meter`:
before the first model call, or before the next one once a step used it up), or at
``max_tool_iterations`` — where the model is asked once more with tools disabled for a final
answer. The whole turn runs within
``turn_timeout_s``; when the budget expires mid-batch, the batch is salvaged so that
history stays well-formed (every assistant tool-call message followed by exactly one result
per call id). Provider failures and budget expiry become a :class:`TurnResult`, never an
exception.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import replace

import structlog

from bot import telemetry
from bot.agent.context_window import fit_history, with_context
from bot.agent.turn import AgentBundle, TurnResult, TurnState, TurnStatus
from bot.crashpoints import crash_point
from bot.envelope import target_to_json
from bot.errors import ProviderError
from bot.providers.base import ChatMessage, CompletionRequest, ProviderReply, ToolDefinition
from bot.store import ReplyKind, UnitOfWork
from bot.store.parked import UnreadableParkRecord
from bot.tools.batch import BatchVerdict
from bot.tools.cancellation import unless_cancelled
from bot.tools.pipeline import ToolPipeline
from bot.tools.registry import ToolScope
from bot.tools.spec import ToolContext
from bot.turn import CancelReason, parks_before

log = structlog.get_logger(__name__)

BUDGET_MESSAGE = "⌛ Sorry, this took too long and was stopped. Please try again."
PROVIDER_MESSAGE = (
    "⚠️ The language model is not answering right now ({reason}). Please try again later."
)
CANCELLED_MESSAGE = "⏹ Stopped."
#: What a provider says when the answer stopped at the reply's token limit (``max_tokens``):
#: ``length`` (Chat Completions, llama.cpp), ``max_tokens`` (Anthropic).
CUT_REASONS = frozenset({"length", "max_tokens"})
CUT_MESSAGE = (
    "✂️ (cut: the answer reached the model's reply limit, max_tokens; ask to go on, or raise "
    "the limit)"
)
SHUTDOWN_MESSAGE = (
    "⏹ The bot is shutting down; this request was interrupted and nothing more will run. "
    "Please ask again once it is back."
)
EMPTY_MESSAGE = "🤷 The model returned an empty answer. Please rephrase or try again."
LOOP_MESSAGE = "⚠️ I stopped because I kept repeating the same step without progress."
ABORTED_MESSAGE = (
    "⚠️ I stopped: I tried an action again that needs an approval that was already refused."
)
AGENT_REMOVED_MESSAGE = (
    "⚠️ This request waited for an approval, and the agent that was handling it has been "
    "removed from the configuration since; nothing more of it will run. Please ask again."
)
UNREADABLE_MESSAGE = (
    "⚠️ This request waited for an approval, and what was kept of it could not be read "
    "back; nothing more of it will run. Please ask again."
)
CAP_MESSAGE = "⚠️ I reached the limit of {count} tool steps for one message without an answer."


async def run_turn(bundle: AgentBundle, state: TurnState) -> TurnResult:
    """Run one turn within the configured wall-clock budget.

    Appends the user message, every tool batch and the final answer to the store (and to
    ``state.history``); the user message commits together with ``state.inbox`` becoming
    ``processing`` (see :func:`_begin`). Raises :class:`bot.errors.RegistryError` before
    any provider call when an offered tool has no handler; never raises for provider
    failures, budget expiry or tool failures. A turn one of whose usage budgets is used up
    makes no model call and records nothing (its inbox entry stays ``received`` until the
    gateway marks it); each model call's usage is recorded with the turn's next record.
    """
    settings = bundle.services.settings
    envelope = state.turn.envelope
    pipeline, definitions = _pipeline(bundle, state)
    if bundle.usage is not None:
        state.usage = bundle.usage.turn(
            state.turn, agent=bundle.name, provider=bundle.provider.name
        )
        refused = await state.usage.refusal() if state.usage.budgeted else None
        if refused is not None:  # a budget is used up: no model call, no record of the turn
            return TurnResult(status=TurnStatus.BUDGET_SPENT, text=refused)
    await _begin(bundle, state, state.user or ChatMessage(role="user", content=envelope.text))
    try:
        async with asyncio.timeout(settings.turn_timeout_s) as budget:
            with parks_before(budget.when(), settings.turn_timeout_s):
                return await _iterate(bundle, state, pipeline, definitions)
    except TimeoutError:
        if not budget.expired():
            raise
        log.warning("turn_budget_exceeded", budget_s=settings.turn_timeout_s)
        await _salvage(bundle, state, pipeline)
        return TurnResult(status=TurnStatus.BUDGET_EXCEEDED, text=BUDGET_MESSAGE)
    except asyncio.CancelledError:
        await _salvage(bundle, state, pipeline)
        raise
    finally:
        if bundle.dynamic is not None:
            bundle.dynamic.finish_turn(state.turn.turn_id)
        if state.usage is not None:
            state.usage.finish()


async def agent_removed(bundle: AgentBundle, approval_id: str, agent: str) -> TurnResult:
    """The parked turn on ``approval_id`` belonged to ``agent``, which a reload removed:
    nothing of it runs (its card expired, reason ``agent removed by reload``, or was decided
    before the reload); the row goes and the requester is told
    (:data:`AGENT_REMOVED_MESSAGE`)."""
    log.warning("parked_turn_agent_removed", approval_id=approval_id, agent=agent)
    await bundle.services.store.parked.drop(approval_id)
    return TurnResult(status=TurnStatus.RESUME_FAILED, text=AGENT_REMOVED_MESSAGE)


async def resume_turn(bundle: AgentBundle, state: TurnState, approval_id: str) -> TurnResult:
    """Continue the turn parked on the card ``approval_id`` once it is decided
    (:mod:`bot.tools.parking`): a fresh turn budget; the entry ``processing`` again with this
    run; the batch run under the configuration in force now (an approved call runs even
    when a usage budget was spent meanwhile; the answer is then the budget notice), its
    outcomes appended as a new message, and the model called again. The parked row goes
    with the batch's outcomes, in their transaction (or, when they were never recorded, once
    the run is over). A row that cannot be read fails this turn alone: one log line,
    and :data:`UNREADABLE_MESSAGE` for the requester."""
    settings, store = bundle.services.settings, bundle.services.store
    try:
        record = await store.parked.get(approval_id)
    except UnreadableParkRecord as exc:
        log.error("parked_turn_unreadable", approval_id=approval_id, error=str(exc))
        await store.parked.drop(approval_id)
        return TurnResult(status=TurnStatus.RESUME_FAILED, text=UNREADABLE_MESSAGE)
    if record is None:  # forgotten meanwhile: nothing to continue
        return TurnResult(status=TurnStatus.RESUME_FAILED, text="")
    pipeline, definitions = _pipeline(bundle, state)
    if bundle.usage is not None:
        state.usage = bundle.usage.turn(
            state.turn, agent=bundle.name, provider=bundle.provider.name
        )
    turn = state.turn
    work = UnitOfWork()
    if state.inbox is not None:
        work.start_inbox(state.inbox, turn.turn_id)
    state.history = await store.commit(work, then=store.history.loading(turn.session_key))
    log.info(
        "turn_resuming",
        approval_id=approval_id,
        parked_turn=record.turn_id,
        cut_off=record.cut_off,
    )
    try:
        async with asyncio.timeout(settings.turn_timeout_s) as budget:
            with parks_before(budget.when(), settings.turn_timeout_s):
                report = await pipeline.resume_batch(
                    record.text,
                    record.calls,
                    record.asked,
                    parked=approval_id,
                    cut_off=record.cut_off,
                )
                _history(state).extend(report.messages)
                if report.verdict is BatchVerdict.PARKED:
                    return TurnResult(status=TurnStatus.PARKED, text="")
                stopped = _stopping(report.verdict, "")
                if stopped is not None:
                    return stopped
                if state.cancel.cancelled:
                    return _cancelled(state)
                return await _iterate(bundle, state, pipeline, definitions, iterations=1)
    except TimeoutError:
        if not budget.expired():
            raise
        log.warning("turn_budget_exceeded", budget_s=settings.turn_timeout_s)
        await _salvage(bundle, state, pipeline)
        return TurnResult(status=TurnStatus.BUDGET_EXCEEDED, text=BUDGET_MESSAGE)
    except asyncio.CancelledError:
        await _salvage(bundle, state, pipeline)
        raise
    finally:
        if not pipeline.resumed_dropped:
            # the batch's outcomes were never recorded (an error the turn does not salvage):
            # the row goes all the same, as its entry ends. Otherwise it went with them
            await store.parked.drop(approval_id)
        if bundle.dynamic is not None:
            bundle.dynamic.finish_turn(state.turn.turn_id)
        if state.usage is not None:
            state.usage.finish()


def _stopping(verdict: BatchVerdict, text: str) -> TurnResult | None:
    """The result of a batch whose verdict ends the turn; None when the turn goes on."""
    if verdict is BatchVerdict.ABORTED:
        return TurnResult(status=TurnStatus.ABORTED, text=ABORTED_MESSAGE)
    if verdict is BatchVerdict.LOOP_STOPPED:
        return TurnResult(status=TurnStatus.LOOP_STOPPED, text=LOOP_MESSAGE)
    if verdict is BatchVerdict.COMPLETED_RUN:
        return TurnResult(status=TurnStatus.COMPLETED, text=text)
    if verdict is BatchVerdict.PARKED:
        return TurnResult(status=TurnStatus.PARKED, text="")
    return None


def _pipeline(
    bundle: AgentBundle, state: TurnState
) -> tuple[ToolPipeline, Sequence[ToolDefinition]]:
    """The turn's tool pipeline and the definitions of the tools its scope offers."""
    settings = bundle.services.settings
    envelope = state.turn.envelope
    scope = ToolScope.for_turn(
        envelope=envelope,
        excluded=(*settings.excluded_tools, *state.excluded_tools),
        restrict_to=state.restrict_to,
        hide_unapprovable_tools=settings.hide_unapprovable_tools,
    )
    if bundle.registry is not None:
        registry = bundle.registry.scoped(scope)
    else:
        dynamic = bundle.dynamic.specs() if bundle.dynamic is not None else ()
        registry = bundle.assembled.registry([*bundle.tools, *dynamic]).scoped(scope)
    executor = registry.executor()
    pipeline = ToolPipeline(
        services=bundle.services,
        executor=executor,
        context=ToolContext(turn=state.turn, workspace=bundle.workspace),
        progress=state.progress,
        cancel=state.cancel,
    )
    return pipeline, registry.definitions()


async def _iterate(
    bundle: AgentBundle,
    state: TurnState,
    pipeline: ToolPipeline,
    definitions: Sequence[ToolDefinition],
    *,
    iterations: int = 0,
) -> TurnResult:
    settings = bundle.services.settings
    cap = settings.max_tool_iterations
    said: list[str] = []  # the text that came with tool calls (a budget may end the turn)
    while True:
        at_cap = iterations >= cap
        if iterations and state.usage is not None and state.usage.budgeted:
            # a step that used up a budget was finished; no further model call
            notice = await state.usage.cut_short()
            if notice is not None:
                return TurnResult(status=TurnStatus.BUDGET_SPENT, text="\n\n".join([*said, notice]))
        fitted = fit_history(_history(state), settings.history_max_tokens)
        request = CompletionRequest(
            system=settings.system_prompt,
            messages=with_context(
                fitted, state.context, settings.history_max_tokens, viewing=state.viewing
            ),
            tools=() if at_cap else _offered(bundle, state, definitions),
        )
        started = time.perf_counter()
        try:
            with telemetry.model_call(bundle.provider.name) as span:
                reply = await unless_cancelled(
                    bundle.provider.complete(
                        request,
                        stream=state.progress.stream_text if state.progress.wants_stream else None,
                    ),
                    state.cancel,
                )
                span.answered(reply)
        except ProviderError as exc:
            log.warning("provider_failed", error=str(exc), retryable=exc.retryable)
            return TurnResult(
                status=TurnStatus.PROVIDER_FAILED, text=PROVIDER_MESSAGE.format(reason=str(exc))
            )
        if reply is None:
            return _cancelled(state)
        if state.usage is not None:
            state.usage.add(request, reply, time.perf_counter() - started)
        crash_point("after_model_call")
        if not reply.tool_calls or at_cap:
            return await _answer(bundle, state, reply, at_cap=at_cap, cap=cap)
        iterations += 1
        report = await pipeline.run_batch(
            reply.text, reply.tool_calls, _with_usage(state, UnitOfWork())
        )
        _usage_committed(state)
        _history(state).extend(report.messages)
        if reply.text.strip():
            said.append(reply.text.strip())
        stopped = _stopping(report.verdict, reply.text.strip())
        if stopped is not None:
            return stopped
        if state.cancel.cancelled:
            return _cancelled(state)


def _cancelled(state: TurnState) -> TurnResult:
    """A cancelled turn's result: stopped by ``/stop``, or interrupted by a shutdown."""
    if state.cancel.reason is CancelReason.SHUTDOWN:
        return TurnResult(status=TurnStatus.CANCELLED, text=SHUTDOWN_MESSAGE)
    return TurnResult(status=TurnStatus.CANCELLED, text=CANCELLED_MESSAGE)


def _offered(
    bundle: AgentBundle, state: TurnState, definitions: Sequence[ToolDefinition]
) -> Sequence[ToolDefinition]:
    """What the model is shown this iteration (deferred tools appear once activated)."""
    if bundle.dynamic is None:
        return definitions
    return bundle.dynamic.offered(
        turn_id=state.turn.turn_id, text=state.turn.envelope.text, definitions=definitions
    )


async def _answer(
    bundle: AgentBundle, state: TurnState, reply: ProviderReply, *, at_cap: bool, cap: int
) -> TurnResult:
    """The final answer; at the cap, tool calls the model still wrote are ignored."""
    text = reply.text.strip()
    if at_cap:
        log.info("turn_iteration_cap", cap=cap, ignored_calls=len(reply.tool_calls))
        result = TurnResult(
            status=TurnStatus.ITERATION_CAP, text=text or CAP_MESSAGE.format(count=cap)
        )
    elif not text:
        log.warning("provider_empty_answer", finish_reason=reply.finish_reason)
        result = TurnResult(status=TurnStatus.COMPLETED, text=EMPTY_MESSAGE)
    elif reply.finish_reason in CUT_REASONS:
        # said to the person only: history keeps the answer as the model wrote it
        result = TurnResult(status=TurnStatus.COMPLETED, text=f"{text}\n\n{CUT_MESSAGE}")
    else:
        result = TurnResult(status=TurnStatus.COMPLETED, text=text)
    if text:
        answer = [ChatMessage(role="assistant", content=reply.text)]
        await _remember(bundle, state, answer, reply_text=result.text)
        # the answer is in history; its reply recorded with it where the channel can check
        # a delivery (recovery looks for it), else not yet recorded (recovery sends it)
        crash_point("after_answer")
    return result


async def _begin(bundle: AgentBundle, state: TurnState, user: ChatMessage) -> None:
    """The turn's first record, one transaction in one trip to SQLite: the inbox entry
    becomes ``processing``, the user message is appended, and (when not given) the
    session's history is read, ending with that message. After a crash an entry is
    ``processing`` exactly when its turn had begun (recovery tells the sender it was
    interrupted) and still ``received`` when nothing of it was recorded (recovery runs it
    again)."""
    store, turn = bundle.services.store, state.turn
    work = UnitOfWork()
    if state.inbox is not None:
        work.start_inbox(state.inbox, turn.turn_id)
    work.append_history(turn.session_key, turn.turn_id, [user])
    if state.history is None:
        state.history = await store.commit(work, then=store.history.loading(turn.session_key))
        if user.images and state.history and state.history[-1] == replace(user, images=()):
            # the images go to the model with this turn's message only: history has its text
            state.history[-1] = user
        return
    await store.commit(work)
    state.history.append(user)


def _history(state: TurnState) -> list[ChatMessage]:
    """``state.history``, known from :func:`_begin` on."""
    if state.history is None:
        raise RuntimeError("the turn's history is used before the turn began")
    return state.history


async def _remember(
    bundle: AgentBundle, state: TurnState, messages: list[ChatMessage], *, reply_text: str
) -> None:
    """The answer joins history, with the usage of the calls not yet recorded and, when
    ``state.record_answer``, the outbox ledger's row of its reply ``reply_text`` (one trip;
    the gateway then sends it without recording it again: :class:`TurnState`)."""
    turn = state.turn
    work = UnitOfWork().append_history(turn.session_key, turn.turn_id, messages)
    envelope = turn.envelope
    recorded = state.record_answer and state.inbox is not None and envelope.announce
    if state.record_answer and state.inbox is not None and envelope.announce:
        work.record_reply(
            state.inbox,
            ReplyKind.ANSWER,
            reply_key=turn.reply_key,
            target=target_to_json(envelope.reply_target),
            body=reply_text,
        )
    await bundle.services.store.commit(_with_usage(state, work))
    if recorded:
        state.answer_recorded = reply_text
    _usage_committed(state)
    _history(state).extend(messages)


def _with_usage(state: TurnState, work: UnitOfWork) -> UnitOfWork:
    """``work`` with the turn's model calls not yet recorded (when the agent keeps usage)."""
    return work if state.usage is None else state.usage.record(work)


def _usage_committed(state: TurnState) -> None:
    if state.usage is not None:
        state.usage.committed()


async def _salvage(bundle: AgentBundle, state: TurnState, pipeline: ToolPipeline) -> None:
    """Complete an interrupted batch in history (outside the expired budget)."""
    report = await pipeline.salvage()
    if report is not None:
        _usage_committed(state)  # the salvaged batch carried them
        _history(state).extend(report.messages)
