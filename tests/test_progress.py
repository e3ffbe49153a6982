"""Progress lines and the channel progress sink (throttling with a fake clock)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence

import pytest

from bot.channel import SentMessage
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget
from bot.errors import ChannelError
from bot.progress import (
    ChannelProgress,
    finished_line,
    progress_hint,
    started_line,
    waiting_line,
)
from tests.fakes.channel import FakeChannel

REF = ChannelRef(kind="fake", alias="main")
TARGET = DeliveryTarget(channel=REF, conversation_id="c1")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("arguments", "hint"),
    [
        ({"command": "ls -la /tmp"}, "ls -la /tmp"),
        ({"path": "notes.md", "command": "x"}, "x"),
        ({"url": "https://example.com/" + "a" * 100}, "https://example.com/" + "a" * 39 + "…"),
        ({"query": "line one\n  line two"}, "line one ⏎ line two"),
        ({"command": "curl -H 'Authorization: Bearer abcdefghijklmnop'"}, None),
        ({"count": 3}, ""),
    ],
)
def test_progress_hint(arguments: dict[str, object], hint: str | None) -> None:
    found = progress_hint(arguments)
    if hint is None:
        assert "abcdefghijklmnop" not in found
    else:
        assert found == hint
    assert len(found) <= 60


def test_line_formats() -> None:
    assert started_line("shell", "ls") == "⏳ shell: `ls`"
    assert started_line("shell", "a`b") == "⏳ shell: ``a`b``"
    assert started_line("shell", "`x") == "⏳ shell: `` `x ``"
    assert started_line("clock", "") == "⏳ clock"
    assert finished_line("shell", ok=True, duration_s=1.234) == "✅ shell (1.2s)"
    assert finished_line("shell", ok=False, duration_s=0.5, reason="exit 2") == (
        "❌ shell (0.5s): `exit 2`"
    )
    assert waiting_line("shell").startswith("🔐 waiting for approval")


async def test_editable_channel_gets_one_message_edited_at_most_once_a_second() -> None:
    channel, clock = FakeChannel(REF), Clock()
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=True), clock)
    await progress.tool_started(call_id="1", tool="shell", hint="ls")
    assert channel.texts == []  # the sink never waits for the platform: the ticker sends
    await progress.pulse()
    assert channel.texts == ["⏳ shell: `ls`"]
    clock.now += 0.3
    await progress.tool_finished(call_id="1", tool="shell", ok=True, duration_s=0.3)
    clock.now += 0.3
    await progress.tool_started(call_id="2", tool="file_read", hint="a.txt")
    assert channel.edited_texts == []  # throttled
    clock.now += 0.5
    await progress.pulse()
    assert channel.edited_texts == ["✅ shell (0.3s)\n⏳ file_read: `a.txt`"]
    clock.now += 0.1
    await progress.tool_finished(
        call_id="2", tool="file_read", ok=False, duration_s=0.1, reason="FileNotFoundError"
    )
    await progress.aclose()  # final flush ignores the throttle
    assert channel.edited_texts[-1] == "✅ shell (0.3s)\n❌ file_read (0.1s): `FileNotFoundError`"
    assert len(channel.texts) == 1


async def test_other_channels_get_batched_lines() -> None:
    channel, clock = FakeChannel(REF), Clock()
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=False), clock)
    await progress.tool_started(call_id="1", tool="a", hint="")
    await progress.pulse()
    await progress.tool_finished(call_id="1", tool="a", ok=True, duration_s=0.0)
    await progress.tool_started(call_id="2", tool="b", hint="")
    await progress.pulse()
    assert channel.texts == ["⏳ a"]  # batched: at most one send per interval
    await progress.aclose()
    assert channel.texts == ["⏳ a", "✅ a (0.0s)\n⏳ b"]
    assert channel.edited_texts == []


async def test_waiting_for_approval_shows_and_pauses_typing() -> None:
    channel, clock = FakeChannel(REF), Clock()
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=True, typing=True), clock)
    await progress.pulse()
    assert channel.typing_calls == 1
    await progress.waiting_for_approval(tool="shell")
    await progress.pulse()
    assert channel.texts == ["🔐 waiting for approval: shell"]
    clock.now += 10
    await progress.pulse()
    assert channel.typing_calls == 1  # paused while waiting
    await progress.approval_resolved(tool="shell", approved=True)
    await progress.pulse()
    assert channel.typing_calls == 2
    await progress.aclose()


async def test_a_refused_approval_does_not_leave_the_line_waiting() -> None:
    channel, clock = FakeChannel(REF), Clock()
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=True), clock)
    await progress.waiting_for_approval(tool="shell")
    await progress.pulse()
    assert channel.texts == ["🔐 waiting for approval: shell"]
    await progress.approval_resolved(tool="shell", approved=False)
    await progress.aclose()
    assert channel.edited_texts[-1] == "🚫 shell: not approved, not run"


async def test_the_owned_ticker_refreshes_typing_and_stops_on_close() -> None:
    channel = FakeChannel(REF)
    async with ChannelProgress(channel, TARGET, Capabilities(typing=True)):
        await channel.typed.wait()
    count = channel.typing_calls
    await asyncio.sleep(0.05)
    assert channel.typing_calls == count  # the task is gone


async def test_a_slow_platform_never_holds_up_the_turn() -> None:
    channel = FakeChannel(REF)
    release, sending = asyncio.Event(), asyncio.Event()
    send = channel.send

    async def slow_send(target: DeliveryTarget, text: str) -> Sequence[SentMessage]:
        sending.set()
        await release.wait()
        return await send(target, text)

    channel.send = slow_send  # type: ignore[method-assign]
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=True))
    await progress.start()
    async with asyncio.timeout(5):  # returns while the platform has not answered
        await progress.tool_started(call_id="1", tool="shell", hint="ls")
        await progress.tool_finished(call_id="1", tool="shell", ok=True, duration_s=0.1)
        await sending.wait()  # the ticker is now stuck in the send
        await progress.tool_started(call_id="2", tool="file_read", hint="a")
    assert channel.texts == []
    release.set()
    await progress.aclose()
    # the send in flight finished (not cut off, so no second message), then the final edit
    assert channel.texts == ["✅ shell (0.1s)"]
    assert channel.edited_texts == ["✅ shell (0.1s)\n⏳ file_read: `a`"]


async def test_platform_failures_never_break_the_turn() -> None:
    channel = FakeChannel(REF, down=True)
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=True), Clock())
    await progress.tool_started(call_id="1", tool="a", hint="")
    await progress.aclose()
    assert channel.texts == []


async def test_streamed_text_is_shown_only_when_asked_for() -> None:
    channel, clock = FakeChannel(REF), Clock()
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=True), clock, stream=True)
    assert progress.wants_stream
    await progress.stream_text("Hello ")
    await progress.pulse()
    clock.now += 2
    await progress.stream_text("world")
    await progress.pulse()
    assert channel.texts == ["Hello"] and channel.edited_texts == ["Hello world"]
    quiet = ChannelProgress(FakeChannel(REF), TARGET, Capabilities(can_edit=True), clock)
    assert not quiet.wants_stream


async def test_without_typing_a_turn_that_shows_nothing_starts_no_task() -> None:
    before = asyncio.all_tasks()
    progress = ChannelProgress(FakeChannel(REF), TARGET, Capabilities())
    await progress.start()
    assert asyncio.all_tasks() == before
    await progress.aclose()


async def until_true(predicate: Callable[[], bool]) -> None:
    """Yield to the event loop until ``predicate`` holds (fails after 5 s)."""
    async with asyncio.timeout(5):
        for _ in itertools.count():
            if predicate():
                return
            await asyncio.sleep(0.005)


async def test_a_throttled_line_is_shown_when_due_without_further_changes() -> None:
    channel = FakeChannel(REF)
    progress = ChannelProgress(channel, TARGET, Capabilities(), batch_interval_s=0.02)
    await progress.tool_started(call_id="1", tool="a", hint="")
    await until_true(lambda: channel.texts == ["⏳ a"])
    await progress.tool_finished(call_id="1", tool="a", ok=True, duration_s=0.0)
    await until_true(lambda: len(channel.texts) == 2)  # by the ticker's timer, not aclose
    assert channel.texts[1] == "✅ a (0.0s)"
    await progress.aclose()


async def test_typing_is_refreshed_while_the_turn_works() -> None:
    channel = FakeChannel(REF)
    progress = ChannelProgress(channel, TARGET, Capabilities(typing=True), typing_interval_s=0.01)
    async with progress:
        await until_true(lambda: channel.typing_calls >= 3)


async def test_a_stopped_turn_closes_its_progress_message() -> None:
    channel, clock = FakeChannel(REF), Clock()
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=True), clock)
    await progress.tool_started(call_id="1", tool="shell", hint="exit 3")
    await progress.tool_finished(
        call_id="1", tool="shell", ok=False, duration_s=0.1, reason="exit 3"
    )
    await progress.tool_started(call_id="2", tool="shell", hint="sleep 600")
    await progress.pulse()
    assert channel.texts == ["❌ shell (0.1s): `exit 3`\n⏳ shell: `sleep 600`"]
    progress.stopped()
    await progress.aclose()
    assert channel.edited_texts[-1] == "❌ shell (0.1s): `exit 3`\n⏹ shell: stopped\n⏹ stopped"


async def test_a_stop_while_waiting_for_approval_closes_the_waiting_line() -> None:
    channel, clock = FakeChannel(REF), Clock()
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=True), clock)
    await progress.waiting_for_approval(tool="shell")
    await progress.pulse()
    progress.stopped()
    await progress.aclose()
    assert channel.edited_texts[-1] == "⏹ shell: stopped\n⏹ stopped"


async def test_a_stop_with_nothing_shown_sends_nothing() -> None:
    channel = FakeChannel(REF)
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=True), Clock())
    progress.stopped()
    await progress.aclose()
    assert channel.texts == [] and channel.edited_texts == []


async def test_a_stop_on_a_channel_without_edits_says_which_call_was_stopped() -> None:
    channel, clock = FakeChannel(REF), Clock()
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=False), clock)
    await progress.tool_started(call_id="1", tool="shell", hint="sleep 600")
    await progress.pulse()
    progress.stopped()
    await progress.aclose()
    assert channel.texts == ["⏳ shell: `sleep 600`", "⏹ shell: stopped"]


async def test_stopping_is_shown_at_once_then_closed() -> None:
    channel, clock = FakeChannel(REF), Clock()
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=True), clock)
    await progress.tool_started(call_id="1", tool="shell", hint="sleep 600")
    await progress.pulse()
    clock.now += 0.1  # within the throttle: stopping is shown all the same
    progress.stopping()
    await progress.pulse()
    assert channel.edited_texts == ["⏳ shell: `sleep 600`\n⏹ stopping…"]
    progress.stopped()
    await progress.aclose()
    assert channel.edited_texts[-1] == "⏹ shell: stopped\n⏹ stopped"


async def test_stopping_on_a_channel_without_edits_is_a_line_of_its_own() -> None:
    channel, clock = FakeChannel(REF), Clock()
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=False), clock)
    await progress.pulse()
    progress.stopping()
    progress.stopping()  # once
    await progress.pulse()
    assert channel.texts == ["⏹ stopping…"]
    progress.stopped()
    await progress.aclose()
    assert channel.texts == ["⏹ stopping…"]  # nothing was running: nothing more to say


class StatusChannel(FakeChannel):
    """A channel that shows a status line (its ``work_status``, a
    :class:`~bot.channel.WorkStatus`), recording each status shown with what had been sent
    by then."""

    def __init__(self, ref: ChannelRef) -> None:
        super().__init__(ref)
        self.statuses: list[tuple[str | None, int]] = []
        self.work_status = self

    def shows_status(self, target: DeliveryTarget) -> bool:
        return target.thread_id is not None

    async def show_status(self, target: DeliveryTarget, *, tool: str | None) -> None:
        self.statuses.append((tool, len(self.sent)))


async def test_a_status_line_names_the_running_tool_after_each_flush() -> None:
    channel, clock = StatusChannel(REF), Clock()
    in_thread = DeliveryTarget(channel=REF, conversation_id="c1", thread_id="t1")
    progress = ChannelProgress(channel, in_thread, Capabilities(can_edit=True), clock)
    await progress.pulse()
    assert channel.statuses == [(None, 0)]  # thinking
    await progress.tool_started(call_id="1", tool="shell", hint="cat secret.txt")
    await progress.pulse()
    # shown after the progress message was posted (a message posted clears Slack's status)
    assert channel.statuses[-1] == ("shell", 1)
    clock.now += 5
    await progress.pulse()
    assert len(channel.statuses) == 2  # unchanged and recent: not shown again
    await progress.waiting_for_approval(tool="deploy")
    clock.now += 120
    await progress.pulse()
    assert len(channel.statuses) == 2  # paused while waiting for approval
    await progress.approval_resolved(tool="deploy", approved=True)
    await progress.tool_finished(call_id="1", tool="shell", ok=True, duration_s=1.0)
    clock.now += 2
    await progress.pulse()
    assert channel.statuses[-1] == (None, 1)
    await progress.aclose()
    assert all("secret" not in str(tool) for tool, _ in channel.statuses)


async def test_no_status_line_where_the_channel_shows_none() -> None:
    channel, clock = StatusChannel(REF), Clock()
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=True), clock)
    await progress.tool_started(call_id="1", tool="shell", hint="ls")
    await progress.pulse()
    await progress.aclose()
    assert channel.statuses == []


class StreamingChannel(FakeChannel):
    """A channel that streams answers (its ``answer_stream``, a
    :class:`~bot.channel.AnswerStream`) until ``fail_after`` pieces were taken."""

    def __init__(self, ref: ChannelRef, *, fail_after: int = 100) -> None:
        super().__init__(ref)
        self.streamed: list[str] = []
        self.fail_after = fail_after
        self.answer_stream = self

    def streams_to(self, target: DeliveryTarget) -> bool:
        return True

    async def append(self, target: DeliveryTarget, text: str) -> None:
        if len(self.streamed) >= self.fail_after:
            raise ChannelError("message_not_in_streaming_state")
        self.streamed.append(text)


async def test_streamed_text_goes_to_the_answer_stream_not_the_progress_message() -> None:
    channel, clock = StreamingChannel(REF), Clock()
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=True), clock, stream=True)
    assert progress.wants_stream
    await progress.tool_started(call_id="1", tool="shell", hint="ls")
    await progress.stream_text("It rotates ")
    await progress.pulse()
    clock.now += 0.5
    await progress.stream_text("on Mondays.")
    await progress.pulse()  # throttled: nothing more yet
    assert channel.streamed == ["It rotates "]
    await progress.aclose()
    assert channel.streamed == ["It rotates ", "on Mondays."]
    assert all("Mondays" not in text for text in channel.texts + channel.edited_texts)


async def test_a_failed_stream_shows_the_draft_in_the_progress_message() -> None:
    channel, clock = StreamingChannel(REF, fail_after=1), Clock()
    progress = ChannelProgress(channel, TARGET, Capabilities(can_edit=True), clock, stream=True)
    await progress.stream_text("It rotates ")
    await progress.pulse()
    clock.now += 2
    await progress.stream_text("on Mondays.")
    await progress.pulse()
    await progress.aclose()
    assert channel.streamed == ["It rotates "]
    assert (channel.texts + channel.edited_texts)[-1] == "It rotates on Mondays."
