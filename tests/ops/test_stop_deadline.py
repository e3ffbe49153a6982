"""The stop's last resort, in real processes: a process still alive when its stop deadline
expires is ended with status 1 and one ``stop_deadline_exceeded`` event, even with its event
loop blocked; a process that finishes in time is not held up by the armed deadline."""

from __future__ import annotations

import asyncio
import json
import sys

from tests.ops.daemon_process import ROOT

GUARD_S = 60.0  # failure guard only


async def run_python(code: str) -> tuple[int, list[dict[str, object]]]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(ROOT),
    )
    async with asyncio.timeout(GUARD_S):
        _, stderr = await proc.communicate()
    events = [json.loads(line) for line in stderr.decode().splitlines() if line.startswith("{")]
    return proc.returncode or 0, events


SETUP = """
import time
from bot.ops.logs import configure_logging
from bot.ops.stop_deadline import StopDeadline
configure_logging("info", "json")
"""


async def test_a_process_stuck_past_its_deadline_is_ended() -> None:
    # time.sleep blocks the main thread the way a stuck call or a hung loop teardown would
    status, events = await run_python(SETUP + "StopDeadline(0.2).arm()\ntime.sleep(600)\n")
    assert status == 1
    assert [(e["event"], e["exit_status"]) for e in events] == [("stop_deadline_exceeded", 1)]


async def test_a_process_that_exits_in_time_is_not_held_up() -> None:
    status, events = await run_python(SETUP + "StopDeadline(600).arm()\nprint('done')\n")
    assert status == 0
    assert events == []
