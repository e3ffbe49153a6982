"""The crash matrix: ``kill -9`` at each step of a turn, on each platform, then a restart.

Each case runs the real daemon (``python -m bot.cli run``) against one platform's loopback
fake (Telegram, Slack, Discord: the real client libraries) and an OpenAI-compatible fake,
with ``HATCHWAY_CRASH_AT=<point>`` (:mod:`bot.crashpoints`): the process kills itself with
SIGKILL the first time its turn reaches that point. One message is sent; its turn calls
``shell`` (a side effect the test counts: each run appends a line to a file), then answers.
The test waits for the process to die by SIGKILL and restarts it on the same state without
the crash point, the way a restart goes on the real platforms: the model answers only once
the platform is connected again (a model takes longer than a login), and where start-up
recovery itself tells the sender to ask again, it does so before the platform connection is
up (a local database read against a network round trip): Discord's login is held until the
notice is recorded in the outbox (the ledger records a reply just before sending it), so a
daemon that waited for the login before sending would still get its notice out.
(Telegram and Slack post over HTTP with nothing to wait for; a Discord reply check waits
for the login by design, so that login is not held.) Then it
sends a second message in the same conversation and waits for its answer (turns of one
conversation run in order), and, where recovery settles a reply whose send began (Telegram
checks it in the background, after start-up), for that settling; then it stops the daemon
with SIGTERM.

Then: the first message was answered exactly once, or (a turn cut off mid-way) its sender
was told once to ask again, never both; the command ran at most once (exactly as the
point implies); the model was asked as often as the point implies; every inbox entry is
``done`` or ``failed`` and every outbox reply ``sent`` or ``failed``; history has the answer
once when it was answered and not at all when it was not, the message once, and no tool
call without its result; ``PRAGMA integrity_check`` is ok.

Under ``agent.on_interrupted = "retry"``, a turn cut off after its model call asked only for
a read-only tool (``calculator``) is run again and answered, with no notice; one cut off
after ``shell`` ran is not run again (notice, the command ran once).

Two daemon starts per case, 29 cases. One case per platform
(``after_send``, the step the issue reports) is in the fast suite, the rest are ``slow``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
from aiohttp import web

from bot.gateway import SHUTDOWN_MESSAGE
from bot.gateway.ledger import REPEAT_MARKER
from tests.fakes.openai_server import Reply
from tests.ops.daemon_process import WAIT_S, DaemonProcess, start_daemon
from tests.reliability.crash_rig import daemon_env, lines, read_state, write_config
from tests.reliability.platform_drivers import (
    PLATFORMS,
    PlatformDriver,
    driven,
    redeliver,
)
from tests.reliability.routed_llm import RoutedOpenAI

Outcome = Literal["answered", "noticed"]
QUESTION = "ask-alpha: tidy the build"
ANSWER = "A-alpha: tidied"
LATER = "ask-omega: and now?"
LATER_ANSWER = "A-omega: all quiet"
NOTICE = SHUTDOWN_MESSAGE.split(". ")[-1]  # "Please ask again." survives every renderer
FAST_POINT = "after_send"
#: The points after which recovery settles a reply whose send began (its check may run in
#: the background, after the later message is answered).
SETTLED_BY_A_CHECK = (
    "after_answer",
    "after_record",
    "before_request",
    "after_request",
    "after_send",
)
RAN = "ran.txt"  # in the call's folder of the workspace (the shell's sandbox lets it write there)


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One crash point and what must follow it."""

    point: str
    outcome: Outcome
    shell_runs: int
    model_calls: int
    on_interrupted: Literal["notify", "retry"] = "notify"
    read_only: bool = False  # the model asks for ``calculator`` instead of ``shell``
    platforms: tuple[str, ...] = PLATFORMS  # where the point is on a turn's path
    nth: int = 1  # the time the turn reaches the point that kills it

    @property
    def crash_at(self) -> str:
        return self.point if self.nth == 1 else f"{self.point}:{self.nth}"

    @property
    def id(self) -> str:
        return self.point if self.on_interrupted == "notify" else f"retry-{self.point}"


