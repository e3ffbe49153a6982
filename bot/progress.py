"""Progress lines: what the bot shows while it works.

The agent turn reports to a :class:`ProgressSink`; the turn runner
(:class:`bot.agent.runner.AgentRunner`) builds one per turn from the channel's
capabilities — :class:`ChannelProgress` edits one progress message where the
platform can edit and batches lines elsewhere. Lines never contain raw tool output: a start
line shows one argument (command, path, query or url, scrubbed and cut), an end line the
duration and a short reason.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Protocol, TypeVar

import structlog

from bot import telemetry
from bot.backoff import cancel_requested
from bot.channel import Channel, SentMessage
from bot.envelope import Capabilities, DeliveryTarget
from bot.errors import ChannelError
from bot.scrub import scrub_text
from bot.visible_text import visible

log = structlog.get_logger(__name__)

HINT_KEYS = ("command", "cmd", "path", "file", "query", "url", "pattern", "name")
HINT_CHARS = 60
CLOSE_WAIT_S = 5.0  # how long aclose lets a progress send or edit in flight finish
#: How often an unchanged status line is shown again (Slack drops one after two minutes).
STATUS_REFRESH_S = 60.0
_SPACES = re.compile(r"\s+")
_BACKTICK_RUN = re.compile(r"`+")
T = TypeVar("T")


class ProgressSink(Protocol):
    """Where a turn reports progress. Calls must return quickly (buffer, don't block on the
    platform) and must not raise. ``wants_stream`` asks the turn to stream reply text into
    :meth:`stream_text`."""

    @property
    def wants_stream(self) -> bool: ...

    async def tool_started(self, *, call_id: str, tool: str, hint: str) -> None: ...

    async def tool_finished(
        self, *, call_id: str, tool: str, ok: bool, duration_s: float, reason: str = ""
    ) -> None: ...

    async def waiting_for_approval(self, *, tool: str) -> None: ...

    async def ran_under_grant(self, *, call_id: str, line: str) -> None:
        """The call ``call_id`` runs without a card because a grant covers it: ``line``
        (:func:`grant_line`) says which, so nobody wonders why no card came."""
        ...

    async def approval_resolved(self, *, tool: str, approved: bool) -> None:
        """The wait is over: an approved call goes on to run (and shows its own line); a
        refused one replaces the waiting line with :func:`not_approved_line`, so the
        progress message never ends on "waiting for approval"."""
        ...

    async def stream_text(self, delta: str) -> None: ...

    async def aclose(self) -> None: ...


class NullProgress:
    """A sink that shows nothing (background turns, tests)."""

    @property
    def wants_stream(self) -> bool:
        return False

    async def tool_started(self, *, call_id: str, tool: str, hint: str) -> None:
        return None

    async def tool_finished(
        self, *, call_id: str, tool: str, ok: bool, duration_s: float, reason: str = ""
    ) -> None:
        return None

    async def waiting_for_approval(self, *, tool: str) -> None:
        return None

    async def ran_under_grant(self, *, call_id: str, line: str) -> None:
        return None

    async def approval_resolved(self, *, tool: str, approved: bool) -> None:
        return None

    async def stream_text(self, delta: str) -> None:
        return None

    async def aclose(self) -> None:
        return None


# -- lines -------------------------------------------------------------------------------


def cut(text: str, limit: int = HINT_CHARS) -> str:
    text = _SPACES.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def progress_hint(arguments: Mapping[str, object]) -> str:
    """The first command/path/query/url-like argument, scrubbed and cut to ~60 chars."""
    for key in HINT_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return cut(visible(scrub_text(value)))
    return ""


def literal(text: str) -> str:
    """``text`` as a markdown code span, so no channel renders markup, a link or a mention
    from it: fenced by one backtick more than its longest backtick run (CommonMark)."""
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text[:1] == "`" or text[-1:] == "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def started_line(tool: str, hint: str) -> str:
    return f"⏳ {tool}: {literal(hint)}" if hint else f"⏳ {tool}"


def finished_line(tool: str, *, ok: bool, duration_s: float, reason: str = "") -> str:
    took = f"({duration_s:.1f}s)"
    if ok:
        return f"✅ {tool} {took}"
    if not reason:
        return f"❌ {tool} {took}"
    return f"❌ {tool} {took}: {literal(cut(visible(reason)))}"


def stopped_line(tool: str) -> str:
    return f"⏹ {tool}: stopped"


STOPPED_LINE = "⏹ stopped"
#: The closing line of a turn the daemon's stop cut off (the reply says to ask again).
SHUTDOWN_LINE = "⏹ interrupted: the bot is shutting down"
STOPPING_LINE = "⏹ stopping…"


def waiting_line(tool: str) -> str:
    return f"🔐 waiting for approval: {tool}"


def not_approved_line(tool: str) -> str:
    return f"🚫 {tool}: not approved, not run"


def grant_line(tool: str, *, grant_id: int, granted_by: str, expires_at: float | None) -> str:
    """``🔓 shell: ran under grant #3 by U01, expires 2026-12-06 16:45 UTC`` (or ``never``)."""
    expires = "never" if expires_at is None else when_utc(expires_at)
    return f"🔓 {tool}: ran under grant #{grant_id} by {visible(granted_by)}, expires {expires}"


