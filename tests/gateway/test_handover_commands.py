"""A ``/stop`` handed over between replicas whatever its size: Apps over one real PostgreSQL
database (whose notifications carry at most 8000 bytes), each with its own connection to
the platform (the in-process channel).

A ``/stop`` that reaches a replica where nothing of its session runs goes to the session's
owner through a notification; a long one (non-ASCII words, which JSON would write six bytes
each, or a message with many attachments) must stop the turn where it runs all the same, and
one past its sender's allowance of answers is not answered by the owner either.
Every wait is for a condition with a generous timeout; what is asserted is who answered what,
never how fast."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from bot.envelope import Attachment, Sender
from bot.gateway import command_limits
from bot.gateway.commands import NOTHING_RUNNING
from bot.store import InboxKey, InboxStatus
from tests.fakes.replica_apps import SLACK, Replica, Replicas, message

WAIT_S = 60.0

#: about 6 KB of text, 11 KB in UTF-8, 33 KB as JSON's ``\\uXXXX`` escapes
LONG_WORDS = " ".join(["остановись-пожалуйста"] * 280)


@pytest.fixture
async def replicas(pg_url: str, tmp_path: Path) -> AsyncIterator[Replicas]:
    started = Replicas(pg_url, tmp_path)
    try:
        yield started
    finally:
        await started.aclose()


async def reached(replica: Replica, tag: str) -> None:
    async with asyncio.timeout(WAIT_S):
        await replica.model.reached.setdefault(tag, asyncio.Event()).wait()
    replica.model.reached[tag].clear()


async def settled_as(replica: Replica, message_id: str, status: InboxStatus) -> None:
    key = InboxKey(channel=str(SLACK), message_id=message_id)
    async with asyncio.timeout(WAIT_S):
        while True:
            entry = await replica.app.store.inbox.get(key)
            if entry is not None and entry.status is status:
                return
            await asyncio.sleep(0.05)


async def test_a_long_non_ascii_stop_reaching_another_replica_stops_the_turn_where_it_runs(
    replicas: Replicas,
) -> None:
    never = asyncio.Event()
    a = await replicas.start("a", holds={"m1": never, "m3": never})
    b = await replicas.start("b")
    await a.deliver(message("m1 first", "1"))
    await reached(a, "m1")
    await b.deliver(message(f"/stop {LONG_WORDS}", "2"))  # nothing runs on b
    await a.channel.wait_for("Stopped", within_s=WAIT_S)
    await settled_as(a, "1", InboxStatus.DONE)
    assert b.channel.sent == []

    # a whole conversation's /stop, with many attachments and a display name longer than a
    # notification (some platforms let a bot see such a name): it goes without it
    await a.deliver(message("m3 again", "3"))
    await reached(a, "m3")
    files = tuple(
        Attachment(kind="file", name=f"отчёт-{n}.pdf", ref=f"https://files.example/{n:04d}" * 4)
        for n in range(120)
    )
    big = replace(
        message(f"/stop {LONG_WORDS}", "4"),
        command_scope="conversation",
        attachments=files,
        sender=Sender(id=message("", "0").sender.id, display_name="Алиса " * 900),
    )
    await b.deliver(big)
    await a.channel.wait_for("Stopped 1 turn", within_s=WAIT_S)
    await settled_as(a, "3", InboxStatus.DONE)
    assert b.channel.sent == []
    assert replicas.log == [("a", "m1"), ("a", "m3")]


async def test_a_stop_past_its_answers_is_handed_to_the_owner_quietly(
    replicas: Replicas, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one answer to /stop per sender, and nothing refills while the test runs
    monkeypatch.setattr(command_limits, "STOP_ANSWERS_BURST", 1)
    monkeypatch.setattr(command_limits, "STOP_ANSWERS_PER_MINUTE", 0.001)
    a = await replicas.start("a")
    b = await replicas.start("b")
    await a.deliver(message("m1 first", "1"))
    await settled_as(a, "1", InboxStatus.DONE)  # a owns the session; nothing runs
    # b hands each /stop to a, and returns once a said it ran it
    for n in range(2, 6):
        await b.deliver(message("/stop", str(n)))
    await b.deliver(message("/stop", "6", sender="U_BOB"))  # another sender's allowance
    answers = [text for _, text in a.channel.sent if text == NOTHING_RUNNING]
    assert answers == [NOTHING_RUNNING, NOTHING_RUNNING]  # alice's first, then bob's
    assert b.channel.sent == []