CASES = (
    # still ``received``: queued again at start-up and answered
    Case(point="after_admit", outcome="answered", shell_runs=1, model_calls=2),
    # the model asked for the command, which never ran
    Case(point="after_model_call", outcome="noticed", shell_runs=0, model_calls=1),
    # the command ran, its result was never recorded
    Case(point="after_tool", outcome="noticed", shell_runs=1, model_calls=1),
    # the answer is in history with its reply recorded in the same trip (every platform
    # here can check a delivery), the progress line not closed, the request never made:
    # the check finds nothing, sent again
    Case(point="after_answer", outcome="answered", shell_runs=1, model_calls=2),
    # the reply recorded, its request never made: the check finds nothing, sent again
    Case(point="after_record", outcome="answered", shell_runs=1, model_calls=2),
    # Telegram: the answer (the turn's second message: its progress line is the first)
    # recorded by the adapter too, its request never made: nothing can bound the probe in a
    # chat with no other traffic, so the reply goes again, marked
    Case(
        point="before_request",
        outcome="answered",
        shell_runs=1,
        model_calls=2,
        platforms=("telegram",),
        nth=2,
    ),
    # Telegram: the answer's request made the message, its id never recorded: the edit
    # probe finds it
    Case(
        point="after_request",
        outcome="answered",
        shell_runs=1,
        model_calls=2,
        platforms=("telegram",),
        nth=2,
    ),
    # the platform took the answer, the ledger never heard: answered, and no notice
    Case(point="after_send", outcome="answered", shell_runs=1, model_calls=2),
    Case(point="after_mark", outcome="answered", shell_runs=1, model_calls=2),
    Case(
        point="after_model_call",
        outcome="answered",
        shell_runs=0,
        model_calls=3,
        on_interrupted="retry",
        read_only=True,
    ),
    Case(
        point="after_tool",
        outcome="noticed",
        shell_runs=1,
        model_calls=1,
        on_interrupted="retry",
    ),
)


def marks(platform: str, case: Case) -> tuple[pytest.MarkDecorator, ...]:
    found: list[pytest.MarkDecorator] = []
    if case.point != FAST_POINT or case.on_interrupted != "notify":
        # the rest of the matrix runs in .ci/run's second stage (-m long)
        found.extend((pytest.mark.slow, pytest.mark.long))
    return tuple(found)


def matrix() -> list[object]:
    """Every platform × every case; only ``after_send`` (notify) of each platform is fast and
    runs with README's test command, the others with ``-m long``."""
    return [
        pytest.param(platform, case, id=f"{platform}-{case.id}", marks=marks(platform, case))
        for platform in PLATFORMS
        for case in CASES
        if platform in case.platforms
    ]


class HeldOpenAI(RoutedOpenAI):
    """The routed model, holding every request while :attr:`open` is clear."""

    def __init__(self) -> None:
        super().__init__()
        self.open = asyncio.Event()
        self.open.set()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        await self.open.wait()
        return await super()._handle(request)


@pytest.fixture
async def llm() -> AsyncIterator[HeldOpenAI]:
    fake = HeldOpenAI()
    async with fake:
        yield fake


def script(llm: RoutedOpenAI, case: Case) -> None:
    if case.read_only:
        calc = Reply(tool_calls=(("calculator", {"expression": "6 * 7"}),))
        llm.answer("ask-alpha", calc, calc)  # the cut-off run's, then the retry's
    else:
        llm.answer("ask-alpha", Reply(tool_calls=(("shell", {"command": f"echo run >> {RAN}"}),)))
    llm.route_text("ask-alpha", ANSWER)
    llm.route_text("ask-omega", LATER_ANSWER)


def texts(driver: PlatformDriver) -> list[str]:
    return [p.text for p in driver.posts() if p.conversation == 0]


async def expect_post(daemon: DaemonProcess, driver: PlatformDriver, needle: str) -> None:
    try:
        await driver.wait_post(0, needle, WAIT_S)
    except TimeoutError:
        tail = "\n".join(json.dumps(e) for e in daemon.events[-40:])
        raise AssertionError(
            f"no post with {needle!r}; posts {texts(driver)}; last events:\n{tail}"
        ) from None


async def reply_recorded(db: Path, kind: str) -> None:
    """Wait until the outbox holds a reply of ``kind`` (the daemon writes the file: polled)."""
    for _ in range(int(WAIT_S / 0.02)):
        with contextlib.closing(sqlite3.connect(db)) as conn:
            found = conn.execute("SELECT 1 FROM outbox WHERE kind = ?", (kind,)).fetchall()
        if found:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {kind} recorded in the outbox")


