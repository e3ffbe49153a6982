"""Grants: standing "always" decisions for one tool within a scope, optionally expiring.

A grant covers ``(tool, scope, scope_key)`` where ``scope`` is ``conversation``, ``channel``
or ``global`` and ``scope_key`` names the conversation or channel ("" for global). Revoked
and expired grants are kept for the record and never match.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.errors import StorageError
from bot.store.engine import Database, Transaction
from bot.store.statements import Row


@dataclass(frozen=True, slots=True, kw_only=True)
class OfferedGrant:
    """A grant choice as an approval row keeps it: what its card offered, so a pick grants
    what was shown (``scope`` for ``ttl_s`` seconds, None: no end; only the call's
    arguments when ``exact``) whatever the configuration says by the time of the click."""

    key: str
    label: str
    scope: str
    ttl_s: float | None = None
    exact: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "key": self.key,
            "label": self.label,
            "scope": self.scope,
            "ttl_s": self.ttl_s,
            "exact": self.exact,
        }

    @classmethod
    def from_json(cls, value: object) -> OfferedGrant:
        """One stored choice; ValueError for anything not written by :meth:`to_json`."""
        if not isinstance(value, dict):
            raise ValueError("not a grant choice")
        ttl = value.get("ttl_s")
        return cls(
            key=str(value["key"]),
            label=str(value["label"]),
            scope=str(value["scope"]),
            ttl_s=None if ttl is None else float(ttl),
            exact=bool(value.get("exact", False)),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class NewGrant:
    tool: str
    scope: str
    scope_key: str
    granted_by: str
    created_at: float
    expires_at: float | None = None
    #: The size the approver picked (a grant choice's label); None: "Always".
    size: str | None = None
    #: An exact-arguments grant: the fingerprint of the one call it covers.
    arguments_hash: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GrantRecord:
    id: int
    tool: str
    scope: str
    scope_key: str
    granted_by: str
    created_at: float
    expires_at: float | None
    revoked_at: float | None
    size: str | None = None
    arguments_hash: str | None = None

    def active(self, now: float) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


_INSERT = (
    "INSERT INTO grants (tool, scope, scope_key, granted_by, created_at, expires_at, size,"
    " arguments_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
)


def _params(grant: NewGrant) -> tuple[object, ...]:
    return (
        grant.tool,
        grant.scope,
        grant.scope_key,
        grant.granted_by,
        grant.created_at,
        grant.expires_at,
        grant.size,
        grant.arguments_hash,
    )


def _id(row: Row | None) -> int:
    if row is None:  # an INSERT … RETURNING always returns its row
        raise StorageError("the grant was not stored")
    return int(row["id"])


def _record(row: Row) -> GrantRecord:
    return GrantRecord(
        id=int(row["id"]),
        tool=row["tool"],
        scope=row["scope"],
        scope_key=row["scope_key"],
        granted_by=row["granted_by"],
        created_at=float(row["created_at"]),
        expires_at=row["expires_at"],
        revoked_at=row["revoked_at"],
        size=row["size"],
        arguments_hash=row["arguments_hash"],
    )


class Grants:
    """Creates, finds, lists and revokes grants."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(self, grant: NewGrant) -> int:
        """Store ``grant``; its id."""
        return _id(await self._db.execute_returning(_INSERT, _params(grant)))

    @staticmethod
    async def create_in(tx: Transaction, grant: NewGrant) -> int:
        """:meth:`create` inside an approval's transaction (the decision and its grant
        commit together; see :meth:`bot.store.approvals.Approvals.resolve`)."""
        return _id(await tx.fetchone(_INSERT, _params(grant)))

    async def find_active(
        self,
        tool: str,
        scopes: Sequence[tuple[str, str]],
        now: float,
        *,
        arguments_hash: str | None = None,
    ) -> GrantRecord | None:
        """The newest active grant for ``tool`` in any of ``scopes`` ((scope, key) pairs):
        one for any arguments, or an exact-arguments grant for ``arguments_hash`` (the
        call's fingerprint; None matches no exact grant)."""
        if not scopes:
            return None
        clause = " OR ".join("(scope = ? AND scope_key = ?)" for _ in scopes)
        params: list[object] = [tool]
        for scope, key in scopes:
            params += [scope, key]
        params += [now, arguments_hash or ""]
        row = await self._db.fetchone(
            f"SELECT * FROM grants WHERE tool = ? AND ({clause}) AND revoked_at IS NULL"
            " AND (expires_at IS NULL OR expires_at > ?)"
            " AND (arguments_hash IS NULL OR arguments_hash = ?) ORDER BY id DESC LIMIT 1",
            params,
        )
        return _record(row) if row else None

    async def get(self, grant_id: int) -> GrantRecord | None:
        row = await self._db.fetchone("SELECT * FROM grants WHERE id = ?", (grant_id,))
        return _record(row) if row else None

    async def list(self, *, now: float, include_inactive: bool = False) -> list[GrantRecord]:
        rows = await self._db.fetchall("SELECT * FROM grants ORDER BY id")
        records = [_record(r) for r in rows]
        return records if include_inactive else [g for g in records if g.active(now)]

    async def revoke(self, grant_id: int, now: float) -> bool:
        """Revoke an active grant; False when it does not exist or was already revoked."""
        revoked = await self._db.execute_returning(
            "UPDATE grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING id",
            (now, grant_id),
        )
        return revoked is not None
