"""The web console's sign-in links, sessions, sign-in rate counters (migration 0012) and the
clients each identity signed in from (migration 0016).

Secrets are stored only as digests, which the caller computes (:mod:`bot.webconsole.tokens`):
whoever reads the database file cannot sign in with what it holds. Every step that must
happen once is one conditional statement: a link or code signs in once (``used_at IS NULL``
and not expired, set in the same ``UPDATE … RETURNING``), and a rate counter counts and
answers in one upsert, so two requests racing cannot both pass.

The counters' buckets are named here (:func:`client_bucket`, :func:`target_bucket`,
:func:`dms_bucket`), so that forgetting a person finds every one that names them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.engine import Database, Transaction
from bot.store.statements import Row, prefix_params, starts_with


def client_bucket(client: str) -> str:
    """The counter of every sign-in request from one client address."""
    return f"client:{client}"


def target_bucket(target: str, client: str) -> str:
    """The counter of one client's requests for one target's link."""
    return f"target:{target}|{client}"


def dms_bucket(target: str) -> str:
    """The counter of the messages asked for one target, from every client."""
    return f"dms:{target}"


@dataclass(frozen=True, slots=True, kw_only=True)
class NewSignIn:
    """A sign-in link (and, when a browser asked for it, the code sent with it)."""

    token_hash: str
    code_hash: str | None
    identity: str
    created_at: float
    expires_at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord:
    """A signed-in browser, as stored."""

    identity: str
    created_at: float
    last_seen: float
    expires_at: float


def _session(row: Row) -> SessionRecord:
    return SessionRecord(
        identity=str(row["identity"]),
        created_at=float(row["created_at"]),
        last_seen=float(row["last_seen"]),
        expires_at=float(row["expires_at"]),
    )


_CLAIM = (
    "UPDATE web_sign_ins SET used_at = ? WHERE {column} = ? AND used_at IS NULL"
    " AND expires_at > ? RETURNING identity"
)
_COUNT = (
    "INSERT INTO web_rate_counters (bucket, window_start, count) VALUES (?, ?, 1)"
    " ON CONFLICT (bucket) DO UPDATE SET"
    " count = CASE WHEN web_rate_counters.window_start <= ? THEN 1"
    " ELSE web_rate_counters.count + 1 END,"
    " window_start = CASE WHEN web_rate_counters.window_start <= ? THEN excluded.window_start"
    " ELSE web_rate_counters.window_start END"
    " RETURNING count"
)


class WebAccess:
    """The ``web_sign_ins``, ``web_sessions`` and ``web_rate_counters`` tables."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- sign-in links -----------------------------------------------------------------------

    async def add_sign_in(self, sign_in: NewSignIn) -> None:
        await self._db.execute(
            "INSERT INTO web_sign_ins (token_hash, code_hash, identity, created_at, expires_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (
                sign_in.token_hash,
                sign_in.code_hash,
                sign_in.identity,
                sign_in.created_at,
                sign_in.expires_at,
            ),
        )

    async def sign_in_identity(self, token_hash: str, now: float) -> str | None:
        """Whom the unused, unexpired link ``token_hash`` would sign in; reads only."""
        row = await self._db.fetchone(
            "SELECT identity FROM web_sign_ins WHERE token_hash = ? AND used_at IS NULL"
            " AND expires_at > ?",
            (token_hash, now),
        )
        return None if row is None else str(row["identity"])

    async def claim_link(self, token_hash: str, now: float) -> str | None:
        """Spend the link: its identity, once; None when unknown, used or expired."""
        return await self._claim("token_hash", token_hash, now)

    async def claim_code(self, code_hash: str, now: float) -> str | None:
        """Spend the link whose code (with its browser's nonce) has this digest."""
        return await self._claim("code_hash", code_hash, now)

    async def _claim(self, column: str, digest: str, now: float) -> str | None:
        row = await self._db.execute_returning(_CLAIM.format(column=column), (now, digest, now))
        return None if row is None else str(row["identity"])

    # -- sessions ----------------------------------------------------------------------------

    async def open_session(
        self, id_hash: str, identity: str, *, now: float, expires_at: float
    ) -> None:
        await self._db.execute(
            "INSERT INTO web_sessions (id_hash, identity, created_at, last_seen, expires_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (id_hash, identity, now, now, expires_at),
        )

    async def session(self, id_hash: str) -> SessionRecord | None:
        row = await self._db.fetchone(
            "SELECT identity, created_at, last_seen, expires_at FROM web_sessions"
            " WHERE id_hash = ?",
            (id_hash,),
        )
        return None if row is None else _session(row)

    async def touch_session(self, id_hash: str, now: float) -> None:
        await self._db.execute(
            "UPDATE web_sessions SET last_seen = ? WHERE id_hash = ? AND last_seen < ?",
            (now, id_hash, now),
        )

    async def close_session(self, id_hash: str) -> None:
        await self._db.execute("DELETE FROM web_sessions WHERE id_hash = ?", (id_hash,))

    # -- rate counters -----------------------------------------------------------------------

    async def count(self, bucket: str, *, now: float, window_s: float) -> int:
        """Count one request in ``bucket``'s current window (a new window when the last one
        began ``window_s`` or more ago); the count so far, this one included."""
        row = await self._db.execute_returning(
            _COUNT, (bucket, now, now - window_s, now - window_s)
        )
        assert row is not None  # an upsert with RETURNING always returns its row
        return int(row["count"])

    # -- known clients -----------------------------------------------------------------------

    async def remember_clients(self, identity: str, clients: Sequence[str], now: float) -> None:
        """``identity`` signed in from each of ``clients`` (``addr:…``, ``browser:…``) now."""
        for client in clients:
            await self._db.execute(
                "INSERT INTO web_known_clients (identity, client, last_used) VALUES (?, ?, ?)"
                " ON CONFLICT (identity, client) DO UPDATE SET last_used = excluded.last_used",
                (identity, client, now),
            )

    async def knows_client(self, identity: str, clients: Sequence[str], *, since: float) -> bool:
        """Whether ``identity`` signed in from one of ``clients`` after ``since``."""
        if not clients:
            return False
        marks = ", ".join("?" * len(clients))
        row = await self._db.fetchone(
            "SELECT 1 AS known FROM web_known_clients WHERE identity = ?"
            f" AND client IN ({marks}) AND last_used > ?",
            (identity, *clients, since),
        )
        return row is not None

    # -- housekeeping ------------------------------------------------------------------------

    async def prune(self, *, now: float, idle_s: float, window_s: float, known_s: float) -> int:
        """Delete ended sessions, links past their expiry (kept a day, used or not),
        counters whose window (``window_s``, the longest of them) is over and clients not
        used for ``known_s``; how many rows went."""
        deleted = 0
        for sql, params in (
            (
                "DELETE FROM web_sessions WHERE last_seen <= ? OR expires_at <= ?"
                " RETURNING id_hash",
                (now - idle_s, now),
            ),
            (
                "DELETE FROM web_sign_ins WHERE expires_at <= ? RETURNING token_hash",
                (now - 86400,),
            ),
            (
                "DELETE FROM web_rate_counters WHERE window_start <= ? RETURNING bucket",
                (now - window_s,),
            ),
            (
                "DELETE FROM web_known_clients WHERE last_used <= ? RETURNING identity",
                (now - known_s,),
            ),
        ):
            deleted += len(await self._db.execute_returning_all(sql, params))
        return deleted


