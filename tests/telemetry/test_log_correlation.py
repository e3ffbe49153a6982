"""Log lines that name their turn: an approval click's (reported by the channel to its host,
then the approval service), every line of a turn from the click to its reply, the trace id
when traces are on, and a session worker that does not pass one message's fields on to the
next."""

from __future__ import annotations

import asyncio
from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from structlog.contextvars import bound_contextvars, merge_contextvars
from structlog.testing import capture_logs

from bot.channel import ApprovalChoice, ClickVerdict
from bot.providers.base import CompletionRequest, ProviderReply
from tests.fakes.channel import FakeChannel, clicked
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.telemetry.conftest import (
    APPROVER,
    REQUESTER,
    SLACK,
    message,
    running,
    settings_for,
)

ANSWER = "The file is written."


async def test_an_approval_clicks_lines_name_the_approval_and_the_turn_it_decides(
    fake: OpenAIFake, tmp_path: Path
) -> None:
    fake.queue_tool_calls([("file_write", {"path": "a.md", "content": "x"})])
    fake.queue_text(ANSWER)
    channel = FakeChannel(SLACK)
    settings = settings_for(fake, tmp_path, telemetry={"enabled": False})
    async with running(settings, channel) as app:
        assert channel.host is not None
        await app.host.deliver(message("write a.md", "m1"))
        posted = await channel.next_card()
        approval_id = posted.card.approval_id
        with capture_logs(processors=[merge_contextvars]) as lines:
            # the requester is no approver: refused; then the approver decides
            own = await clicked(channel.host, channel.click(posted, REQUESTER))
            verdict = await clicked(channel.host, channel.click(posted, APPROVER))
            await channel.wait_for(ANSWER)
            await app.gateway.wait_idle()
        late = await clicked(channel.host, channel.click(posted, APPROVER, ApprovalChoice.DENY))
        [row] = await app.store.tool_calls.for_call(
            fake.requests[1].body["messages"][-1]["tool_call_id"]
        )
    assert own is ClickVerdict.NOT_AUTHORISED
    assert verdict is ClickVerdict.ACCEPTED
    assert late is ClickVerdict.ALREADY_DECIDED
    by_event = {line["event"]: line for line in lines}
    for event in ("approval_click_refused", "approval_clicked"):
        assert by_event[event]["approval_id"] == approval_id
        assert by_event[event]["turn_id"] == row.turn_id
    # every line from the click to the reply, on whichever task, names the turn
    assert {line.get("turn_id") for line in lines} == {row.turn_id}, [
        line["event"] for line in lines if line.get("turn_id") != row.turn_id
    ]
    assert "tool_call_finished" in by_event


async def test_a_turns_lines_carry_its_trace_id_when_traces_are_on(
    fake: OpenAIFake, tmp_path: Path
) -> None:
    fake.queue_tool_calls([("calculator", {"expression": "6*7"})])
    fake.queue_text("42")
    exporter = InMemorySpanExporter()
    channel = FakeChannel(SLACK)
    async with running(settings_for(fake, tmp_path), channel, exporter) as app:
        with capture_logs(processors=[merge_contextvars]) as lines:
            await app.host.deliver(message("six times seven", "m1"))
            await channel.wait_for("42")
            await app.gateway.wait_idle()
    [root] = [s for s in exporter.get_finished_spans() if s.parent is None]
    assert root.attributes is not None
    turn_lines = [
        line for line in lines if line.get("turn_id") == root.attributes["hatchway.turn_id"]
    ]
    assert {line["event"] for line in turn_lines} >= {"tool_call_started", "tool_call_finished"}
    assert {line.get("trace_id") for line in turn_lines} == {f"{root.context.trace_id:032x}"}


async def test_a_session_worker_does_not_pass_one_messages_fields_to_the_next(
    tmp_path: Path, fake: OpenAIFake
) -> None:
    """A scheduled run binds its job id around its delivery; a person's message queued
    behind it in the same session runs on the same worker, and its lines are its own."""
    release = asyncio.Event()

    async def slow(request: CompletionRequest) -> ProviderReply:
        await release.wait()
        return reply("first answer")

    provider = ScriptedProvider(
        [slow, reply("", call("calculator", {"expression": "1+1"})), reply("second answer")]
    )
    channel = FakeChannel(SLACK)
    settings = settings_for(fake, tmp_path, telemetry={"enabled": False})
    async with running(settings, channel, provider=provider) as app:
        later = message("second", "m2")
        with capture_logs(processors=[merge_contextvars]) as lines:
            with bound_contextvars(job_id="job-7"):
                await app.host.deliver(message("first", "m1"))
            await app.host.deliver(later)
            release.set()
            await channel.wait_for("second answer")
            await app.gateway.wait_idle()
    # the first turn's worker was spawned by the delivery bound to the job
    turns = [line for line in lines if "turn_id" in line]
    second = [line for line in turns if line.get("envelope_id") == later.envelope_id]
    assert second, [line["event"] for line in turns]
    assert all("job_id" not in line for line in second), second
