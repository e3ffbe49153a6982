"""``bench/crash_load.py`` in small: per platform, 8 conversations x 2 messages, the daemon
killed with SIGKILL in each of 3 rounds (from outside or at a random crash point), then
settled; see the bench's docstring for what is counted.

Every platform must show no message lost, none answered twice without the mark of a
possible repeat, none both answered and told to ask again, no ``shell`` command run twice,
every notice on the platform recorded in the outbox, no edit of Telegram's probe that
changed a message, and an intact database. (Discord's catch-up reaches channels first posted
to while the daemon was down through its watermark; Telegram's sends cut off by a kill are
found by the edit probe, or sent again marked.)
"""

from __future__ import annotations

import random

import pytest

from bench.crash_load import parse, run_platform

pytestmark = [pytest.mark.slow, pytest.mark.long]

SMALL = ("--conversations", "8", "--messages", "2", "--rounds", "3", "--settle-seconds", "20")


@pytest.mark.parametrize("platform", ["telegram", "slack", "discord"])
async def test_load_under_kill_9(platform: str) -> None:
    args = parse(["--platform", platform, "--seed", "5", *SMALL])
    tally = await run_platform(platform, args, random.Random(args.seed))
    print(tally.table())
    assert tally.twice() == []
    assert tally.both() == []
    assert tally.ran_twice() == []
    assert tally.notices_unaccounted == 0
    assert tally.blind_edits == []
    assert tally.integrity == "ok"
    assert tally.final_exit == 0
    assert tally.lost() == []