@pytest.mark.parametrize(("platform", "case"), matrix())
async def test_kill_9_at_each_step(
    tmp_path: Path, llm: HeldOpenAI, platform: str, case: Case
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script(llm, case)
    async with driven(platform, conversations=1) as driver:
        config = write_config(
            tmp_path / "hatchway.toml",
            llm_url=llm.base_url,
            tables=[driver.channel_table()],
            workspace=workspace,
            on_interrupted=case.on_interrupted,
        )
        crashing = daemon_env(driver.environment(), crash_at=case.crash_at)
        async with start_daemon(config, env=crashing) as first:
            await first.wait_notify("READY", "1")
            await driver.connected()
            await driver.send(0, QUESTION)
            status = await first.wait_exit()
            assert status == -signal.SIGKILL, first.events[-20:]
            driver.went_down()
        # the first process said nothing after its crash point: a crash, not a stop
        assert "daemon_stopped" not in [e.get("event") for e in first.events]

        # The restart as on a real platform (module docstring): the model answers once the
        # platform is connected; a notice from recovery goes out before it is.
        driver.hold_connection(case.outcome == "noticed")
        llm.open.clear()
        async with start_daemon(config, env=daemon_env(driver.environment())) as second:
            if case.outcome == "noticed":
                await reply_recorded(tmp_path / "hatchway.db", "notice")
                driver.hold_connection(False)
            await second.wait_notify("READY", "1")
            await driver.connected()
            llm.open.set()
            await redeliver(driver)
            # turns of one conversation run in order: once the later message is answered,
            # whatever the restart did about the first one is done
            await driver.send(0, LATER)
            await expect_post(second, driver, LATER_ANSWER)
            # the first message's one answer or notice, whenever it comes: on Telegram a
            # cut-off turn is settled by a check in the background after READY (its retry
            # queued then), which may end after the later message was answered; a SIGTERM
            # before it leaves the entry for the next start, not told in this one
            await expect_post(second, driver, ANSWER if case.outcome == "answered" else NOTICE)
            if case.point in SETTLED_BY_A_CHECK:
                # a check may run in the background (Telegram's edit probe): its settling
                # is what the case is about
                await second.wait_event("reply_recovered")
            second.signal(signal.SIGTERM)
            assert await second.wait_exit() == 0, second.events[-20:]
        recovered = [e.get("outcome") for e in second.events if e.get("event") == "reply_recovered"]
        answered_after_restart = sum(
            1 for e in second.events if e.get("event") == "answer_sent_after_restart"
        )
        said = texts(driver)
        changed = driver.edits_that_changed()
        blind = driver.blind_edits_that_changed()

    # -- the sender heard exactly one thing about the first message ------------------------
    answers = sum(ANSWER in t for t in said)
    notices = sum(NOTICE in t for t in said)
    if case.outcome == "answered":
        assert (answers, notices) == (1, 0), said
    else:
        assert (answers, notices) == (0, 1), said
    assert sum(LATER_ANSWER in t for t in said) == 1, said
    # no probe changed a message (it edits only to what the message looked for says); the
    # edits that changed one are the progress line's, by the process that posted it
    assert blind == [], (blind, changed)

    # -- a reply the ledger never heard back about: looked for where the platform allows it
    if case.point in ("after_send", "after_request"):
        assert recovered == ["confirmed"]  # after_request: found by the edit probe
    elif case.point in ("after_answer", "after_record"):
        assert recovered == ["resent"] and answered_after_restart == 0
    elif case.point == "before_request":
        assert recovered == ["undecided"]
        assert sum(t.startswith(REPEAT_MARKER) for t in said) == 1, said
    elif case.point == "after_mark":
        assert recovered == []  # settled before the crash: nothing to recover

    # -- side effects and model calls ------------------------------------------------------
    assert len(lines(workspace, RAN)) == case.shell_runs
    assert llm.arrivals["ask-alpha"] == case.model_calls
    assert llm.arrivals["ask-omega"] == 1

    # -- the store agrees ------------------------------------------------------------------
    state = read_state(tmp_path / "hatchway.db")
    assert state.integrity == [("ok",)]
    assert state.unsettled_inbox() == []
    assert state.unsettled_outbox() == []
    first_status = "done" if case.outcome == "answered" else "failed"
    assert sorted(status for status, _ in state.inbox.values()) == sorted([first_status, "done"])
    first_kind = "answer" if case.outcome == "answered" else "notice"
    replies = sorted((kind, status) for _, _, kind, status in state.outbox)
    assert replies == sorted([(first_kind, "sent"), ("answer", "sent")])
    assert state.said("assistant", ANSWER) == (1 if case.outcome == "answered" else 0)
    assert state.said("user", "ask-alpha") <= 1
    assert state.said("assistant", LATER_ANSWER) == 1
    assert state.unanswered_calls() == []
    assert state.tool_calls.get("calculator", 0) == (1 if case.read_only else 0)
