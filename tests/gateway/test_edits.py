"""Edited and deleted messages through the gateway on a real SQLite file: an edit before
the turn began replaces the text (in the queue and in the inbox), an edit after is ignored,
an edit of a message never admitted is admitted as it reads now; a message deleted before
its turn began is skipped, one deleted after runs on."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from structlog.testing import capture_logs

from bot.envelope import envelope_from_json
from bot.gateway.gateway import DELETED
from bot.store import InboxKey, InboxStatus
from tests.gateway.test_gateway import REF, Rig, envelope, rig, until

__all__ = ["rig"]


def key(message_id: str) -> InboxKey:
    return InboxKey(channel=str(REF), message_id=message_id)


async def test_an_edit_before_the_turn_began_replaces_its_text(rig: Rig) -> None:
    await rig.gateway.deliver(envelope("first"))
    await rig.gateway.deliver(envelope("tpyo", message_id="m2"))
    await until(lambda: rig.turns.started == ["first"])
    with capture_logs() as logs:
        await rig.gateway.edited(envelope("typo fixed", message_id="m2"))
    entry = await rig.store.inbox.get(key("m2"))
    assert entry is not None and entry.status is InboxStatus.RECEIVED
    assert envelope_from_json(entry.payload).text == "typo fixed"
    assert [e["queued"] for e in logs if e["event"] == "edit_applied"] == [True]
    rig.turns.finish("first")
    rig.turns.finish("typo fixed")
    await until(lambda: rig.outbox.texts == ["answer to first", "answer to typo fixed"])
    assert rig.turns.started == ["first", "typo fixed"]


async def test_an_edit_after_the_turn_began_is_ignored(rig: Rig) -> None:
    await rig.gateway.deliver(envelope("original", message_id="m1"))
    await until(lambda: rig.turns.started == ["original"])
    with capture_logs() as logs:
        await rig.gateway.edited(envelope("changed", message_id="m1"))
    assert [e["reason"] for e in logs if e["event"] == "edit_ignored"] == ["turn started"]
    rig.turns.finish("original")
    await until(lambda: rig.outbox.texts == ["answer to original"])
    await rig.gateway.wait_idle()
    with capture_logs() as logs:
        await rig.gateway.edited(envelope("changed again", message_id="m1"))
    assert [e["reason"] for e in logs if e["event"] == "edit_ignored"] == ["turn done"]
    assert rig.turns.started == ["original"]


async def test_an_edit_of_a_message_never_admitted_is_admitted(rig: Rig) -> None:
    """E.g. the edit adds the bot's mention to a message the bot was not addressed in."""
    await rig.gateway.edited(envelope("now addressed", message_id="m9"))
    await until(lambda: rig.turns.started == ["now addressed"])
    rig.turns.finish("now addressed")
    await until(lambda: rig.outbox.texts == ["answer to now addressed"])


async def test_an_edit_of_a_message_admitted_but_not_queued_here_updates_the_inbox(
    rig: Rig,
) -> None:
    """Left ``received`` by a crash: recovery will run it with the edited text."""
    left = envelope("old text", message_id="m3")
    await rig.store.inbox.admit(
        key("m3"), envelope_id=left.envelope_id, session_key=f"{REF}:c1", payload="{}"
    )
    await rig.gateway.edited(replace(left, text="new text"))
    entry = await rig.store.inbox.get(key("m3"))
    assert entry is not None and envelope_from_json(entry.payload).text == "new text"
    assert rig.turns.started == []


async def test_a_message_deleted_before_its_turn_began_is_skipped(rig: Rig) -> None:
    await rig.gateway.deliver(envelope("first"))
    await rig.gateway.deliver(envelope("regret", message_id="m2"))
    await until(lambda: rig.turns.started == ["first"])
    await rig.gateway.deleted(REF, "m2")
    entry = await rig.store.inbox.get(key("m2"))
    assert entry is not None and (entry.status, entry.error) == (InboxStatus.FAILED, DELETED)
    rig.turns.finish("first")
    await until(lambda: rig.outbox.texts == ["answer to first"])
    await rig.gateway.wait_idle()
    assert rig.turns.started == ["first"]


async def test_a_message_deleted_after_its_turn_began_runs_on(rig: Rig) -> None:
    await rig.gateway.deliver(envelope("running", message_id="m1"))
    await until(lambda: rig.turns.started == ["running"])
    await rig.gateway.deleted(REF, "m1")
    rig.turns.finish("running")
    await until(lambda: rig.outbox.texts == ["answer to running"])
    await rig.gateway.wait_idle()
    entry = await rig.store.inbox.get(key("m1"))
    assert entry is not None and entry.status is InboxStatus.DONE


async def test_deleting_an_unknown_message_does_nothing(rig: Rig) -> None:
    await rig.gateway.deleted(REF, "never-seen")
    assert await rig.store.inbox.get(key("never-seen")) is None


async def test_an_edit_racing_its_original_admission_still_applies(rig: Rig) -> None:
    """The edit arrives while the original's inbox write is in flight: whichever is
    admitted, the turn runs with the edited text."""
    await rig.gateway.deliver(envelope("busy"))
    await until(lambda: rig.turns.started == ["busy"])
    original = envelope("frist", message_id="m2")
    first = asyncio.create_task(rig.gateway.deliver(original))
    await rig.gateway.edited(replace(original, text="first"))
    await first
    rig.turns.finish("busy")
    rig.turns.finish("first")
    await until(lambda: rig.outbox.texts == ["answer to busy", "answer to first"])
    entry = await rig.store.inbox.get(key("m2"))
    assert entry is not None and envelope_from_json(entry.payload).text == "first"
