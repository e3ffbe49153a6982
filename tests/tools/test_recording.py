"""Recording (pipeline.md §7): events, after-hooks, rows, receipts, bounding, loop
detection, history — and that secrets never reach any of them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.approval.gate import ApprovalDecision, Assessment
from bot.config import AgentConfig
from bot.errors import ConfigError
from bot.store import Store
from bot.store.audit import Decision
from bot.tools.batch import BatchVerdict
from bot.tools.call_record import MAX_RAW_ARGUMENT_CHARS
from bot.tools.hooks import HookCall, ToolHooks
from bot.tools.outcome import ToolOutcome
from bot.tools.receipt import ReceiptSigner, ReceiptVerdict
from bot.tools.repetition import LoopDetector, Repetition
from bot.tools.spec import ToolContext, ToolResult
from bot.tools.truncation import bound_text
from tests.fakes.scripted_provider import call
from tests.tools.gates import APPROVED, DENIED, PolicyGate
from tests.tools.harness import Harness, Recorder, RecordingObserver, spec
from tests.tools.transcript_check import well_formed

SECRET = "sk-abcdefghijklmnopqrstuvwxyz123456"
KEY = b"0123456789abcdef0123456789abcdef"


async def test_secrets_never_reach_events_or_rows(store: Store) -> None:
    async def leaky(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        return f"the key is {SECRET}"

    harness = Harness(store, [spec("leaky", leaky)])
    (outcome,) = (await harness.run(call("leaky", {"api_key": "hunter22", "q": SECRET}))).outcomes
    assert SECRET in outcome.observation  # the model sees the real result
    (event,) = harness.observer.finished
    assert SECRET not in event.result
    (row,) = await store.tool_calls.for_turn(harness.turn_id)
    assert SECRET not in row.observation
    assert SECRET not in row.arguments and "hunter22" not in row.arguments


BY_OPERATOR = ApprovalDecision(verdict=Decision.APPROVED, decided_by="operator:ops")
ALWAYS = ApprovalDecision(verdict=Decision.ALWAYS, decided_by="bob")


@pytest.mark.parametrize(
    ("side_effects", "policy", "decision", "approved_by"),
    [
        (True, Assessment.ASK, APPROVED, "alice"),  # a person said yes
        (True, Assessment.ASK, ALWAYS, "bob"),  # ... and created a grant
        (True, Assessment.ASK, BY_OPERATOR, "operator:ops"),  # decided from the host
        (True, Assessment.ALLOW, APPROVED, "runtime"),  # policy let it run (grant, auto_approve)
        (False, Assessment.ALLOW, APPROVED, None),  # read-only: nobody had to approve
        (True, Assessment.ASK, DENIED, None),  # never approved, never ran
    ],
)
async def test_rows_name_who_let_the_call_run(
    store: Store,
    side_effects: bool,
    policy: Assessment,
    decision: ApprovalDecision,
    approved_by: str | None,
) -> None:
    async def act(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        return "done"

    gate = PolicyGate(policy={"act": policy}, decisions={"act": decision})
    harness = Harness(store, [spec("act", act, requires_approval=side_effects)], gate=gate)
    await harness.run(call("act", {"x": 1}))
    (row,) = await store.tool_calls.for_turn(harness.turn_id)
    assert row.approved_by == approved_by


async def test_a_secret_across_a_cut_leaves_no_fragment_in_the_row(store: Store) -> None:
    # The key crosses the head/tail cut of the bounded result and the clip of raw arguments;
    # scrubbing after cutting would keep its first characters.
    limit = 200
    head_room = (limit - len(" …[9999 characters cut]… ")) * 2 // 3
    result = "A" * (head_room - 9) + " " + SECRET + " " + "B" * 600
    raw = "{" + "x" * (MAX_RAW_ARGUMENT_CHARS - 9) + " " + SECRET  # never closed: not JSON

    async def leaky(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        return result

    harness = Harness(
        store, [spec("leaky", leaky)], settings=AgentConfig(max_tool_result_chars=limit)
    )
    await harness.run(call("leaky", {"q": 1}), call("leaky", raw))
    rows = await store.tool_calls.for_turn(harness.turn_id)
    assert len(rows) == 2
    fragment = SECRET[:8]
    for row in rows:
        assert fragment not in row.observation and fragment not in row.arguments
        assert len(row.observation) <= limit and len(row.arguments) <= MAX_RAW_ARGUMENT_CHARS


async def test_events_and_rows_name_the_turn_they_belong_to(store: Store) -> None:
    observer = RecordingObserver()
    harness = Harness(store, [spec("echo", Recorder())], observer=observer, session_key="s-1")
    await harness.run(call("echo", {"q": 1}, id="c-1"), call("nope", id="c-2"))
    expected = ("console.main", "c1", harness.turn_id)
    (started,) = observer.started
    assert (started.tool, started.call_id) == ("echo", "c-1")
    assert (started.channel, started.conversation_id, started.turn_id) == expected
    finished = observer.finished
    assert [(e.tool, e.call_id, e.status, e.synthetic) for e in finished] == [
        ("echo", "c-1", "executed", False),
        ("nope", "c-2", "not_executed", True),
    ]
    assert all((e.channel, e.conversation_id, e.turn_id) == expected for e in finished)
    rows = await store.tool_calls.for_turn(harness.turn_id)
    assert [(r.call_id, r.tool, r.status, r.synthetic) for r in rows] == [
        ("c-1", "echo", "executed", False),
        ("c-2", "nope", "not_executed", True),
    ]
    assert all((r.session_key, r.channel) == ("s-1", "console.main") for r in rows)
    assert rows[0].arguments == '{"q":1}' and rows[0].observation == "ok"


async def test_rows_keep_undecoded_arguments_as_raw_text_clipped(store: Store) -> None:
    raw = '{"q": "' + "x" * (2 * MAX_RAW_ARGUMENT_CHARS)  # never closed: not JSON
    harness = Harness(store, [spec("echo", Recorder())])
    await harness.run(call("echo", raw))
    (row,) = await store.tool_calls.for_turn(harness.turn_id)
    assert row.status == "not_executed"
    assert row.arguments == raw[:MAX_RAW_ARGUMENT_CHARS]


async def test_recording_order_events_then_after_hooks_then_row(store: Store) -> None:
    seen: list[tuple[int, int]] = []
    harness: Harness

    async def after(hook_call: HookCall, outcome: ToolOutcome) -> None:
        rows = await store.tool_calls.for_turn(harness.turn_id)
        seen.append((len(harness.observer.finished), len(rows)))

    harness = Harness(store, [spec("echo", Recorder())], hooks=ToolHooks(after=(after,)))
    await harness.run(call("echo"))
    assert seen == [(1, 0)]  # the finish event came first, the row after the hook
    assert len(harness.observer.started) == 1
    assert len(await store.tool_calls.for_turn(harness.turn_id)) == 1


async def test_receipts_prove_successful_results_only(store: Store) -> None:
    signer = ReceiptSigner(KEY)

    async def fails(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        raise RuntimeError("nope")

    harness = Harness(store, [spec("echo", Recorder()), spec("fails", fails)], signer=signer)
    await harness.run(call("echo", {"a": 1}), call("fails"))
    ok_row, failed_row = await store.tool_calls.for_turn(harness.turn_id)
    assert ok_row.receipt is not None and failed_row.receipt is None
    assert signer.check(ok_row).verdict is ReceiptVerdict.VERIFIED
    assert signer.check(failed_row).verdict is ReceiptVerdict.UNSIGNED
    forged = replace(ok_row, observation="forged")
    assert signer.check(forged).changed == ("observation",)
    other_key = ReceiptSigner(b"another-key-of-32-bytes-length!!")
    assert other_key.check(ok_row).verdict is ReceiptVerdict.RECEIPT_INVALID


@pytest.mark.parametrize(
    ("receipts", "env", "expect"),
    [
        (False, {}, "none"),
        (True, {"HATCHWAY_RECEIPT_KEY": "k" * 32}, "signer"),
        (True, {}, "error"),
    ],
)
def test_receipt_signer_from_settings(receipts: bool, env: dict[str, str], expect: str) -> None:
    settings = AgentConfig(receipts=receipts)
    if expect == "error":
        with pytest.raises(ConfigError, match="HATCHWAY_RECEIPT_KEY"):
            ReceiptSigner.from_settings(settings, env)
        return
    signer = ReceiptSigner.from_settings(settings, env)
    assert (signer is not None) is (expect == "signer")


async def test_results_are_bounded_in_history_and_rows(store: Store) -> None:
    big = "A" * 300 + "B" * 300

    harness = Harness(
        store,
        [spec("big", Recorder(answer=lambda a: _const(big)))],
        settings=AgentConfig(max_tool_result_chars=200),
    )
    (outcome,) = (await harness.run(call("big"))).outcomes
    assert len(outcome.observation) <= 200
    assert outcome.observation.startswith("A") and outcome.observation.endswith("B")
    assert "characters cut" in outcome.observation
    (row,) = await store.tool_calls.for_turn(harness.turn_id)
    assert row.observation == outcome.observation


async def _const(text: str) -> ToolResult:
    return text


@given(st.text(min_size=0, max_size=3000), st.integers(min_value=60, max_value=2500))
def test_bound_text_never_exceeds_the_limit_nor_splits_a_pair(text: str, limit: int) -> None:
    bounded = bound_text(text, limit)
    assert len(bounded) <= limit
    if len(text) <= limit:
        assert bounded == text
    else:
        head, _, tail = bounded.partition("\n…[")
        assert text.startswith(head)
        assert text.endswith(tail.split("]…\n", 1)[1])


def test_bound_text_keeps_surrogate_pairs_whole() -> None:
    pair = "\ud83d\ude00"  # one emoji as a UTF-16 surrogate pair (e.g. from JSON \\u escapes)
    text = pair * 200
    bounded = bound_text(text, 100)
    head, _, rest = bounded.partition("\n…[")
    tail = rest.split("]…\n", 1)[1]
    for part in (head, tail):
        assert len(part) % 2 == 0 and (not part or part.startswith("\ud83d"))


def test_loop_detector_warns_at_three_and_stops_at_five() -> None:
    detector = LoopDetector()
    key = ("echo", "{}")
    verdicts = [detector.observe(key, "same")[0] for _ in range(5)]
    assert verdicts == [
        Repetition.NONE,
        Repetition.NONE,
        Repetition.WARN,
        Repetition.WARN,
        Repetition.STOP,
    ]
    assert detector.observe(key, "different")[0] is Repetition.NONE


async def test_loop_detection_through_the_pipeline(store: Store) -> None:
    harness = Harness(store, [spec("echo", Recorder())])
    verdicts, warned = [], []
    for _ in range(5):
        report = await harness.run(call("echo", {"q": 1}))
        verdicts.append(report.verdict)
        warned.append("runtime note" in report.outcomes[0].observation)
    assert warned[:4] == [False, False, True, True]
    assert verdicts[:4] == [BatchVerdict.CONTINUE] * 4
    assert verdicts[4] is BatchVerdict.LOOP_STOPPED


@pytest.mark.parametrize("done_first", [True, False])
async def test_loop_stop_outranks_completes_run(store: Store, done_first: bool) -> None:
    harness = Harness(
        store, [spec("echo", Recorder()), spec("done", Recorder(), completes_run=True)]
    )
    for _ in range(4):
        await harness.run(call("echo", {"q": 1}))
    calls = [call("done"), call("echo", {"q": 1})]
    report = await harness.run(*(calls if done_first else reversed(calls)))
    assert all(o.ok for o in report.outcomes)
    assert report.verdict is BatchVerdict.LOOP_STOPPED


async def test_completes_run_verdict_only_on_success(store: Store) -> None:
    async def fails(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        raise RuntimeError("not delivered")

    harness = Harness(
        store,
        [
            spec("done", Recorder(), completes_run=True),
            spec("done_fails", fails, completes_run=True),
        ],
    )
    assert (await harness.run(call("done_fails"))).verdict is BatchVerdict.CONTINUE
    assert (await harness.run(call("done"))).verdict is BatchVerdict.COMPLETED_RUN


async def test_history_gets_the_call_message_then_one_result_per_id(store: Store) -> None:
    harness = Harness(store, [spec("echo", Recorder())])
    report = await harness.run(
        call("echo", {"n": 1}), call("nope"), call("echo", "{bad"), text="let me check"
    )
    history = await store.history.load(harness.session_key)
    assert history == list(report.messages)
    assert history[0].role == "assistant" and history[0].content == "let me check"
    assert [m.tool_call_id for m in history[1:]] == [c.id for c in history[0].tool_calls]
    assert well_formed(history)
