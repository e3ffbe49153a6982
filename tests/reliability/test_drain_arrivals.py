"""A message that arrives while the daemon drains is not lost: it is left to the platform and
answered after the restart.

One real daemon (``hatchway run``, a SQLite file) per platform, through its loopback fake. A
first message's model call is held; SIGTERM starts the drain, which waits for that turn; a
second message arrives during the drain. The gateway does not take it, and must not let the
adapter confirm it to the platform either (a Telegram offset moved past it, a Slack event's
journal row deleted, a Discord watermark moved past it): dropping it there loses it for
good. (A message that got past the drain's check just before the drain began is in the inbox
and is answered either way.) The first turn then finishes and the daemon exits 0; started
again, it answers the second message, once. (With several replicas a stopping replica admits
the message and leaves its turn to the session's next owner: ``test_replica_rolling.py``.)
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.ops.conftest import HeldOpenAI
from tests.ops.daemon_process import WAIT_S, start_daemon
from tests.reliability.crash_rig import daemon_env, write_config
from tests.reliability.platform_drivers import PlatformDriver, driven, redeliver

# two daemon processes per platform, stopped and started again: .ci/run's second stage
pytestmark = [pytest.mark.slow, pytest.mark.long]

FIRST, FIRST_ANSWER = "ask-first: a slow one", "A-first: done slowly"
LATE, LATE_ANSWER = "ask-late: sent while it stops", "A-late: answered after the restart"


@pytest.fixture
async def llm() -> AsyncIterator[HeldOpenAI]:
    async with HeldOpenAI() as fake:
        yield fake


def reached_gateway(events: list[dict[str, object]]) -> bool:
    """The late message was refused by the drain, or (it got past the drain's check just
    before the drain began) queued behind the first one."""
    names = [e.get("event") for e in events]
    return "envelope_refused_shutting_down" in names or names.count("envelope_queued") >= 2


def said(driver: PlatformDriver, needle: str) -> int:
    return sum(needle in p.text for p in driver.posts() if p.conversation == 0)


@pytest.mark.parametrize("platform", ["telegram", "slack", "discord"])
async def test_a_message_arriving_during_the_drain_is_answered_after_the_restart(
    tmp_path: Path, llm: HeldOpenAI, platform: str
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    llm.queue_text(FIRST_ANSWER)
    llm.queue_text(LATE_ANSWER)
    async with driven(platform, conversations=1) as driver:
        config = write_config(
            tmp_path / "hatchway.toml",
            llm_url=llm.base_url,
            tables=[driver.channel_table()],
            workspace=workspace,
        )
        env = daemon_env(driver.environment())
        async with start_daemon(config, env=env) as first:
            await first.wait_notify("READY", "1")
            await driver.connected()
            llm.hold_next()
            await driver.send(0, FIRST)
            async with asyncio.timeout(WAIT_S):
                await llm.arrived.wait()
            first.signal(signal.SIGTERM)
            await first.wait_event("drain_started")
            await driver.send(0, LATE)
            await first.wait_until(lambda: reached_gateway(first.events), "the late message")
            llm.release()
            assert await first.wait_exit() == 0, first.events[-20:]
            crashed = [e for e in first.events if e.get("event") == "channel_crashed"]
            assert crashed == []
            await driver.wait_post(0, FIRST_ANSWER, WAIT_S)
        driver.went_down()

        async with start_daemon(config, env=env) as second:
            await second.wait_notify("READY", "1")
            await driver.connected()
            await redeliver(driver)
            await driver.wait_post(0, LATE_ANSWER, WAIT_S)
            second.signal(signal.SIGTERM)
            assert await second.wait_exit() == 0, second.events[-20:]

        assert said(driver, FIRST_ANSWER) == 1
        assert said(driver, LATE_ANSWER) == 1
        assert len(llm.requests) == 2
