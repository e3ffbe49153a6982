"""The process resuming a parked turn is killed between running the tool and recording its
result (docs/approvals.md, "Parking and resumption"; crash point ``after_tool``), against the
real daemon process and each platform's fake.

A card for ``shell`` (not ``retry_safe``: each run appends a line to a file) is posted and the
daemon stopped, so the turn parks; the next daemon, started with ``HATCHWAY_CRASH_AT=after_tool``,
takes the tap on the original card, resumes the turn, runs the command and kills itself with
``SIGKILL`` before anything of its result is recorded. A third daemon parks the cut-off
resumption again and resumes it once more: the command is not run a second time (one line in
the file), its call is recorded once with its result unknown, the model is told so, and the
answer arrives once, as the reply to the original message; nobody is told to ask again.
"""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.gateway.recovery import SHUTDOWN_MESSAGE
from tests.fakes.openai_server import Reply
from tests.ops.daemon_process import WAIT_S, start_daemon
from tests.reliability.crash_rig import daemon_env, lines
from tests.reliability.platform_drivers import driven
from tests.reliability.routed_llm import RoutedOpenAI
from tests.reliability.test_parked_approval import platform_config, until_card_stored

pytestmark = pytest.mark.long

ANSWER = "the command may have run"
RAN = "ran.txt"


@pytest.fixture
async def llm() -> AsyncIterator[RoutedOpenAI]:
    async with RoutedOpenAI() as fake:
        yield fake


@pytest.mark.parametrize("name", ["telegram", "slack", "discord"])
async def test_a_resumer_killed_after_the_tool_ran_does_not_run_it_again(
    tmp_path: Path, llm: RoutedOpenAI, name: str
) -> None:
    db = tmp_path / "hatchway.db"
    async with driven(name) as driver:
        config = platform_config(tmp_path, driver, llm)
        llm.answer(
            "q-cut",
            Reply(tool_calls=(("shell", {"command": f"echo run >> {RAN}"}),)),
            Reply(text=ANSWER),
        )
        env = daemon_env(driver.environment())
        # 1. the card is posted; a stop parks the turn
        async with start_daemon(config, env=env) as daemon:
            await daemon.wait_notify("READY", "1")
            await driver.connected()
            await driver.send(1, "q-cut: run it")
            await driver.wait_card(1, WAIT_S)
            await until_card_stored(db)
            daemon.signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
        driver.went_down()
        assert driver.card(1)  # still open

        # 2. the tap resumes the turn; the process dies right after the command ran
        crashing = daemon_env(driver.environment(), crash_at="after_tool")
        async with start_daemon(config, env=crashing) as daemon:
            await daemon.wait_notify("READY", "1")
            await driver.connected()
            await driver.approve(1)
            assert await daemon.wait_exit() == -signal.SIGKILL
        driver.went_down()
        assert len(lines(tmp_path / "workspace", RAN)) == 1

        # 3. the next start resumes it again: the command does not run again
        async with start_daemon(config, env=env) as daemon:
            await daemon.wait_notify("READY", "1")
            await driver.connected()
            await driver.wait_post(1, ANSWER, WAIT_S)
            daemon.signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0

    assert len(lines(tmp_path / "workspace", RAN)) == 1  # ran once
    texts = [p.text for p in driver.posts()]
    assert [t for t in texts if ANSWER in t] == [ANSWER]  # answered once
    assert SHUTDOWN_MESSAGE not in texts
    assert not [t for t in texts if "ask again" in t]
    # the model was told that the call's result is unknown and that it was not run again
    told = [r.body for r in llm.requests if "Result unknown" in str(r.body)]
    assert len(told) == 1
    with sqlite3.connect(db) as conn:
        inbox = conn.execute("SELECT status FROM inbox").fetchall()
        parked = conn.execute("SELECT COUNT(*) FROM parked_turns").fetchone()
        calls = conn.execute(
            "SELECT status, observation FROM tool_calls WHERE tool = 'shell'"
        ).fetchall()
    assert inbox == [("done",)]
    assert parked == (0,)
    # one row for the call: not "executed" (its result was never seen), its result unknown
    [(status, observation)] = calls
    assert status == "interrupted"
    assert observation.startswith("Result unknown")
