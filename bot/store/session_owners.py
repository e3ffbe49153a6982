"""Session owners: which replica runs each session's turns (several replicas, one database).

One row per session some replica took (``session_owners``). Ownership changes only by a
compare-and-set (:meth:`SessionOwners.take`: inserted where there was no row, or moved from
the owner the caller saw, which it found gone), so of two replicas that find a session free
exactly one gets it. :meth:`SessionOwners.take_free` is the common case in one statement:
a session nobody owns is taken, and the same statement says whether it holds entries
another replica took or was running (to settle before anything newer of it runs), so a
fresh session costs no owner read and no read of the live replicas. Whether an owner is
alive is its replica's heartbeat (table ``replicas``), judged by the caller.
:meth:`SessionOwners.unsettled` is what a replica's sweep reads: every inbox entry not yet
settled, with the replica that took it and its session's owner. Rows of settled sessions
whose owner is gone, or that saw no message for a while, are pruned
(:meth:`SessionOwners.prunable`, :meth:`SessionOwners.prune`). On SQLite (one process) the
table stays empty.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from bot.store.engine import Database
from bot.store.inbox import InboxKey, InboxStatus
from bot.store.statements import Row


@dataclass(frozen=True, slots=True, kw_only=True)
class Unsettled:
    """An inbox entry still ``received`` or ``processing``, as a sweep sees it."""

    key: InboxKey
    envelope_id: str
    session_key: str
    status: InboxStatus
    #: the replica that took the entry to run it (None: nobody yet)
    replica_id: str | None
    #: the replica that owns the entry's session (None: nobody)
    owner: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Taken:
    """A session nobody owned, now the caller's (:meth:`SessionOwners.take_free`)."""

    #: whether the session holds unsettled entries another replica took, or that were
    #: running with nobody named: what a gone replica may have left, to settle first
    leftovers: bool
    #: how many of its entries wait with nobody named, the one the caller admitted aside
    #: (none: that one alone is to queue, and no claim is needed to find what waits)
    others_waiting: int


#: An inbox entry of the session that another replica may have left: ``received`` and
#: taken by a replica other than the caller, or ``processing`` (by anyone but the caller).
#: Parameters: session key, received, processing, caller, processing.
_LEFTOVERS = (
    "(SELECT COUNT(*) FROM inbox i WHERE i.session_key = ? AND i.status IN (?, ?)"
    " AND (i.replica_id <> ? OR (i.replica_id IS NULL AND i.status = ?)))"
)
#: Entries of the session that wait with nobody named, but one (the caller's).
#: Parameters: session key, received, that one's channel and message id.
_OTHERS_WAITING = (
    "(SELECT COUNT(*) FROM inbox w WHERE w.session_key = ? AND w.status = ?"
    " AND w.replica_id IS NULL AND NOT (w.channel = ? AND w.message_id = ?))"
)
#: No inbox entry of the owner row's session is unsettled or was written since the cut-off.
#: Parameters: received, processing, cut-off.
_SETTLED_AND_IDLE = (
    "NOT EXISTS (SELECT 1 FROM inbox i WHERE i.session_key = session_owners.session_key"
    " AND (i.status IN (?, ?) OR i.updated_at >= ?))"
)
#: How many owner rows one prune looks at (the rest wait for the next)
PRUNE_BATCH = 500


def _unsettled(row: Row) -> Unsettled:
    return Unsettled(
        key=InboxKey(channel=row["channel"], message_id=row["message_id"]),
        envelope_id=row["envelope_id"],
        session_key=row["session_key"],
        status=InboxStatus(row["status"]),
        replica_id=row["replica_id"],
        owner=row["owner"],
    )