async def forget_person(tx: Transaction, user_id: str, kind: str | None) -> dict[str, int]:
    """End the console access of platform user ``user_id`` of ``kind`` (every kind when
    None), in ``tx``: their sessions (a browser signed in as them is signed out at its next
    request), their sign-in links and codes (used or not: none signs in any more), the
    rate counters that name them and the clients they signed in from. How many rows went,
    by table. An identity is
    ``<kind>:<user id>``; a user id is matched whole, never as a suffix of another."""
    escaped = user_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    found = await tx.fetchall(
        "SELECT identity FROM web_sessions WHERE identity LIKE ? ESCAPE '\\'"
        " UNION SELECT identity FROM web_sign_ins WHERE identity LIKE ? ESCAPE '\\'"
        " UNION SELECT identity FROM web_known_clients WHERE identity LIKE ? ESCAPE '\\'",
        (f"%:{escaped}", f"%:{escaped}", f"%:{escaped}"),
    )
    identities = sorted(
        identity
        for identity in {str(row["identity"]) for row in found}
        | ({f"{kind}:{user_id}"} if kind is not None else set())
        if identity.partition(":")[2] == user_id
        and (kind is None or identity.partition(":")[0] == kind)
    )
    removed = {
        "web_sessions": 0,
        "web_sign_ins": 0,
        "web_rate_counters": 0,
        "web_known_clients": 0,
    }
    for identity in identities:
        for table, sql, params in (
            (
                "web_sessions",
                "DELETE FROM web_sessions WHERE identity = ? RETURNING id_hash",
                (identity,),
            ),
            (
                "web_sign_ins",
                "DELETE FROM web_sign_ins WHERE identity = ? RETURNING token_hash",
                (identity,),
            ),
            (
                "web_rate_counters",
                "DELETE FROM web_rate_counters"
                f" WHERE bucket = ? OR {starts_with('bucket')} RETURNING bucket",
                (dms_bucket(identity), *prefix_params(target_bucket(identity, ""))),
            ),
            (
                "web_known_clients",
                "DELETE FROM web_known_clients WHERE identity = ? RETURNING client",
                (identity,),
            ),
        ):
            removed[table] += len(await tx.fetchall(sql, params))
    return removed
