"""The crash matrix's Slack-only point ``mid_stream``: ``kill -9`` while an answer is being
streamed into an assistant thread, then a restart.

The real daemon (``python -m bot.cli run``) runs the Slack channel with the assistant surface
against the loopback Slack and an OpenAI-compatible fake whose stream never ends (so the
answer is cut off mid-stream whatever the machine's load), with ``HATCHWAY_CRASH_AT=mid_stream``:
the process kills itself once ``chat.startStream`` answered and the stream's ``ts`` was
recorded. Restarted on the same state, recovery finds the turn cut off before its answer and
tells the person to ask again; that notice, keyed like every reply, finishes the message the
crash left streaming (``chat.stopStream``, ``chat.update`` with the notice and its metadata)
instead of posting another. A later question in the thread is answered, streamed and finished
the same way. Then: one message per reply in the thread, none left streaming, every inbox
entry and outbox reply settled, the stream's record gone.

The same thread cut off at ``after_answer`` (the model's stream held until Slack's stream
started, so the answer was streaming when the turn ended): the answer is recorded, the check
finds no message with its key (a streamed message has none yet), and the answer sent again by
recovery finishes the streamed message: answered once, in one message.
"""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot.gateway import SHUTDOWN_MESSAGE
from tests.fakes.openai_server import Reply
from tests.fakes.slack_server import BOT_USER, FakeSlack, event_callback, message_event
from tests.ops.daemon_process import WAIT_S, start_daemon
from tests.reliability.crash_rig import daemon_env, write_config
from tests.reliability.platform_drivers import SLACK_APP_TOKEN, SLACK_BOT_TOKEN, SlackDriver
from tests.reliability.routed_llm import Endless, RoutedOpenAI

pytestmark = [pytest.mark.slow, pytest.mark.long]

USER = "U000001"
DM = "D000001"
THREAD = "1600000000.000100"
QUESTION = "ask-alpha: when does the key rotate?"
LATER = "ask-omega: and now?"
LATER_ANSWER = "A-omega: all quiet"
NOTICE = SHUTDOWN_MESSAGE.split(". ")[-1]
ANSWER = "A-alpha: it rotates on Mondays"


