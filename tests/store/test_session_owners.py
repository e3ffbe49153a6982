"""Session owners on both engines: two stores over one database stand for two replicas.

A free session is taken in one statement that also says whether another replica left
entries in it; only the owner's claim takes waiting entries; settled sessions idle past the
window lose their row when their owner is the pruner or gone, never while a message waits
or when another live replica owns them."""

from __future__ import annotations

import time

import pytest

from bot.store import InboxKey, InboxStatus, Store
from bot.store.session_owners import Taken

A, B, GONE = "replica-a", "replica-b", "replica-gone"


async def admit(store: Store, session: str, message_id: str) -> InboxKey:
    key = InboxKey(channel="slack.main", message_id=message_id)
    assert await store.inbox.admit(key, envelope_id="env-" + message_id, session_key=session)
    return key


async def test_a_free_session_goes_to_the_first_taker_only(two: tuple[Store, Store]) -> None:
    a, b = two
    mine = await admit(a, "s1", "1")
    taken = await a.session_owners.take_free("s1", A, at=100.0, admitted=mine)
    # a message nobody took: nothing left, nothing else waits
    assert taken == Taken(leftovers=False, others_waiting=0)
    assert await b.session_owners.take_free("s1", B, at=101.0) is None
    assert await b.session_owners.owner("s1") == A


async def test_taking_a_free_session_counts_the_other_entries_that_wait(
    two: tuple[Store, Store],
) -> None:
    a, b = two
    first = await admit(b, "s1", "1")
    await admit(b, "s1", "2")
    mine = await admit(a, "s1", "3")
    done = await admit(a, "s1", "4")
    await a.inbox.mark(done, InboxStatus.DONE)
    await admit(a, "s2", "5")  # another session
    taken = await a.session_owners.take_free("s1", A, at=100.0, admitted=mine)
    assert taken == Taken(leftovers=False, others_waiting=2)
    await a.db.execute("DELETE FROM session_owners WHERE session_key = ?", ("s1",))
    await a.inbox.skip(first, "deleted")
    taken = await a.session_owners.take_free("s1", A, at=100.0)  # no admitted one: all count
    assert taken == Taken(leftovers=False, others_waiting=2)


@pytest.mark.parametrize("left", ["claimed", "processing", "processing_unnamed"])
async def test_taking_a_free_session_says_when_another_replica_left_entries(
    two: tuple[Store, Store], left: str
) -> None:
    a, b = two
    key = await admit(a, "s1", "1")
    if left == "claimed":
        assert [e.key for e in await a.inbox.claim_waiting("s1", GONE)] == []  # no row: none
        await a.session_owners.take("s1", GONE, was=None, at=90.0)
        assert [e.key for e in await a.inbox.claim_waiting("s1", GONE)] == [key]
        # the gone replica's row went (pruned), its claim stayed
        assert await a.session_owners.prune([("s1", GONE)], idle_since=0.0) == []
        await a.db.execute("DELETE FROM session_owners WHERE session_key = ?", ("s1",))
    elif left == "processing":
        await a.session_owners.take("s1", GONE, was=None, at=90.0)
        assert await a.inbox.claim_waiting("s1", GONE)
        assert await a.inbox.take(key, GONE) is not None
        await a.inbox.mark(key, InboxStatus.PROCESSING)
        await a.db.execute("DELETE FROM session_owners WHERE session_key = ?", ("s1",))
    else:  # running before replicas were (replica_id NULL)
        await a.inbox.mark(key, InboxStatus.PROCESSING)
    taken = await b.session_owners.take_free("s1", B, at=100.0)
    assert taken is not None and taken.leftovers


async def test_entries_claimed_or_running_by_the_taker_itself_are_not_leftovers(
    two: tuple[Store, Store],
) -> None:
    a, _ = two
    key = await admit(a, "s1", "1")
    await a.session_owners.take("s1", A, was=None, at=90.0)
    assert await a.inbox.claim_waiting("s1", A)
    await a.db.execute("DELETE FROM session_owners WHERE session_key = ?", ("s1",))
    taken = await a.session_owners.take_free("s1", A, at=100.0)
    assert taken is not None and not taken.leftovers
    await a.inbox.mark(key, InboxStatus.DONE)
    await admit(a, "s1", "2")  # waits, nobody took it
    await a.db.execute("DELETE FROM session_owners WHERE session_key = ?", ("s1",))
    taken = await a.session_owners.take_free("s1", A, at=100.0)
    assert taken is not None and not taken.leftovers


async def test_only_the_owner_claims_what_waits(two: tuple[Store, Store]) -> None:
    a, b = two
    first = await admit(a, "s1", "1")
    second = await admit(b, "s1", "2")
    assert await b.session_owners.take_free("s1", B, at=100.0) is not None
    assert await a.inbox.claim_waiting("s1", A) == []
    claimed = await b.inbox.claim_waiting("s1", B)
    assert [e.key for e in claimed] == [first, second]
    # the row moved to a (b taken for dead): b claims nothing more, a takes only the new one
    third = await admit(a, "s1", "3")
    assert await a.session_owners.take("s1", A, was=B, at=110.0)
    assert await b.inbox.claim_waiting("s1", B) == []
    assert [e.key for e in await a.inbox.claim_waiting("s1", A)] == [third]


async def test_settled_idle_sessions_of_the_pruner_and_of_gone_owners_are_pruned(
    two: tuple[Store, Store],
) -> None:
    a, b = two
    for session, owner, message_id in [
        ("mine", A, "1"),
        ("gone", GONE, "2"),
        ("b-live", B, "3"),
        ("waiting", A, "4"),
    ]:
        key = await admit(a, session, message_id)
        await a.session_owners.take(session, owner, was=None, at=100.0)
        if session != "waiting":
            await a.inbox.mark(key, InboxStatus.DONE)
    await a.session_owners.take("never-used", GONE, was=None, at=100.0)
    later = time.time() + 60  # every entry is older: idle
    rows = await a.session_owners.prunable(A, {A, B}, idle_since=later)
    assert sorted(rows) == [("gone", GONE), ("mine", A), ("never-used", GONE)]
    # a message reaches "mine" between the look and the delete: its row stays
    await admit(b, "mine", "5")
    assert sorted(await a.session_owners.prune(rows, idle_since=later)) == ["gone", "never-used"]
    assert await b.session_owners.owner("mine") == A
    assert await b.session_owners.owner("b-live") == B
    assert await b.session_owners.owner("waiting") == A
    assert await b.session_owners.owner("gone") is None
    # b alone alive: a's rows are a gone replica's to b
    rows = await b.session_owners.prunable(B, {B}, idle_since=later)
    assert sorted(rows) == [("b-live", B)]  # "mine" and "waiting" still wait


async def test_a_session_with_a_recent_message_is_not_pruned(two: tuple[Store, Store]) -> None:
    a, _ = two
    key = await admit(a, "s1", "1")
    await a.session_owners.take("s1", A, was=None, at=100.0)
    await a.inbox.mark(key, InboxStatus.DONE)
    assert await a.session_owners.prunable(A, {A}, idle_since=time.time() - 3600) == []
    assert await a.session_owners.prune([("s1", A)], idle_since=time.time() - 3600) == []
    assert await a.session_owners.owner("s1") == A