def when_utc(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")


# -- channel sink ------------------------------------------------------------------------


class ChannelProgress:
    """Progress for one turn in one conversation.

    With ``capabilities.can_edit`` one progress message is sent and then edited, at most
    once per ``edit_interval_s``; otherwise new lines are batched and sent at most once per
    ``batch_interval_s``. With ``capabilities.streams_text`` and a channel that has a
    :class:`LiveText`, the reply's text goes to the channel delta by delta, whatever
    ``stream`` says (a terminal shows it as it comes). Pending text is always flushed by
    :meth:`aclose`. With ``capabilities.typing`` the typing indicator is refreshed every
    ``typing_interval_s`` while the turn works and paused while it waits for an approval.
    Where the channel shows a status line for the target (its
    :class:`~bot.channel.WorkStatus`), the running tool's name (or thinking) is shown there
    after each flush, when it changes and every :data:`STATUS_REFRESH_S`, and likewise
    paused while waiting. Where the channel streams answers to the target (its
    :class:`~bot.channel.AnswerStream`), streamed text goes there under the same throttle
    instead of into the progress message; if the stream fails, the rest is shown in the
    progress message as elsewhere. One owned background task (the ticker) does that:
    :meth:`start` (or ``async with``) starts it where typing is shown, otherwise the first
    text to show does; :meth:`aclose` ends it.

    The sink methods never wait for the platform: they update the text and wake the ticker,
    which sends or edits. A turn's tool calls therefore do not queue behind a progress round
    trip to Slack, Discord or Telegram. The ticker sleeps until it is woken: at once when text
    may be shown now, else by a timer set for when the throttle or the typing refresh falls
    due, so a turn with nothing to show costs no periodic wake-ups.
    """

    def __init__(
        self,
        channel: Channel,
        target: DeliveryTarget,
        capabilities: Capabilities,
        clock: Callable[[], float] = time.monotonic,
        *,
        edit_interval_s: float = 1.0,
        batch_interval_s: float = 3.0,
        typing_interval_s: float = 4.0,
        stream: bool = False,
    ) -> None:
        self._channel = channel
        self._target = target
        self._caps = capabilities
        self._clock = clock
        self._interval = edit_interval_s if capabilities.can_edit else batch_interval_s
        self._typing_interval = typing_interval_s
        self._stream = stream
        self._live = channel.live_text if capabilities.streams_text else None
        self._lines: dict[str, str] = {}  # edit mode: key → current line
        self._running: dict[str, str] = {}  # calls started and not finished: key → tool
        self._pending: list[str] = []  # batch mode: lines not yet sent
        self._draft = ""
        self._dirty = False
        self._message: SentMessage | None = None
        self._last_flush = -math.inf
        self._last_typing = -math.inf
        self._waiting = 0
        self._stopping = False
        self._closed = False
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None  # the ticker's next wake-up
        self._busy = False  # the ticker is in a pulse (perhaps a platform call)
        self._ticker: asyncio.Task[None] | None = None
        status = channel.work_status
        self._status = status if status is not None and status.shows_status(target) else None
        self._status_shown: tuple[str | None] | None = None  # the tool last shown, if any
        self._last_status = -math.inf
        streams = channel.answer_stream
        self._answers = streams if streams is not None and streams.streams_to(target) else None
        self._streamed = 0  # how much of the draft the answer stream has

    @property
    def wants_stream(self) -> bool:
        streams = self._stream and (self._caps.can_edit or self._answers is not None)
        return streams or self._live is not None

    async def start(self) -> None:
        """Start showing typing, where the channel shows it; without typing the ticker
        starts with the first text to show."""
        if self._caps.typing or self._status is not None:
            self._ensure_ticker()

    def _ensure_ticker(self) -> None:
        # the one owned background task, cancelled by aclose()
        if self._ticker is None and not self._closed:
            self._ticker = asyncio.create_task(self._tick_forever(), name="progress-ticker")

    async def __aenter__(self) -> ChannelProgress:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def shown(self) -> tuple[str, list[tuple[str, str]]] | None:
        """The progress message shown and its lines (key, line), where one message is
        edited and it was sent: a parked turn keeps them, for its resumption to
        :meth:`continue_from`. None otherwise."""
        if not self._caps.can_edit or self._message is None:
            return None
        return self._message.message_id, list(self._lines.items())

    def continue_from(self, message_id: str, lines: Sequence[tuple[str, str]]) -> None:
        """Go on in the message ``message_id`` of this target, which showed ``lines`` (a
        parked turn's, resumed): it is edited, no new one is sent. A line still waiting for
        approval counts as waiting, so :meth:`approval_resolved` closes it. Call it before
        anything is shown; a channel that cannot edit ignores it."""
        if not self._caps.can_edit or self._message is not None or self._lines:
            return
        self._message = SentMessage(target=self._target, message_id=message_id)
        for key, line in lines:
            self._lines[key] = line
            if key.startswith("approval:"):
                self._running[key] = key.removeprefix("approval:")
                self._waiting += 1

    # -- sink --------------------------------------------------------------------------

    async def tool_started(self, *, call_id: str, tool: str, hint: str) -> None:
        self._running[call_id] = tool
        self._show(call_id, started_line(tool, hint))

    async def tool_finished(
        self, *, call_id: str, tool: str, ok: bool, duration_s: float, reason: str = ""
    ) -> None:
        self._running.pop(call_id, None)
        self._show(call_id, finished_line(tool, ok=ok, duration_s=duration_s, reason=reason))

    async def ran_under_grant(self, *, call_id: str, line: str) -> None:
        self._show(f"grant:{call_id}", line)

    async def waiting_for_approval(self, *, tool: str) -> None:
        self._waiting += 1
        self._running[f"approval:{tool}"] = tool
        self._show(f"approval:{tool}", waiting_line(tool))

    def stopping(self) -> None:
        """The turn was asked to stop and has not ended yet (a tool being killed, a model
        that cannot stop before it has read its prompt): "⏹ stopping…" is shown at once,
        whatever the throttle, where a progress message is shown (and, on a channel that
        cannot edit, as a line), until :meth:`stopped` closes the message."""
        if self._closed or self._stopping:
            return
        self._stopping = True
        if not self._caps.can_edit or self._message is not None or self._lines:
            self._last_flush = -math.inf  # due now
            self._show("stopped", STOPPING_LINE)

    def stopped(self, *, shutdown: bool = False) -> None:
        """The turn was stopped (``/stop``, Ctrl-C): every call still shown as running or
        waiting for approval reads "⏹ tool: stopped", and a progress message already shown
        ends with "⏹ stopped", so that it never stays at ``⏳``; ``shutdown``: the daemon's
        stop cut it off, and the message ends with :data:`SHUTDOWN_LINE` instead (nobody
        stopped it). Call it before :meth:`aclose`, which shows the change."""
        for key, tool in self._running.items():
            self._show(key, stopped_line(tool))
        self._running.clear()
        self._waiting = 0
        if self._caps.can_edit and (self._message is not None or self._lines):
            self._show("stopped", SHUTDOWN_LINE if shutdown else STOPPED_LINE)

    async def approval_resolved(self, *, tool: str, approved: bool) -> None:
        self._waiting = max(0, self._waiting - 1)
        key = f"approval:{tool}"
        self._running.pop(key, None)
        if not approved:
            self._show(key, not_approved_line(tool))
        elif self._lines.pop(key, None) is not None:
            self._changed()
        elif self._ticker is not None:
            self._arm()  # typing resumes

    async def stream_text(self, delta: str) -> None:
        if self._live is not None:
            if delta and not self._closed:
                if self._dirty:
                    await self._flush()  # the lines before the text come before it
                self._live.stream_text(delta)
        elif self.wants_stream and delta:
            self._draft += delta
            self._changed()

    async def pulse(self) -> None:
        """One tick: refresh typing when due (not while waiting for approval), flush when
        the throttle allows."""
        now = self._clock()
        if (
            self._caps.typing
            and not self._waiting
            and now - self._last_typing >= self._typing_interval
        ):
            self._last_typing = now
            await self._call(self._channel.typing(self._target), "typing")
        await self._flush_if_due()
        await self._status_if_due(now)

    def _current_tool(self) -> str | None:
        tools = [tool for key, tool in self._running.items() if not key.startswith("approval:")]
        return tools[-1] if tools else None

    async def _status_if_due(self, now: float) -> None:
        """Show the status line after the flush (a message posted clears Slack's) when the
        running tool changed or the last one is :data:`STATUS_REFRESH_S` old."""
        if self._status is None or self._waiting or self._closed or self._stopping:
            return
        shown = (self._current_tool(),)
        if shown == self._status_shown and now - self._last_status < STATUS_REFRESH_S:
            return
        self._status_shown, self._last_status = shown, now
        await self._call(self._status.show_status(self._target, tool=shown[0]), "status")

    async def aclose(self) -> None:
        """Stop the ticker and show the final text. A send or edit already in flight is
        allowed to finish (up to :data:`CLOSE_WAIT_S`): cut off, it could leave a message on
        the platform that this sink does not know about, and the final flush would post a
        second one."""
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        if self._ticker is not None:
            if self._busy:
                self._wake.set()
                done, _ = await asyncio.wait({self._ticker}, timeout=CLOSE_WAIT_S)
                if not done:
                    self._ticker.cancel()
            else:  # asleep: nothing of it is in flight
                self._ticker.cancel()
            try:
                await self._ticker
            except asyncio.CancelledError:
                if cancel_requested():  # this task is being stopped, not only the ticker
                    raise
        await self._flush()

    # -- internals ---------------------------------------------------------------------

    def _show(self, key: str, line: str) -> None:
        if self._caps.can_edit:
            self._lines[key] = line
        else:
            self._pending.append(line)
        self._changed()

    def _changed(self) -> None:
        self._dirty = True
        self._ensure_ticker()
        if self._clock() - self._last_flush >= self._interval:
            self._wake.set()  # due now
        else:
            self._arm()

    def _arm(self) -> None:
        """Set the ticker's timer for the next throttled flush or typing refresh."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        due = self._last_flush + self._interval if self._dirty else math.inf
        if self._caps.typing and not self._waiting:
            due = min(due, self._last_typing + self._typing_interval)
        if self._status is not None and not self._waiting:
            due = min(due, self._last_status + STATUS_REFRESH_S)
        if due < math.inf and not self._closed:
            delay = max(0.0, due - self._clock())
            self._timer = asyncio.get_running_loop().call_later(delay, self._wake.set)

    async def _tick_forever(self) -> None:
        while not self._closed:
            self._busy = True
            try:
                await self.pulse()
            finally:
                self._busy = False
            self._arm()
            await self._wake.wait()
            self._wake.clear()

    async def _flush_if_due(self) -> None:
        if self._dirty and self._clock() - self._last_flush >= self._interval:
            await self._flush()

    async def _flush(self) -> None:
        async with self._lock:
            if not self._dirty:
                return
            self._dirty = False
            self._last_flush = self._clock()
            await self._stream_answer()
            if not self._caps.can_edit:
                text = "\n".join(self._pending)
                self._pending.clear()
                if text:
                    await self._call(self._channel.send(self._target, text), "send")
                return
            text = self._render()
            if not text:
                return
            if self._message is None:
                sent = await self._call(self._channel.send(self._target, text), "send")
                self._message = sent[0] if sent else None
                if self._message is None:
                    self._dirty = True  # not shown yet: try again on the next flush
            else:
                await self._call(self._channel.edit(self._message, text), "edit")

    async def _stream_answer(self) -> None:
        """Give the answer stream the draft it does not have yet; when it fails, the draft
        is shown in the progress message from then on."""
        if self._answers is None or len(self._draft) <= self._streamed:
            return
        pending = self._draft[self._streamed :]
        try:
            with telemetry.send(self._target.channel.kind, "progress") as span:
                span.set("hatchway.send.action", "stream")
                await self._answers.append(self._target, pending)
        except ChannelError as exc:
            log.warning("answer_stream_failed", error=scrub_text(str(exc)))
            self._answers = None
            return
        self._streamed += len(pending)

    def _render(self) -> str:
        lines = list(self._lines.values())
        if self._draft and self._answers is None:
            lines.append(cut(self._draft[-400:], 400))
        limit = max(self._caps.max_message_chars - 2, 100)
        text = "\n".join(lines)
        while len(text) > limit and len(lines) > 1:
            lines = lines[1:]
            text = "…\n" + "\n".join(lines)
        return text[:limit]

    async def _call(self, action: Awaitable[T], what: str) -> T | None:
        """Run one platform call; a platform failure never breaks the turn."""
        try:
            with telemetry.send(self._target.channel.kind, "progress") as span:
                span.set("hatchway.send.action", what)
                return await action
        except ChannelError as exc:
            log.warning("progress_update_failed", action=what, error=scrub_text(str(exc)))
            return None
