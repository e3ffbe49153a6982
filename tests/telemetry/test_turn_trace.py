"""One trace per turn, through the real daemon parts and the real OpenTelemetry SDK: a turn
whose tool needs approval (asked on a card, clicked by the approver), a model call retried
once, a batch run side by side, and messages the admission does not queue."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.fakes.channel import FakeChannel, clicked
from tests.fakes.openai_server import OpenAIFake
from tests.telemetry.conftest import APPROVER, KEY, SLACK, message, running, settings_for, values_of

QUESTION = "please keep the launch code in notes"
CONTENT = "launch code 4711-tango-secret"
ANSWER = "Noted, the file is written."


def tree(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    """The spans by the name of their parent ("" for a root)."""
    by_id = {span.context.span_id: span for span in spans}
    children: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        parent = by_id[span.parent.span_id].name if span.parent else ""
        children.setdefault(parent, []).append(span)
    return children


def names(spans: list[ReadableSpan]) -> Counter[str]:
    return Counter(
        span.name
        + (
            f"[{span.attributes['hatchway.send.purpose']!s}]"
            if span.name == "hatchway.send" and span.attributes
            else ""
        )
        for span in spans
    )


async def test_a_turn_with_an_approved_tool_is_one_trace_of_ids_and_counts(
    fake: OpenAIFake, tmp_path: Path
) -> None:
    fake.queue_error(503, headers={"Retry-After": "0"})
    fake.queue_tool_calls([("file_write", {"path": "notes.md", "content": CONTENT})])
    fake.queue_text(ANSWER)
    exporter = InMemorySpanExporter()
    channel = FakeChannel(SLACK)
    async with running(settings_for(fake, tmp_path), channel, exporter) as app:
        await app.host.deliver(message(QUESTION, "m1"))
        posted = await channel.next_card()
        assert channel.host is not None
        await clicked(channel.host, channel.click(posted, APPROVER))
        await channel.wait_for(ANSWER)
        [row] = await app.store.tool_calls.for_call(
            fake.requests[2].body["messages"][-1]["tool_call_id"]
        )
    spans = exporter.get_finished_spans()

    assert len({span.context.trace_id for span in spans}) == 1
    children = tree(spans)
    [root] = children[""]
    assert root.name == "hatchway.turn"
    assert root.attributes is not None
    assert root.attributes["hatchway.turn_id"] == row.turn_id
    assert root.attributes["hatchway.turn.status"] == "completed"
    assert root.attributes["hatchway.admitted"] is True
    assert root.attributes["hatchway.channel"] == "slack.team"
    # the turn's own spans, in any order; the progress message's sends vary with timing
    under_turn = names(children["hatchway.turn"])
    assert under_turn.pop("hatchway.send[progress]", 0) >= 1
    assert under_turn == Counter(
        {
            "hatchway.admission": 1,
            "hatchway.model.call": 2,
            "hatchway.tool.prepare": 1,
            "hatchway.tool.execute": 1,
            "hatchway.tool.record": 1,
            "hatchway.send[reply]": 1,
        }
    )
    # the wait for the approver is part of preparing the call, and the card part of the wait
    assert names(children["hatchway.tool.prepare"]) == Counter({"hatchway.tool.approval": 1})
    assert names(children["hatchway.tool.approval"]) == Counter({"hatchway.send[approval_card]": 1})
    [approval] = children["hatchway.tool.prepare"]
    assert approval.attributes is not None
    assert approval.attributes["hatchway.approval_id"] == posted.card.approval_id
    assert approval.attributes["hatchway.approval.verdict"] == "approved"
    assert approval.attributes["hatchway.tool"] == "file_write"
    # the first model call was retried once, and tells the tokens the server reported
    first, second = sorted(
        (s for s in children["hatchway.turn"] if s.name == "hatchway.model.call"),
        key=lambda s: s.start_time or 0,
    )
    assert first.attributes is not None
    assert first.attributes["hatchway.retries"] == 1
    assert [e.name for e in first.events] == ["hatchway.provider.retry"]
    assert first.events[0].attributes == {
        "hatchway.provider": "default",
        "http.response.status_code": 503,
    }
    assert first.attributes["gen_ai.response.model"] == fake.model
    assert first.attributes["hatchway.model.tool_calls"] == 1
    assert first.attributes["gen_ai.usage.output_tokens"] == 7
    assert second.attributes is not None
    assert "hatchway.retries" not in second.attributes
    [execute] = [s for s in children["hatchway.turn"] if s.name == "hatchway.tool.execute"]
    assert execute.attributes is not None
    assert execute.attributes["hatchway.tool.status"] == "executed"
    [reply] = [
        s
        for s in children["hatchway.turn"]
        if s.name == "hatchway.send"
        and s.attributes
        and s.attributes["hatchway.send.purpose"] == "reply"
    ]
    assert reply.attributes is not None
    assert reply.attributes["hatchway.send.messages"] == 1
    assert reply.attributes["hatchway.channel.kind"] == "slack"
    # ids, names, counts and statuses only: no text of the message, the arguments, the
    # answer, nor the provider's key
    for span in spans:
        for value in values_of(span):
            for secret in (QUESTION, CONTENT, "4711", ANSWER, KEY, "notes.md"):
                assert secret not in value, (span.name, value)


async def test_calls_of_one_batch_that_run_side_by_side_are_siblings_under_the_turn(
    fake: OpenAIFake, tmp_path: Path
) -> None:
    fake.queue_tool_calls(
        [("calculator", {"expression": "6*7"}), ("calculator", {"expression": "2+2"})]
    )
    fake.queue_text("42 and 4")
    exporter = InMemorySpanExporter()
    channel = FakeChannel(SLACK)
    async with running(settings_for(fake, tmp_path), channel, exporter) as app:
        await app.host.deliver(message("two sums", "m1"))
        await channel.wait_for("42 and 4")
    children = tree(exporter.get_finished_spans())
    executes = [s for s in children["hatchway.turn"] if s.name == "hatchway.tool.execute"]
    assert len(executes) == 2
    assert len({s.context.span_id for s in executes}) == 2
    assert {s.attributes["hatchway.call_id"] for s in executes if s.attributes} == {
        request["id"] for request in fake.requests[1].body["messages"][-3]["tool_calls"]
    }
    assert "hatchway.tool.execute" not in names(
        [s for parent, spans in children.items() if parent != "hatchway.turn" for s in spans]
    )


async def test_a_message_the_admission_does_not_queue_ends_its_trace_there(
    fake: OpenAIFake, tmp_path: Path
) -> None:
    fake.queue_text("first answer")
    exporter = InMemorySpanExporter()
    channel = FakeChannel(SLACK)
    async with running(settings_for(fake, tmp_path), channel, exporter) as app:
        await app.host.deliver(message("hello", "m1"))
        await channel.wait_for("first answer")
        await app.host.deliver(message("hello", "m1"))  # the platform delivers it again
    roots = [s for s in exporter.get_finished_spans() if s.parent is None]
    assert len(roots) == 2
    admitted = {bool(r.attributes and r.attributes["hatchway.admitted"]) for r in roots}
    assert admitted == {True, False}
    [dropped] = [r for r in roots if r.attributes and not r.attributes["hatchway.admitted"]]
    assert dropped.attributes is not None
    assert "hatchway.turn_id" not in dropped.attributes
    others = [
        s for s in exporter.get_finished_spans() if s.context.trace_id == dropped.context.trace_id
    ]
    assert sorted(s.name for s in others) == ["hatchway.admission", "hatchway.turn"]
    assert len(fake.requests) == 1


async def test_with_traces_off_nothing_is_exported(fake: OpenAIFake, tmp_path: Path) -> None:
    fake.queue_tool_calls([("calculator", {"expression": "6*7"})])
    fake.queue_text("42")
    exporter = InMemorySpanExporter()
    channel = FakeChannel(SLACK)
    settings = settings_for(fake, tmp_path, telemetry={"enabled": False})
    async with running(settings, channel, exporter) as app:
        await app.host.deliver(message("six times seven", "m1"))
        await channel.wait_for("42")
    assert exporter.get_finished_spans() == ()
