"""Property: whatever the model replies — garbage included — history stays well-formed:
every assistant tool-call message is followed by exactly one result per call id."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.agent.loop import run_turn
from bot.agent.turn import AgentBundle, TurnState
from bot.config import AgentConfig
from bot.errors import ProviderError
from bot.providers.base import ProviderReply, ToolCallRequest
from bot.store import Store
from bot.tools.services import PipelineServices
from bot.tools.spec import ToolContext, ToolResult
from bot.turn import TurnIdentity
from tests.fakes.scripted_provider import ScriptedProvider, Step
from tests.tools.gates import DENIED, PolicyGate
from tests.tools.harness import Recorder, make_envelope, spec
from tests.tools.transcript_check import well_formed


async def _fails(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
    raise RuntimeError("tool broke")


TOOLS = [
    spec("echo", Recorder()),
    spec("fail", _fails),
    spec("done", Recorder(), completes_run=True),
    spec("risky", Recorder(), requires_approval=True),
]

names = st.sampled_from(["echo", "fail", "done", "risky", "nope", "", "echo"])
arguments = st.one_of(
    st.just("{}"),
    st.just('{"a": 1}'),
    st.just("[1, 2]"),
    st.just(""),
    st.text(max_size=30),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3).map(
        lambda d: __import__("json").dumps(d)
    ),
)
ids = st.one_of(st.just(""), st.just("dup"), st.uuids().map(str))
calls = st.builds(lambda i, n, a: ToolCallRequest(id=i, name=n, arguments=a), ids, names, arguments)
replies: st.SearchStrategy[Step] = st.one_of(
    st.builds(
        lambda t, c: ProviderReply(text=t, tool_calls=tuple(c)),
        st.text(max_size=20),
        st.lists(calls, max_size=4),
    ),
    st.just(ProviderError("upstream 500")),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(script=st.lists(replies, min_size=1, max_size=6), cap=st.integers(1, 4))
async def test_any_reply_sequence_leaves_history_well_formed(script: list[Step], cap: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with await Store.open(Path(folder) / "db.sqlite") as store:
            bundle = AgentBundle(
                provider=ScriptedProvider(script),
                services=PipelineServices(
                    settings=AgentConfig(max_tool_iterations=cap),
                    store=store,
                    gate=PolicyGate(decisions={"risky": DENIED}),
                ),
                tools=TOOLS,
            )
            turn = TurnIdentity(turn_id="t", session_key="s", envelope=make_envelope("go"))
            state = TurnState(turn=turn, history=[])
            result = await run_turn(bundle, state)
            assert result.text or result.status.value == "completed"
            stored = await store.history.load("s")
            assert well_formed(stored), stored
            assert stored == state.history
            rows = await store.tool_calls.for_turn("t")
            answered = [m.tool_call_id for m in stored if m.role == "tool"]
            assert sorted(r.call_id for r in rows) == sorted(i for i in answered if i)
