"""Parked turns whose records cannot be read back (issue 39, "Bad input and failure"): bad
JSON, a format version from a later release, a body cut short. Each fails its own turn with
one log line and one notice to its requester once its card is decided; the other parked
turns are not affected and resume. Apps over one real PostgreSQL database and the
in-process channel."""

from __future__ import annotations

from structlog.testing import capture_logs

from bot.agent.loop import UNREADABLE_MESSAGE
from bot.channel import ClickVerdict
from bot.store import InboxKey, InboxStatus
from bot.store.parked import VERSION
from tests.approval.conftest import PARK_SOON, WAIT_S, answers, parked_card, until_inbox
from tests.fakes.channel import PostedCard
from tests.fakes.replica_apps import SLACK, Replicas

#: conversation → how its record is spoilt (None: left as it is)
SPOILT: dict[str, str | None] = {
    "C1": None,
    "C2": "UPDATE parked_turns SET body = '{nope' WHERE approval_id = ?",
    "C3": f"UPDATE parked_turns SET version = {VERSION + 1} WHERE approval_id = ?",
    "C4": "UPDATE parked_turns SET body = substr(body, 1, 40) WHERE approval_id = ?",
}


async def test_an_unreadable_parked_record_fails_its_turn_alone(replicas: Replicas) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    store = a.app.store
    cards: dict[str, PostedCard] = {}
    for n, conversation in enumerate(SPOILT, start=1):
        cards[conversation] = await parked_card(
            a, f"m{n} deploy please", str(n), conversation=conversation
        )
    for conversation, spoil in SPOILT.items():
        if spoil is not None:
            await store.db.execute(spoil, (cards[conversation].card.approval_id,))

    with capture_logs() as logs:
        for card in cards.values():
            verdict = await a.app.approvals.decide_from_cli(
                card.card.approval_id, True, "operator:root"
            )
            assert verdict is ClickVerdict.ACCEPTED
        await a.channel.wait_for("done: deployed v2", within_s=WAIT_S)
        for n in range(1, len(SPOILT) + 1):
            key = InboxKey(channel=str(SLACK), message_id=str(n))
            await until_inbox(store, InboxStatus.DONE, InboxStatus.FAILED, key=key)

    # the readable one resumed: its call ran once, its answer came once
    assert replicas.deployed == [("a", {"version": "2"})]
    assert answers(a) == ["done: deployed v2"]
    # each unreadable one: one notice in its own conversation, one log line, nothing run
    told = [target.conversation_id for target, text in a.channel.sent if text == UNREADABLE_MESSAGE]
    assert sorted(told) == ["C2", "C3", "C4"]
    unreadable = [e for e in logs if e["event"] == "parked_turn_unreadable"]
    assert sorted(e["approval_id"] for e in unreadable) == sorted(
        cards[c].card.approval_id for c in ("C2", "C3", "C4")
    )
    assert await store.parked.rows() == []
