"""store.web on both engines: a link spent once even by two claims at the same time,
not after its expiry, a code only with its browser's nonce; rate windows that restart; ended
sessions, old links, counters and clients not used for long pruned; the clients an identity
signed in from, remembered and recognised."""

from __future__ import annotations

import asyncio

from bot.store import Store
from bot.store.web import NewSignIn
from bot.webconsole import tokens

NOW = 1_800_000_000.0


async def _link(store: Store, *, nonce: str | None = None, code: str = "ABCD-EFGH") -> str:
    token = tokens.new_token()
    await store.web.add_sign_in(
        NewSignIn(
            token_hash=tokens.digest(token),
            code_hash=None if nonce is None else tokens.code_digest(code, nonce),
            identity="telegram:2002",
            created_at=NOW,
            expires_at=NOW + 300,
        )
    )
    return token


async def test_a_link_is_spent_once(store: Store) -> None:
    digest = tokens.digest(await _link(store))
    assert await store.web.sign_in_identity(digest, NOW) == "telegram:2002"
    won = await asyncio.gather(*(store.web.claim_link(digest, NOW + 1) for _ in range(5)))
    assert sorted(won, key=str) == [None, None, None, None, "telegram:2002"]
    assert await store.web.sign_in_identity(digest, NOW) is None


async def test_an_expired_link_signs_nobody_in(store: Store) -> None:
    digest = tokens.digest(await _link(store))
    assert await store.web.claim_link(digest, NOW + 300) is None
    assert await store.web.claim_link(digest, NOW + 299) == "telegram:2002"


async def test_a_code_counts_with_its_nonce_only(store: Store) -> None:
    nonce = tokens.new_token()
    token = await _link(store, nonce=nonce)
    assert await store.web.claim_code(tokens.code_digest("ABCD-EFGH", "0" * 64), NOW) is None
    assert await store.web.claim_code(tokens.code_digest("abcd efgh", nonce), NOW) == (
        "telegram:2002"
    )
    # the code and the link are one sign-in: the link is spent too
    assert await store.web.claim_link(tokens.digest(token), NOW) is None


async def test_rate_windows_restart(store: Store) -> None:
    counts = [await store.web.count("client:a", now=NOW + i, window_s=60) for i in range(3)]
    assert counts == [1, 2, 3]
    assert await store.web.count("client:b", now=NOW, window_s=60) == 1
    assert await store.web.count("client:a", now=NOW + 60, window_s=60) == 1
    assert await store.web.count("client:a", now=NOW + 61, window_s=60) == 2


async def test_prune(store: Store) -> None:
    await store.web.open_session("idle", "telegram:2002", now=NOW - 4000, expires_at=NOW + 9999)
    await store.web.open_session("live", "telegram:2002", now=NOW - 10, expires_at=NOW + 9999)
    await store.web.open_session("old", "telegram:2002", now=NOW - 10, expires_at=NOW)
    await store.web.add_sign_in(
        NewSignIn(
            token_hash="spent",
            code_hash=None,
            identity="telegram:2002",
            created_at=NOW - 90_000,
            expires_at=NOW - 89_700,
        )
    )
    await store.web.count("client:a", now=NOW - 1000, window_s=900)
    await store.web.remember_clients("telegram:2002", ["addr:old"], NOW - 100)
    await store.web.remember_clients("telegram:2002", ["addr:new"], NOW - 10)
    assert await store.web.prune(now=NOW, idle_s=1800, window_s=900, known_s=50) == 5
    assert not await store.web.knows_client("telegram:2002", ["addr:old"], since=0)
    assert await store.web.knows_client("telegram:2002", ["addr:new"], since=0)
    assert await store.web.session("live") is not None
    assert await store.web.session("idle") is None


async def test_a_client_is_known_for_its_identity_only_and_until_a_moment(store: Store) -> None:
    clients = ["addr:a1", "browser:b1"]
    assert not await store.web.knows_client("telegram:2002", clients, since=0)
    await store.web.remember_clients("telegram:2002", clients, NOW)
    await store.web.remember_clients("telegram:2002", ["addr:a1"], NOW + 5)  # again: later
    assert await store.web.knows_client("telegram:2002", ["browser:b1"], since=NOW - 1)
    assert await store.web.knows_client("telegram:2002", ["addr:zz", "addr:a1"], since=NOW + 1)
    assert not await store.web.knows_client("telegram:2002", ["browser:b1"], since=NOW)
    assert not await store.web.knows_client("telegram:20021", clients, since=0)
    assert not await store.web.knows_client("discord:2002", clients, since=0)
    assert not await store.web.knows_client("telegram:2002", [], since=0)
