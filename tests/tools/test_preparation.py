"""Preparation rules (pipeline.md §4): hooks, delivery defaults, the approved marker,
approval, the duplicate guard and the repeated-prompt guard."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from bot.approval.gate import Assessment
from bot.store import Store
from bot.tools.batch import BatchVerdict
from bot.tools.hooks import HookCall, HookDecision, ToolHooks
from bot.tools.outcome import OutcomeReason
from bot.tools.registry import ToolScope
from bot.tools.spec import ToolContext
from tests.fakes.scripted_provider import call
from tests.tools.gates import DENIED, PolicyGate
from tests.tools.harness import Harness, Recorder, make_envelope, spec, text_schema

PATH_SCHEMA = text_schema("path", required=["path"])


def rewrite_to(name: str | None = None, **arguments: object) -> ToolHooks:
    async def hook(hook_call: HookCall) -> HookDecision:
        return HookDecision(name=name, arguments=arguments or None)

    return ToolHooks(before=(hook,))


@pytest.mark.parametrize(
    ("hooks", "reason"),
    [
        (rewrite_to(path=7), OutcomeReason.HOOK_REWRITE_INVALID),  # breaks the schema
        (rewrite_to(unexpected="x"), OutcomeReason.HOOK_REWRITE_INVALID),  # breaks the schema
        (rewrite_to("hidden"), OutcomeReason.HOOK_REWRITE_INVALID),  # a tool not offered
        (rewrite_to("ghost"), OutcomeReason.HOOK_REWRITE_INVALID),  # no such tool
    ],
)
async def test_a_hook_rewrite_is_validated_again(
    store: Store, hooks: ToolHooks, reason: OutcomeReason
) -> None:
    read, hidden = Recorder(), Recorder()
    harness = Harness(
        store,
        [spec("read", read, parameters=PATH_SCHEMA), spec("hidden", hidden)],
        hooks=hooks,
        scope=ToolScope(excluded=frozenset({"hidden"})),
    )
    (outcome,) = (await harness.run(call("read", {"path": "a.txt"}))).outcomes
    assert outcome.reason is reason
    assert read.calls == [] and hidden.calls == []


async def test_a_valid_rewrite_runs_with_the_new_arguments(store: Store) -> None:
    read = Recorder()
    harness = Harness(
        store, [spec("read", read, parameters=PATH_SCHEMA)], hooks=rewrite_to(path="safe.txt")
    )
    (outcome,) = (await harness.run(call("read", {"path": "a.txt"}))).outcomes
    assert outcome.ok
    assert read.calls == [{"path": "safe.txt"}]


async def test_hooks_see_each_others_rewrites_in_order(store: Store) -> None:
    seen: list[Mapping[str, object]] = []

    async def first(hook_call: HookCall) -> HookDecision:
        return HookDecision(arguments={"path": "b.txt"})

    async def second(hook_call: HookCall) -> HookDecision:
        seen.append(hook_call.arguments)
        return HookDecision()

    read = Recorder()
    harness = Harness(
        store,
        [spec("read", read, parameters=PATH_SCHEMA)],
        hooks=ToolHooks(before=(first, second)),
    )
    await harness.run(call("read", {"path": "a.txt"}))
    assert seen == [{"path": "b.txt"}]
    assert read.calls == [{"path": "b.txt"}]


async def test_a_hook_can_tighten_allow_to_ask(store: Store) -> None:
    async def ask_please(hook_call: HookCall) -> HookDecision:
        return HookDecision(require=Assessment.ASK)

    gate = PolicyGate(policy={"read": Assessment.ALLOW})
    read = Recorder()
    harness = Harness(store, [spec("read", read)], gate=gate, hooks=ToolHooks(before=(ask_please,)))
    (outcome,) = (await harness.run(call("read"))).outcomes
    assert outcome.ok
    assert [r.tool for r in gate.asked] == ["read"]
    assert ("waiting", "read") in harness.progress.events


async def test_a_hook_cannot_loosen_a_deny(store: Store) -> None:
    async def permissive(hook_call: HookCall) -> HookDecision:
        return HookDecision(require=Assessment.ALLOW)

    gate = PolicyGate(policy={"rm": Assessment.DENY})
    rm = Recorder()
    harness = Harness(store, [spec("rm", rm)], gate=gate, hooks=ToolHooks(before=(permissive,)))
    (outcome,) = (await harness.run(call("rm"))).outcomes
    assert outcome.reason is OutcomeReason.POLICY_DENIED
    assert rm.calls == []


async def test_a_hook_deny_refuses_the_call(store: Store) -> None:
    async def strict(hook_call: HookCall) -> HookDecision:
        return HookDecision(require=Assessment.DENY)

    read = Recorder()
    harness = Harness(store, [spec("read", read)], hooks=ToolHooks(before=(strict,)))
    (outcome,) = (await harness.run(call("read"))).outcomes
    assert outcome.reason is OutcomeReason.POLICY_DENIED and read.calls == []


SEND_SCHEMA = text_schema("text", "channel", "to", "thread", required=["text"])


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"text": "hi"}, {"text": "hi", "channel": "console.main", "to": "c1", "thread": "t1"}),
        (
            {"text": "hi", "to": "c9"},
            {"text": "hi", "channel": "console.main", "to": "c9", "thread": "t1"},
        ),
        (
            {"text": "hi", "channel": "slack.ops", "to": "C1", "thread": "x"},
            {"text": "hi", "channel": "slack.ops", "to": "C1", "thread": "x"},
        ),
    ],
)
async def test_delivery_defaults_fill_only_what_is_missing(
    store: Store, arguments: dict[str, object], expected: dict[str, object]
) -> None:
    send = Recorder()
    harness = Harness(store, [spec("send", send, parameters=SEND_SCHEMA, channel_aware=True)])
    await harness.run(call("send", arguments))
    assert send.calls == [expected]


async def test_background_delivery_announces_back_to_the_origin(store: Store) -> None:
    send = Recorder()
    envelope = make_envelope(background=True, thread_id=None)
    harness = Harness(
        store, [spec("send", send, parameters=SEND_SCHEMA, channel_aware=True)], envelope=envelope
    )
    await harness.run(call("send", {"text": "daily report"}))
    assert send.calls == [{"text": "daily report", "channel": "console.main", "to": "c1"}]


async def test_tools_that_are_not_channel_aware_get_no_defaults(store: Store) -> None:
    send = Recorder()
    harness = Harness(store, [spec("send", send, parameters=SEND_SCHEMA)])
    await harness.run(call("send", {"text": "hi"}))
    assert send.calls == [{"text": "hi"}]


async def test_the_approved_marker_is_stripped_before_the_gate_and_the_handler(
    store: Store,
) -> None:
    risky = Recorder()
    gate = PolicyGate()
    harness = Harness(store, [spec("risky", risky, requires_approval=True)], gate=gate)
    (outcome,) = (await harness.run(call("risky", {"x": 1, "approved": True}))).outcomes
    assert outcome.ok
    assert [dict(r.arguments) for r in gate.asked] == [{"x": 1}]  # still asked
    assert risky.calls == [{"x": 1}]


@pytest.mark.parametrize(("target", "asked"), [("c1", False), ("elsewhere", True)])
async def test_approval_check_decides_per_call(store: Store, target: str, asked: bool) -> None:
    def other_conversation(arguments: Mapping[str, object], context: ToolContext) -> bool:
        return arguments.get("to") != context.conversation_id

    gate = PolicyGate()
    send = Recorder()
    harness = Harness(
        store,
        [spec("send", send, requires_approval=True, approval_check=other_conversation)],
        gate=gate,
    )
    (outcome,) = (await harness.run(call("send", {"to": target}))).outcomes
    assert outcome.ok
    assert [r.requires_approval for r in gate.assessed] == [asked]
    assert bool(gate.asked) is asked


async def test_dedup_exempt_tools_may_repeat_in_one_step(store: Store) -> None:
    clock = Recorder()
    harness = Harness(store, [spec("now", clock, dedup_exempt=True)])
    report = await harness.run(call("now"), call("now"))
    assert all(o.ok for o in report.outcomes) and len(clock.calls) == 2


async def test_an_identical_call_in_the_next_step_runs_again(store: Store) -> None:
    echo = Recorder()
    harness = Harness(store, [spec("echo", echo)])
    await harness.run(call("echo", {"a": 1}))
    (outcome,) = (await harness.run(call("echo", {"a": 1}))).outcomes
    assert outcome.ok and len(echo.calls) == 2


async def test_a_duplicate_of_a_prompting_call_is_not_asked_twice(store: Store) -> None:
    gate = PolicyGate()
    risky = Recorder()
    harness = Harness(store, [spec("risky", risky, requires_approval=True)], gate=gate)
    report = await harness.run(call("risky", {"a": 1}), call("risky", {"a": 1}))
    assert [o.reason for o in report.outcomes] == [OutcomeReason.NONE, OutcomeReason.DUPLICATE]
    assert len(gate.asked) == 1 and len(risky.calls) == 1


async def test_a_refused_prompting_call_repeated_later_aborts_the_turn(store: Store) -> None:
    gate = PolicyGate(decisions={"risky": DENIED})
    risky, other = Recorder(), Recorder()
    harness = Harness(
        store, [spec("risky", risky, requires_approval=True), spec("other", other)], gate=gate
    )
    first = await harness.run(call("risky", {"a": 1}))
    assert first.verdict is BatchVerdict.CONTINUE
    second = await harness.run(call("risky", {"a": 1}), call("other"))
    assert second.verdict is BatchVerdict.ABORTED
    assert second.outcomes[0].reason is OutcomeReason.REPEATED_PROMPT
    assert second.outcomes[1].aborted_before_launch
    assert len(gate.asked) == 1  # not prompted again
    assert risky.calls == [] and other.calls == []


async def test_an_approved_prompting_call_may_repeat_across_steps(store: Store) -> None:
    gate = PolicyGate()
    risky = Recorder()
    harness = Harness(store, [spec("risky", risky, requires_approval=True)], gate=gate)
    await harness.run(call("risky", {"a": 1}))
    second = await harness.run(call("risky", {"a": 1}))
    assert second.verdict is BatchVerdict.CONTINUE and second.outcomes[0].ok
    assert len(gate.asked) == 2