class HeldStream(RoutedOpenAI):
    """The routed model; a streamed answer to ``ask-alpha`` sends its first delta, then
    waits for :attr:`hold` before the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.hold: Callable[[], Awaitable[object]] | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if self.hold is None or self._key_of(body) != "ask-alpha" or not body.get("stream"):
            return await super()._handle(request)
        self._record(request, body)
        events = self.render_stream(Reply(text=ANSWER), body)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(events[0].encode())
        await self.hold()
        for event in events[1:]:
            await response.write(event.encode())
        await response.write_eof()
        return response


@pytest.fixture
async def llm() -> AsyncIterator[HeldStream]:
    fake = HeldStream()
    fake.text_chunk_chars = 8
    async with fake:
        yield fake


def config(tmp_path: Path, llm: RoutedOpenAI, driver: SlackDriver) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    path = write_config(
        tmp_path / "hatchway.toml",
        llm_url=llm.base_url,
        tables=[driver.channel_table() + "\n[channels.slack.main.assistant]\nenabled = true\n"],
        workspace=workspace,
    )
    text = path.read_text(encoding="utf-8")
    # the model streams: the answer goes into the thread as it is written
    path.write_text(text.replace("max_retries = 0\n", "max_retries = 0\nstream = true\n", 1))
    return path


async def ask(slack: FakeSlack, text: str, ts: str) -> None:
    event = message_event(text, user=USER, channel=DM, ts=ts, thread_ts=THREAD)
    await slack.wait_ack(await slack.push("events_api", event_callback(event)))


def thread_messages(slack: FakeSlack) -> list[dict[str, Any]]:
    """The bot's messages in the thread (its root, Slack's, left out), in order."""
    return [
        m
        for (channel, _), m in slack.messages.items()
        if channel == DM
        and m.get("user") == BOT_USER
        and m.get("subtype") != "assistant_app_thread"
    ]


async def crash_in_the_thread(path: Path, driver: SlackDriver, crash_at: str) -> None:
    """An assistant thread starts and the person asks :data:`QUESTION` there; the daemon
    dies at the crash point ``crash_at`` (``kill -9``)."""
    slack = driver.fake
    started = slack.assistant.start(user=USER, dm_channel=DM, thread_ts=THREAD)
    crashing = daemon_env(driver.environment(), crash_at=crash_at)
    async with start_daemon(path, env=crashing) as first:
        await first.wait_notify("READY", "1")
        await driver.connected()
        await slack.wait_ack(await slack.push("events_api", started))
        await ask(slack, QUESTION, "1600000000.000200")
        assert await first.wait_exit() == -signal.SIGKILL, first.events[-20:]
        driver.went_down()


async def ask_later(path: Path, driver: SlackDriver) -> list[dict[str, Any]]:
    """The next daemon answers :data:`LATER` in the thread, then stops; its events."""
    slack = driver.fake
    async with start_daemon(path, env=daemon_env(driver.environment())) as second:
        await second.wait_notify("READY", "1")
        await driver.connected()
        await ask(slack, LATER, "1600000000.000300")
        await slack.wait_for(
            "chat.update", where=lambda p: LATER_ANSWER in str(p.get("text")), wait_s=WAIT_S
        )
        second.signal(signal.SIGTERM)
        assert await second.wait_exit() == 0, second.events[-20:]
    return list(second.events)


async def test_kill_9_mid_stream(tmp_path: Path, llm: RoutedOpenAI) -> None:
    llm.answer("ask-alpha", Endless())
    llm.route_text("ask-omega", LATER_ANSWER)
    async with FakeSlack(SLACK_BOT_TOKEN, SLACK_APP_TOKEN) as slack:
        driver = SlackDriver(fake=slack)
        path = config(tmp_path, llm, driver)
        await crash_in_the_thread(path, driver, "mid_stream")
        [cut] = thread_messages(slack)
        assert cut["streaming"], cut  # Slack still shows the half-written answer

        await ask_later(path, driver)

    messages = thread_messages(slack)
    texts = [str(m.get("text")) for m in messages]
    # the crash's message was finished by the notice: not a second message beside it
    assert messages[0]["ts"] == cut["ts"] and NOTICE in texts[0], texts
    assert sum(NOTICE in t for t in texts) == 1 and sum(LATER_ANSWER in t for t in texts) == 1
    assert [m for m in messages if m.get("streaming")] == []
    assert all(m.get("metadata", {}).get("event_type") for m in messages if NOTICE in m["text"])
    assert [c for c in slack.calls_of("chat.postMessage") if NOTICE in c.params["text"]] == []
    with closing(sqlite3.connect(tmp_path / "hatchway.db")) as db:
        inbox = db.execute("SELECT status FROM inbox").fetchall()
        outbox = db.execute("SELECT status FROM outbox").fetchall()
        streams = db.execute("SELECT key FROM channel_state WHERE key LIKE 'stream:%'").fetchall()
    assert sorted(s for (s,) in inbox) == ["done", "failed"]
    assert {s for (s,) in outbox} == {"sent"}
    assert streams == []


async def test_kill_9_after_a_streamed_answer(tmp_path: Path, llm: HeldStream) -> None:
    llm.route_text("ask-alpha", ANSWER)  # the route's key; the answer is streamed held
    llm.route_text("ask-omega", LATER_ANSWER)
    async with FakeSlack(SLACK_BOT_TOKEN, SLACK_APP_TOKEN) as slack:
        llm.hold = lambda: slack.wait_for("chat.startStream", wait_s=WAIT_S)
        driver = SlackDriver(fake=slack)
        path = config(tmp_path, llm, driver)
        await crash_in_the_thread(path, driver, "after_answer")
        [cut] = thread_messages(slack)
        assert cut["streaming"] and ANSWER.startswith(cut["text"]), cut

        llm.hold = None
        second = await ask_later(path, driver)
        recovered = [e.get("outcome") for e in second if e.get("event") == "reply_recovered"]

    messages = thread_messages(slack)
    texts = [str(m.get("text")) for m in messages]
    assert recovered == ["resent"]
    # answered once, in the message that was streaming when the process died
    assert messages[0]["ts"] == cut["ts"] and texts[0] == ANSWER, texts
    assert sum(ANSWER in t for t in texts) == 1 and not any(NOTICE in t for t in texts)
    assert [m for m in messages if m.get("streaming")] == []
    assert [c for c in slack.calls_of("chat.postMessage") if ANSWER in c.params["text"]] == []
