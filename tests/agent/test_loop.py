"""Loop control (pipeline.md §8) through ``run_turn`` with a scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import pytest

from bot.agent.loop import run_turn
from bot.agent.turn import AgentBundle, TurnState, TurnStatus
from bot.approval.gate import ApprovalGate
from bot.config import AgentConfig
from bot.errors import ProviderError, RegistryError
from bot.providers.base import CompletionRequest, ProviderReply, ToolDefinition
from bot.store import Store
from bot.tools.outcome import INTERRUPTED_BEFORE_RESULT
from bot.tools.services import PipelineServices
from bot.tools.spec import ToolContext, ToolResult, ToolSpec
from bot.turn import TurnIdentity
from tests.fakes.scripted_provider import ScriptedProvider, Step, call, reply
from tests.tools.gates import PolicyGate
from tests.tools.harness import Recorder, RecordingProgress, make_envelope, spec
from tests.tools.transcript_check import well_formed


def bundle_for(
    store: Store,
    script: Sequence[Step],
    tools: Sequence[ToolSpec] = (),
    *,
    settings: AgentConfig | None = None,
    gate: ApprovalGate | None = None,
) -> tuple[AgentBundle, ScriptedProvider]:
    provider = ScriptedProvider(script)
    bundle = AgentBundle(
        provider=provider,
        services=PipelineServices(
            settings=settings or AgentConfig(), store=store, gate=gate or PolicyGate()
        ),
        tools=tools,
    )
    return bundle, provider


def state_for(text: str = "hi", **kwargs: object) -> TurnState:
    return TurnState(
        turn=TurnIdentity(
            turn_id="turn-1", session_key="console.main:c1", envelope=make_envelope(text)
        ),
        history=[],
        **kwargs,  # type: ignore[arg-type]
    )


async def test_final_text_completes_the_turn(store: Store) -> None:
    bundle, _ = bundle_for(store, [reply("hello there")])
    state = state_for()
    result = await run_turn(bundle, state)
    assert result.status is TurnStatus.COMPLETED and result.text == "hello there"
    history = await store.history.load("console.main:c1")
    assert [(m.role, m.content) for m in history] == [("user", "hi"), ("assistant", "hello there")]
    assert state.history == history


async def test_tool_results_reach_the_next_request(store: Store) -> None:
    echo = Recorder()
    bundle, provider = bundle_for(
        store, [reply("checking", call("echo", {"q": 1})), reply("done")], [spec("echo", echo)]
    )
    result = await run_turn(bundle, state_for())
    assert result.text == "done"
    first, second = provider.requests
    assert [t.name for t in first.tools] == ["echo"]
    assert [m.role for m in second.messages] == ["user", "assistant", "tool"]
    assert second.messages[-1].content == "ok"
    assert well_formed(await store.history.load("console.main:c1"))


async def test_a_completes_run_tool_ends_the_turn(store: Store) -> None:
    bundle, provider = bundle_for(
        store, [reply("sending", call("send"))], [spec("send", Recorder(), completes_run=True)]
    )
    result = await run_turn(bundle, state_for())
    assert result.status is TurnStatus.COMPLETED
    assert len(provider.requests) == 1


async def test_iteration_cap_asks_once_more_without_tools(store: Store) -> None:
    script: list[Step] = [reply("", call("echo", {"n": i})) for i in range(3)]
    script.append(reply("final answer", call("echo", {"n": 99})))
    echo = Recorder()
    bundle, provider = bundle_for(
        store, script, [spec("echo", echo)], settings=AgentConfig(max_tool_iterations=3)
    )
    result = await run_turn(bundle, state_for())
    assert result.status is TurnStatus.ITERATION_CAP and result.text == "final answer"
    assert [len(r.tools) for r in provider.requests] == [1, 1, 1, 0]
    assert len(echo.calls) == 3  # the call written at the cap is ignored
    assert well_formed(await store.history.load("console.main:c1"))


async def test_loop_detector_stops_the_turn(store: Store) -> None:
    script = [reply("", call("echo", {"q": 1})) for _ in range(6)]
    bundle, provider = bundle_for(store, script, [spec("echo", Recorder())])
    result = await run_turn(bundle, state_for())
    assert result.status is TurnStatus.LOOP_STOPPED
    assert len(provider.requests) == 5
    warned = [m for m in provider.requests[-1].messages if "runtime note" in m.content]
    assert len(warned) == 2  # the model was warned at the 3rd and 4th repeat


async def test_repeated_refused_prompt_aborts(store: Store) -> None:
    from tests.tools.gates import DENIED

    script = [reply("", call("rm", {"p": "/"})), reply("", call("rm", {"p": "/"}))]
    gate = PolicyGate(decisions={"rm": DENIED})
    bundle, _ = bundle_for(
        store, script, [spec("rm", Recorder(), requires_approval=True)], gate=gate
    )
    result = await run_turn(bundle, state_for())
    assert result.status is TurnStatus.ABORTED
    assert len(gate.asked) == 1


async def test_cancel_before_the_provider_answers(store: Store) -> None:
    state = state_for()
    asked = asyncio.Event()

    async def never(request: CompletionRequest) -> ProviderReply:
        asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    bundle, _ = bundle_for(store, [never])
    task = asyncio.create_task(run_turn(bundle, state))
    await asked.wait()
    state.cancel.cancel()
    result = await task
    assert result.status is TurnStatus.CANCELLED


async def test_cancel_during_tools_stops_after_the_batch(store: Store) -> None:
    state = state_for()

    async def stop(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        state.cancel.cancel()
        return "stopping"

    bundle, provider = bundle_for(
        store,
        [reply("", call("stop"), call("echo")), reply("unused")],
        [spec("stop", stop), spec("echo", Recorder())],
        settings=AgentConfig(parallel_tools=False),
    )
    result = await run_turn(bundle, state)
    assert result.status is TurnStatus.CANCELLED
    assert len(provider.requests) == 1
    assert well_formed(await store.history.load("console.main:c1"))


async def test_turn_budget_keeps_history_well_formed(store: Store) -> None:
    started = asyncio.Event()

    async def hangs(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        started.set()
        await asyncio.Event().wait()
        return "never"

    async def quick(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        return "quick"

    bundle, _ = bundle_for(
        store,
        [reply("", call("quick"), call("hangs"))],
        [spec("quick", quick, concurrency_safe=True), spec("hangs", hangs, concurrency_safe=True)],
        settings=AgentConfig(turn_timeout_s=0.3),
    )
    result = await run_turn(bundle, state_for())
    assert started.is_set()
    assert result.status is TurnStatus.BUDGET_EXCEEDED
    history = await store.history.load("console.main:c1")
    assert well_formed(history)
    assert [m.content for m in history if m.role == "tool"] == ["quick", INTERRUPTED_BEFORE_RESULT]
    rows = await store.tool_calls.for_turn("turn-1")
    assert [r.status for r in rows] == ["executed", "interrupted"]


async def test_provider_failure_is_a_clear_message(store: Store) -> None:
    bundle, _ = bundle_for(store, [ProviderError("HTTP 503 from upstream")])
    result = await run_turn(bundle, state_for())
    assert result.status is TurnStatus.PROVIDER_FAILED
    assert "HTTP 503" in result.text and "try again" in result.text


async def test_stream_is_passed_when_the_sink_wants_it(store: Store) -> None:
    for wants in (True, False):
        progress = RecordingProgress(wants_stream=wants)
        bundle, provider = bundle_for(store, [reply("streamed words")])
        await run_turn(bundle, state_for(progress=progress))
        assert provider.calls[0].streamed is wants
        assert ("".join(progress.streamed).strip() == "streamed words") is wants


async def test_a_missing_handler_fails_before_any_provider_call(store: Store) -> None:
    bundle, provider = bundle_for(store, [reply("x")], [spec("remote", None)])
    with pytest.raises(RegistryError):
        await run_turn(bundle, state_for())
    assert provider.requests == []


async def test_turn_exclusions_and_restrictions_shape_the_offer(store: Store) -> None:
    tools = [spec(n, Recorder()) for n in ("a", "b", "c")]
    bundle, provider = bundle_for(
        store, [reply("ok")], tools, settings=AgentConfig(excluded_tools=["a"])
    )
    await run_turn(bundle, state_for(excluded_tools=("b",)))
    assert [t.name for t in provider.requests[0].tools] == ["c"]
    bundle, provider = bundle_for(store, [reply("ok")], tools)
    await run_turn(bundle, state_for(restrict_to=frozenset({"b"})))
    assert [t.name for t in provider.requests[0].tools] == ["b"]


class RelistedTools:
    """Dynamic tools the test changes between turns, as an MCP server relisting its tools."""

    def __init__(self) -> None:
        self.tools: list[ToolSpec] = []

    def specs(self) -> Sequence[ToolSpec]:
        return self.tools

    def offered(
        self, *, turn_id: str, text: str, definitions: Sequence[ToolDefinition]
    ) -> Sequence[ToolDefinition]:
        return definitions

    def finish_turn(self, turn_id: str) -> None:
        return None


async def test_dynamic_tools_are_offered_as_they_are_at_each_turn(store: Store) -> None:
    dynamic, late = RelistedTools(), Recorder()
    provider = ScriptedProvider([reply("one"), reply("", call("late")), reply("two")])
    bundle = AgentBundle(
        provider=provider,
        services=PipelineServices(settings=AgentConfig(), store=store, gate=PolicyGate()),
        tools=[spec("static", Recorder())],
        dynamic=dynamic,
    )
    await run_turn(bundle, state_for())
    dynamic.tools = [spec("late", late)]
    assert (await run_turn(bundle, state_for())).text == "two"
    offers = [[t.name for t in request.tools] for request in provider.requests]
    assert offers == [["static"], ["static", "late"], ["static", "late"]]
    assert late.calls == [{}]


async def test_history_window_seam_is_used(store: Store) -> None:
    """The request is built through fit_history: old units drop out under a tiny budget."""
    bundle, provider = bundle_for(
        store, [reply("ok")], settings=AgentConfig(history_max_tokens=500)
    )
    from bot.providers.base import ChatMessage

    old = [ChatMessage(role="user", content="x" * 4000), ChatMessage(role="assistant", content="y")]
    state = TurnState(
        turn=TurnIdentity(turn_id="t", session_key="s", envelope=make_envelope("new")),
        history=list(old),
    )
    await run_turn(bundle, state)
    assert [m.content for m in provider.requests[0].messages] == ["y", "new"]
