"""The replicas of a shared database and the leases they hold (``replicas``, ``leases``).

Several processes may run over one PostgreSQL database (docs/operations.md, "Several
replicas"). Each registers a row in ``replicas`` and refreshes it every heartbeat; a role
that only one of them may play at a time (Telegram's ``getUpdates`` poller, a Discord
gateway session) is a row of ``leases``, held until ``expires_at`` and renewed by its
holder's heartbeat. The process side is :mod:`bot.replicas`; this module is only the SQL.

Every change of a lease is one conditional statement, so it is atomic on either engine
without a lock held across a round trip: taking a lease is an upsert whose ``DO UPDATE``
applies only when the lease has expired (or is already the caller's), renewing is an
``UPDATE … WHERE holder = ? AND expires_at >= ? AND name IN (…)``, and each returns what it
changed (no row: not granted, or lost). A renewal names the leases the caller still holds a
tenure for: a lease whose release failed is still the caller's in the table, and renewing
every row of the holder would keep it alive for as long as the process lives, the role out
of every other replica's reach; named, it lapses at its expiry instead.

Times are wall-clock epoch seconds chosen by the caller: a replica's clock decides when its
own tenure ends, and its holder stops early enough to cover the skew the configuration
allows (``[replicas] max_clock_skew_s``).

A replica's row says what its release can do (``capabilities``, :data:`CAPABILITIES`),
written when the row is: a rolling upgrade mixes releases, and a behaviour every replica
must know (parking, docs/approvals.md) is on only while every live replica advertises it. A
row of a release from before the column advertises nothing.

Rows of ``leases`` are never deleted: a release sets ``expires_at`` to 0, so ``generation``,
the fencing token, only grows (each new tenure of a role gets the next number).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.store.engine import Database
from bot.store.statements import Read, Row, Write

#: Parks turns waiting on an approval card, and leaves parked ones alone.
PARK = "park"
#: What this release advertises in its row.
CAPABILITIES: frozenset[str] = frozenset({PARK})


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaRecord:
    """One process over the database: who it is, its last heartbeat (wall clock), and what
    its release can do (empty for a release from before ``capabilities``)."""

    id: str
    host: str
    pid: int
    started_at: float
    heartbeat_at: float
    capabilities: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseRecord:
    """One lease as stored: its holder (a replica's id), until when, and the tenure's
    fencing token."""

    name: str
    holder: str
    expires_at: float
    generation: int


def _replica(row: Row) -> ReplicaRecord:
    return ReplicaRecord(
        id=str(row["id"]),
        host=str(row["host"]),
        pid=int(row["pid"]),
        started_at=float(row["started_at"]),
        heartbeat_at=float(row["heartbeat_at"]),
        capabilities=frozenset(str(row["capabilities"] or "").split()),
    )


def _lease(row: Row) -> LeaseRecord:
    return LeaseRecord(
        name=str(row["name"]),
        holder=str(row["holder"]),
        expires_at=float(row["expires_at"]),
        generation=int(row["generation"]),
    )


# A replica's capabilities are its release's: written with the row, never changed by a
# heartbeat.
_REGISTER = (
    "INSERT INTO replicas (id, host, pid, started_at, heartbeat_at, capabilities)"
    " VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at"
)
# Taken when free or expired (a new tenure: the next generation), or already the caller's
# and live (the same tenure, renewed). Otherwise the WHERE leaves the row alone and nothing
# is returned.
_ACQUIRE = (
    "INSERT INTO leases (name, holder, expires_at, generation) VALUES (?, ?, ?, 1)"
    " ON CONFLICT (name) DO UPDATE SET"
    " holder = excluded.holder,"
    " expires_at = excluded.expires_at,"
    " generation = CASE WHEN leases.holder = excluded.holder AND leases.expires_at >= ?"
    " THEN leases.generation ELSE leases.generation + 1 END"
    " WHERE leases.expires_at < ? OR leases.holder = excluded.holder"
    " RETURNING name, holder, expires_at, generation"
)
_LEASE_COLUMNS = "name, holder, expires_at, generation"
_REPLICA_COLUMNS = "id, host, pid, started_at, heartbeat_at, capabilities"


def _register_row(replica: ReplicaRecord, heartbeat_at: float) -> tuple[object, ...]:
    return (
        replica.id,
        replica.host,
        replica.pid,
        replica.started_at,
        heartbeat_at,
        " ".join(sorted(replica.capabilities)),
    )


def _renewal(names: Sequence[str]) -> str:
    """The renewal of the leases ``names`` (at least one) still the holder's and live."""
    marks = ", ".join("?" for _ in names)
    return (
        "UPDATE leases SET expires_at = ? WHERE holder = ? AND expires_at >= ?"
        f" AND name IN ({marks}) RETURNING name, holder, expires_at, generation"
    )


class Replicas:
    """The ``replicas`` and ``leases`` repository."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- replicas ---------------------------------------------------------------------------

    async def register(self, replica: ReplicaRecord) -> None:
        """Write this process's row (again: an existing row gets the new heartbeat)."""
        await self._db.execute(_REGISTER, _register_row(replica, replica.heartbeat_at))

    async def heartbeat(
        self, replica: ReplicaRecord, holding: Sequence[str], *, now: float, expires_at: float
    ) -> list[LeaseRecord]:
        """One heartbeat, in one transaction: the replica's row refreshed (written again if
        another process removed it), and each lease of ``holding`` (those it holds a tenure
        for) that is still its own and has not expired renewed until ``expires_at``. Returns
        the leases renewed; one the replica thought it held and that is missing was lost (it
        expired, and another replica may hold it now). A lease of the replica not named
        (its release failed) is left to lapse."""
        row = _register_row(replica, now)
        names = sorted(set(holding))
        if not names:
            await self._db.commit([Write(_REGISTER, [row])])
            return []
        return await self._db.commit(
            [Write(_REGISTER, [row])],
            Read(
                _renewal(names),
                (expires_at, replica.id, now, *names),
                lambda rows: [_lease(r) for r in rows],
            ),
        )

    async def remove(self, replica_id: str) -> None:
        """Delete the row of a replica that stops cleanly (its leases are released first)."""
        await self._db.execute("DELETE FROM replicas WHERE id = ?", (replica_id,))

    async def all(self) -> list[ReplicaRecord]:
        """Every replica row, live or not, oldest start first."""
        rows = await self._db.fetchall(f"SELECT {_REPLICA_COLUMNS} FROM replicas")
        return _by_start(_replica(r) for r in rows)

    async def live(self, *, since: float) -> list[ReplicaRecord]:
        """The replicas whose last heartbeat is at ``since`` or later (the caller passes its
        clock minus the lease TTL): the processes taken to be running."""
        rows = await self._db.fetchall(
            f"SELECT {_REPLICA_COLUMNS} FROM replicas WHERE heartbeat_at >= ?", (since,)
        )
        return _by_start(_replica(r) for r in rows)

    async def prune(self, *, before: float) -> int:
        """Delete the rows of replicas whose last heartbeat is older than ``before``
        (processes long gone); how many."""
        rows = await self._db.execute_returning_all(
            "DELETE FROM replicas WHERE heartbeat_at < ? RETURNING id", (before,)
        )
        return len(rows)

    # -- leases -----------------------------------------------------------------------------

    async def acquire(
        self, name: str, holder: str, *, now: float, expires_at: float
    ) -> LeaseRecord | None:
        """Take the lease ``name`` for ``holder`` until ``expires_at`` when nobody holds it
        at ``now`` (never held, released, or expired), in one statement. A lease ``holder``
        already holds is renewed (same generation). None when another replica holds it."""
        row = await self._db.execute_returning(_ACQUIRE, (name, holder, expires_at, now, now))
        return None if row is None else _lease(row)

    async def renew(
        self, holder: str, names: Sequence[str], *, now: float, expires_at: float
    ) -> list[LeaseRecord]:
        """Renew each lease of ``names`` that ``holder`` holds and that has not expired at
        ``now``, until ``expires_at``; the leases renewed (:meth:`heartbeat` does this with
        the replica's row)."""
        unique = sorted(set(names))
        if not unique:
            return []
        rows = await self._db.execute_returning_all(
            _renewal(unique), (expires_at, holder, now, *unique)
        )
        return [_lease(r) for r in rows]

    async def release(self, name: str, holder: str, generation: int) -> bool:
        """End the tenure ``generation`` of ``name`` if ``holder`` still holds it (its
        ``expires_at`` set to 0: free for the next taker at once). False when it was no
        longer that tenure."""
        row = await self._db.execute_returning(
            "UPDATE leases SET expires_at = 0 WHERE name = ? AND holder = ? AND generation = ?"
            " RETURNING name",
            (name, holder, generation),
        )
        return row is not None

    async def release_all(self, holder: str) -> list[str]:
        """Release every lease ``holder`` holds (a clean stop); the names released."""
        rows = await self._db.execute_returning_all(
            "UPDATE leases SET expires_at = 0 WHERE holder = ? AND expires_at > 0 RETURNING name",
            (holder,),
        )
        return sorted(str(r["name"]) for r in rows)

    async def lease(self, name: str) -> LeaseRecord | None:
        """The lease ``name`` as stored (held or not: compare ``expires_at`` with a clock)."""
        row = await self._db.fetchone(
            f"SELECT {_LEASE_COLUMNS} FROM leases WHERE name = ?", (name,)
        )
        return None if row is None else _lease(row)

    async def leases(self, names: Sequence[str] = ()) -> list[LeaseRecord]:
        """Every lease (or those named), by name."""
        if not names:
            rows = await self._db.fetchall(f"SELECT {_LEASE_COLUMNS} FROM leases")
        else:
            marks = ", ".join("?" for _ in names)
            rows = await self._db.fetchall(
                f"SELECT {_LEASE_COLUMNS} FROM leases WHERE name IN ({marks})", tuple(names)
            )
        # by code point, the same on every engine and collation
        return sorted((_lease(r) for r in rows), key=lambda lease: lease.name)


def _by_start(replicas: Iterable[ReplicaRecord]) -> list[ReplicaRecord]:
    """Oldest start first, ids in code point order between starts of the same moment (the
    same on every engine and collation)."""
    return sorted(replicas, key=lambda replica: (replica.started_at, replica.id))