class SessionOwners:
    """The ``session_owners`` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def owner(self, session_key: str) -> str | None:
        """The replica that owns ``session_key``; None when none does."""
        row = await self._db.fetchone(
            "SELECT replica_id FROM session_owners WHERE session_key = ?", (session_key,)
        )
        return None if row is None else str(row["replica_id"])

    async def take(self, session_key: str, replica_id: str, *, was: str | None, at: float) -> bool:
        """Make ``replica_id`` the owner of ``session_key`` if the owner is still ``was``
        (None: no row), in one conditional statement; False when another replica changed it
        first."""
        if was is None:
            row = await self._db.execute_returning(
                "INSERT INTO session_owners (session_key, replica_id, since) VALUES (?, ?, ?)"
                " ON CONFLICT (session_key) DO NOTHING RETURNING session_key",
                (session_key, replica_id, at),
            )
        else:
            row = await self._db.execute_returning(
                "UPDATE session_owners SET replica_id = ?, since = ? WHERE session_key = ?"
                " AND replica_id = ? RETURNING session_key",
                (replica_id, at, session_key, was),
            )
        return row is not None

    async def take_free(
        self, session_key: str, replica_id: str, *, at: float, admitted: InboxKey | None = None
    ) -> Taken | None:
        """Make ``replica_id`` the owner of ``session_key`` if nobody owns it, in one
        statement that also says whether the session holds what another replica left and
        how many entries wait besides ``admitted`` (:class:`Taken`); None when it has an
        owner (read it with :meth:`owner`)."""
        row = await self._db.execute_returning(
            "INSERT INTO session_owners (session_key, replica_id, since) VALUES (?, ?, ?)"
            f" ON CONFLICT (session_key) DO NOTHING RETURNING {_LEFTOVERS} AS leftovers,"
            f" {_OTHERS_WAITING} AS waiting",
            (
                session_key,
                replica_id,
                at,
                session_key,
                InboxStatus.RECEIVED,
                InboxStatus.PROCESSING,
                replica_id,
                InboxStatus.PROCESSING,
                session_key,
                InboxStatus.RECEIVED,
                "" if admitted is None else admitted.channel,
                "" if admitted is None else admitted.message_id,
            ),
        )
        if row is None:
            return None
        return Taken(leftovers=int(row["leftovers"]) > 0, others_waiting=int(row["waiting"]))

    async def prunable(
        self, replica_id: str, live: Collection[str], *, idle_since: float
    ) -> list[tuple[str, str]]:
        """Owner rows (session, owner) that may go: the session has no unsettled entry and
        no entry written since ``idle_since``, and its owner is ``replica_id`` or not among
        ``live`` (another live replica's rows are its own to prune). At most
        :data:`PRUNE_BATCH`."""
        others = sorted(set(live) - {replica_id})
        gone = f" OR replica_id NOT IN ({', '.join('?' * len(others))})" if others else " OR 1 = 1"
        rows = await self._db.fetchall(
            "SELECT session_key, replica_id FROM session_owners"
            f" WHERE (replica_id = ?{gone}) AND {_SETTLED_AND_IDLE}"
            f" ORDER BY session_key LIMIT {PRUNE_BATCH}",
            (
                replica_id,
                *others,
                InboxStatus.RECEIVED,
                InboxStatus.PROCESSING,
                idle_since,
            ),
        )
        return [(str(r["session_key"]), str(r["replica_id"])) for r in rows]

    async def prune(self, rows: Sequence[tuple[str, str]], *, idle_since: float) -> list[str]:
        """Delete the owner rows ``rows`` names (from :meth:`prunable`) that still have that
        owner and whose session is still settled and idle since ``idle_since`` (a message
        admitted meanwhile keeps its row); the sessions deleted."""
        by_owner: dict[str, list[str]] = {}
        for session_key, owner in rows:
            by_owner.setdefault(owner, []).append(session_key)
        deleted: list[str] = []
        for owner, keys in sorted(by_owner.items()):
            for start in range(0, len(keys), PRUNE_BATCH):
                chunk = keys[start : start + PRUNE_BATCH]
                found = await self._db.execute_returning_all(
                    "DELETE FROM session_owners WHERE replica_id = ?"
                    f" AND session_key IN ({', '.join('?' * len(chunk))})"
                    f" AND {_SETTLED_AND_IDLE} RETURNING session_key",
                    (
                        owner,
                        *chunk,
                        InboxStatus.RECEIVED,
                        InboxStatus.PROCESSING,
                        idle_since,
                    ),
                )
                deleted += [str(r["session_key"]) for r in found]
        return deleted

    async def release(self, replica_id: str) -> int:
        """Give up every session ``replica_id`` owns (a clean stop); how many it owned."""
        rows = await self._db.execute_returning_all(
            "DELETE FROM session_owners WHERE replica_id = ? RETURNING session_key",
            (replica_id,),
        )
        return len(rows)

    async def owners_in(self, conversation: str) -> set[str]:
        """The replicas that own a session of ``conversation`` (``kind.alias:conversation``:
        its own session and those of its threads, users and agents)."""
        inside = conversation + ":"
        rows = await self._db.fetchall(
            "SELECT DISTINCT replica_id FROM session_owners WHERE session_key = ?"
            " OR substr(session_key, 1, ?) = ?",
            (conversation, len(inside), inside),
        )
        return {str(r["replica_id"]) for r in rows}

    async def unsettled(self, session_key: str | None = None) -> list[Unsettled]:
        """Every inbox entry still ``received`` or ``processing`` (of ``session_key`` only,
        when given), in inbox order, with who took it and who owns its session."""
        where = "i.status IN (?, ?)"
        params: list[object] = [InboxStatus.RECEIVED, InboxStatus.PROCESSING]
        if session_key is not None:
            where += " AND i.session_key = ?"
            params.append(session_key)
        rows = await self._db.fetchall(
            "SELECT i.channel, i.message_id, i.envelope_id, i.session_key, i.status,"
            " i.replica_id, o.replica_id AS owner FROM inbox i"
            f" LEFT JOIN session_owners o ON o.session_key = i.session_key WHERE {where}"
            " ORDER BY i.id",
            params,
        )
        return [_unsettled(r) for r in rows]
