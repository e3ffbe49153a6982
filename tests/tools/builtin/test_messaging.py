"""``send_message``: targets from delivery defaults (direct and through the real pipeline),
approval only for another conversation, and only to targets the outbox allows."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from bot.approval.gate import Assessment
from bot.envelope import ChannelRef, DeliveryTarget
from bot.providers.base import ToolCallRequest
from bot.store import Store
from bot.tools.builtin.messaging import send_message_tool
from bot.tools.builtin.observation import ToolFailed, ToolRefused
from bot.tools.outcome import OutcomeStatus
from bot.tools.spec import ToolContext, ToolKind, ToolOutput, ToolSpec
from tests.tools.builtin.conftest import ORIGIN, make_context
from tests.tools.gates import PolicyGate
from tests.tools.harness import Harness

CONSOLE = ChannelRef(kind="console", alias="main")


@dataclass
class MemoryOutbox:
    """An outbox that knows a fixed set of conversations and keeps what it was given."""

    known: set[tuple[str, str]]
    sent: list[tuple[DeliveryTarget, str]] = field(default_factory=list)

    def allows(self, target: DeliveryTarget) -> bool:
        return (str(target.channel), target.conversation_id) in self.known

    async def send(self, target: DeliveryTarget, text: str) -> None:
        self.sent.append((target, text))


@pytest.fixture
def outbox() -> MemoryOutbox:
    return MemoryOutbox(
        known={
            ("slack.team", "C-ORIGIN"),
            ("slack.team", "C-OTHER"),
            ("console.main", "c1"),
            ("console.main", "c2"),
        }
    )


async def call(spec: ToolSpec, arguments: Mapping[str, object], context: ToolContext) -> str:
    assert spec.handler is not None
    result = await spec.handler(arguments, context)
    return result.text if isinstance(result, ToolOutput) else result


def test_policy_fields(outbox: MemoryOutbox) -> None:
    spec = send_message_tool(outbox)
    assert spec.channel_aware and spec.kind is ToolKind.WRITE
    assert spec.approval_check is not None
    properties = spec.parameters["properties"]
    assert isinstance(properties, Mapping)
    assert {"channel", "to", "thread", "text"} <= set(properties)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"text": "hi"}, False),
        ({"text": "hi", "channel": "slack.team", "to": "C-ORIGIN"}, False),
        ({"text": "hi", "channel": "slack.team", "to": "C-ORIGIN", "thread": "T-9"}, False),
        ({"text": "hi", "to": "C-OTHER"}, True),
        ({"text": "hi", "channel": "slack.team", "to": "C-OTHER", "thread": "T-1"}, True),
        ({"text": "hi", "channel": "discord.ops", "to": "C-ORIGIN"}, True),
    ],
)
def test_approval_only_for_another_conversation(
    outbox: MemoryOutbox, arguments: Mapping[str, object], expected: bool
) -> None:
    check = send_message_tool(outbox).approval_check
    assert check is not None
    assert check(arguments, make_context()) is expected


async def test_direct_call_defaults_to_the_origin(
    outbox: MemoryOutbox, context: ToolContext
) -> None:
    text = await call(send_message_tool(outbox), {"text": "done"}, context)
    assert text == "sent to slack.team:C-ORIGIN (thread T-1)"
    assert outbox.sent == [(ORIGIN, "done")]


async def test_the_origin_is_always_allowed(context: ToolContext) -> None:
    """The outbox cannot classify every id (Discord channels): the conversation a request
    came from needs no listing."""
    strict = MemoryOutbox(known=set())
    await call(send_message_tool(strict), {"text": "done"}, context)
    assert strict.sent == [(ORIGIN, "done")]


async def test_other_conversation_gets_no_origin_thread(
    outbox: MemoryOutbox, context: ToolContext
) -> None:
    arguments = {"text": "fyi", "channel": "slack.team", "to": "C-OTHER", "thread": "T-1"}
    await call(send_message_tool(outbox), arguments, context)
    ((target, _),) = outbox.sent
    assert (target.conversation_id, target.thread_id) == ("C-OTHER", None)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"text": "x", "to": "C-UNKNOWN"}, ToolRefused, "not a conversation this bot can post"),
        ({"text": "x", "channel": "nodot"}, ToolFailed, "kind.alias"),
    ],
)
async def test_bad_targets(
    outbox: MemoryOutbox,
    context: ToolContext,
    arguments: Mapping[str, object],
    error: type[Exception],
    message: str,
) -> None:
    with pytest.raises(error, match=message):
        await call(send_message_tool(outbox), arguments, context)
    assert outbox.sent == []


async def test_text_is_scrubbed(outbox: MemoryOutbox, context: ToolContext) -> None:
    await call(send_message_tool(outbox), {"text": "key sk-abcdefghijklmnopqrstuvwx"}, context)
    assert outbox.sent[0][1] == "key ***"


def request(arguments: Mapping[str, object], call_id: str = "c1") -> ToolCallRequest:
    return ToolCallRequest(id=call_id, name="send_message", arguments=json.dumps(arguments))


async def test_pipeline_fills_the_reply_target(store: Store, outbox: MemoryOutbox) -> None:
    gate = PolicyGate()
    harness = Harness(store, [send_message_tool(outbox)], gate=gate)
    report = await harness.run(request({"text": "hello there"}))
    (outcome,) = report.outcomes
    assert outcome.status is OutcomeStatus.EXECUTED and not outcome.failed
    assert outbox.sent == [
        (DeliveryTarget(channel=CONSOLE, conversation_id="c1", thread_id="t1"), "hello there")
    ]
    (assessed,) = gate.assessed
    assert assessed.requires_approval is False
    assert gate.asked == []


async def test_pipeline_asks_before_posting_elsewhere(store: Store, outbox: MemoryOutbox) -> None:
    gate = PolicyGate()
    harness = Harness(store, [send_message_tool(outbox)], gate=gate)
    report = await harness.run(request({"text": "psst", "to": "c2"}))
    assert report.outcomes[0].status is OutcomeStatus.EXECUTED
    assert [r.requires_approval for r in gate.asked] == [True]
    assert outbox.sent == [
        (DeliveryTarget(channel=CONSOLE, conversation_id="c2", thread_id=None), "psst")
    ]


async def test_pipeline_denial_sends_nothing(store: Store, outbox: MemoryOutbox) -> None:
    gate = PolicyGate(policy={"send_message": Assessment.DENY})
    harness = Harness(store, [send_message_tool(outbox)], gate=gate)
    report = await harness.run(request({"text": "psst", "to": "c2"}))
    assert report.outcomes[0].status is OutcomeStatus.NOT_EXECUTED
    assert outbox.sent == []
