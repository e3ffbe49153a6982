"""Rejecting a pairing code (the web console's pairing page): the stranger stays out, the
code cannot be approved afterwards, and a new code can be asked for within the daily limit."""

from __future__ import annotations

from bot.gateway.access import AccessPolicy
from bot.gateway.pairing import CODE_TTL_S, PairingBook
from bot.store import Store
from tests.gateway.test_access import TG, Clock, _code, channels, envelope, store

__all__ = ["store"]  # the fixture, shared with the access tests


async def test_a_rejected_code_lets_nobody_in_and_cannot_be_approved(store: Store) -> None:
    clock = Clock()
    policy = AccessPolicy(channels(dm_policy="pairing"), store, clock=clock)
    book = PairingBook(store, clock)
    dm = envelope(direct=True, sender="eve")
    code = _code((await policy.check(dm)).reply)
    rejected = await book.reject(code.lower(), "telegram:admin")
    assert not rejected.approved and rejected.record is not None
    assert rejected.record.status == "rejected"
    assert rejected.message == f"Rejected the pairing of Eve (eve) on {TG}."
    assert not (await book.approve(code, "telegram:admin")).approved
    assert not (await book.reject(code, "telegram:admin")).record  # once only
    assert not await store.pairings.is_paired(str(TG), "eve")
    # no longer pending: the next DM gets a new code (it counts towards the daily limit)
    fresh = _code((await policy.check(dm)).reply)
    assert fresh != code


async def test_an_expired_or_unknown_code_is_not_rejected(store: Store) -> None:
    clock = Clock()
    policy = AccessPolicy(channels(dm_policy="pairing"), store, clock=clock)
    book = PairingBook(store, clock)
    code = _code((await policy.check(envelope(direct=True, sender="eve"))).reply)
    clock.now += CODE_TTL_S + 1
    expired = await book.reject(code, "telegram:admin")
    assert (expired.record, expired.message) == (None, "No pending pairing with that code.")
    assert (await book.reject("NOSUCHCODE", "telegram:admin")).record is None
