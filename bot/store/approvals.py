"""Persisted approval requests: pending until exactly one decision moves them on.

Every state change is a conditional update (``WHERE status = 'pending'``), so of two
deciders (a click, the CLI in another process, the timeout, a restart) exactly one wins; the
winner's audit row and grant commit in the same transaction as the status change.
"""

from __future__ import annotations

import builtins
import enum
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from bot.store.audit import AuditEntry, AuditLog, Decision
from bot.store.engine import Database
from bot.store.grants import Grants, NewGrant, OfferedGrant
from bot.store.statements import Row


class ApprovalStatus(enum.StrEnum):
    """Where a request is: ``pending`` until one decision moves it on. The values are what
    rows store."""

    PENDING = "pending"
    APPROVED = "approved"
    ALWAYS = "always"
    DENIED = "denied"
    EDITED = "edited"
    EXPIRED = "expired"

    @property
    def decision(self) -> Decision:
        """The audit decision of the resolution that leaves a row in this status (a pending
        row has none: asking is a broken invariant)."""
        return _DECISION[self]


_DECISION = {
    ApprovalStatus.APPROVED: Decision.APPROVED,
    ApprovalStatus.ALWAYS: Decision.ALWAYS,
    ApprovalStatus.DENIED: Decision.DENIED,
    ApprovalStatus.EDITED: Decision.EDITED,
    ApprovalStatus.EXPIRED: Decision.EXPIRED,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class CardRef:
    """Where one copy of an approval card was posted."""

    conversation_id: str
    thread_id: str | None
    message_id: str
    #: A copy in a user's DM: that user (the DM's conversation id is the platform's, not
    #: always the user id); None for the conversation's own card.
    for_user: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalVote:
    """One approval counted toward a request's quorum (migration 0027): who gave it (a user
    id or ``operator:NAME``), the name their platform sent (None: none, or forgotten), what
    they chose (``approve`` or ``always``), how it came (``click``, ``web``, ``cli``)."""

    voter: str
    voter_name: str | None
    #: Its place in the count: 1 for the first approval (set by :meth:`Approvals.vote`).
    position: int
    choice: str
    route: str
    at: float


class VoteOutcome(enum.StrEnum):
    """What :meth:`Approvals.vote` did."""

    COUNTED = "counted"  # recorded; the request waits for more
    DECIDED = "decided"  # recorded, and it completed the quorum: the row is approved
    REPEATED = "repeated"  # this voter's approval was counted already: nothing written
    CLOSED = "closed"  # the row is not pending (or does not exist): nothing written


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteResult:
    outcome: VoteOutcome
    given: int = 0  # approvals counted, this one included
    needed: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRecord:
    """One approval request. The defaults are those of a request just asked: pending, with
    no decision and no card posted yet."""

    id: str
    channel: str
    conversation_id: str
    thread_id: str | None
    session_key: str
    requester: str
    requester_name: str
    tool: str
    fingerprint: str
    summary: tuple[str, ...]
    ask_reason: str
    created_at: float
    expires_at: float
    #: Every argument, every character (secret values masked), for the full view.
    full_text: str = ""
    #: The summary hides part of ``full_text``: approve only from a full view.
    cut: bool = False
    #: A diff longer than the card shows, as ``full_text`` shows it (migration 0028; empty:
    #: none, or a row from before): a full view may send it as a ``.diff`` file.
    diff_text: str = ""
    status: ApprovalStatus = ApprovalStatus.PENDING
    decided_by: str | None = None
    #: The decider's display name as their platform reported it (None: not reported, or a
    #: row decided before migration 0023); shown on cards, never matched on.
    decided_by_name: str | None = None
    reason: str | None = None
    reply: str | None = None
    card_refs: tuple[CardRef, ...] = ()
    decided_at: float | None = None
    #: The replica whose turn waits on the request (None: one process).
    replica_id: str | None = None
    #: The call asked about: its turn and the model's call id (None: a request from before
    #: migration 0020), copied into the audit rows its answers write.
    turn_id: str | None = None
    call_id: str | None = None
    #: The agent whose turn asked (None: the default agent, or a row from before migration
    #: 0022): its reminder schedule applies.
    agent: str | None = None
    #: Reminders sent so far, and when the last was (migration 0022).
    reminders_sent: int = 0
    reminded_at: float | None = None
    #: Whom the card was escalated to, and when (empty: not escalated).
    escalated_to: tuple[str, ...] = ()
    escalated_at: float | None = None
    #: The roles whose holders may decide it since it was escalated (migration 0025).
    escalated_roles: tuple[str, ...] = ()
    #: Whom the card names as able to approve it: user ids and ``role:NAME`` entries, chosen
    #: when it was asked (``approval.name_approvers``; empty: nobody is named).
    approvers_named: tuple[str, ...] = ()
    #: The grant choices the card offers (empty: none, or a row asked before migration
    #: 0026): :mod:`bot.approval.grant_choices`.
    grant_choices: tuple[OfferedGrant, ...] = ()
    #: How many distinct approvers it needs (1: an ordinary request, and every row written
    #: before migration 0027), and the approvals counted so far, oldest first.
    quorum: int = 1
    votes: tuple[ApprovalVote, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolution:
    """A decision to apply to a pending row."""

    status: ApprovalStatus
    decided_by: str
    reason: str
    at: float
    reply: str | None = None
    #: The decider's display name, when their platform reported one.
    decided_by_name: str | None = None


def _record(row: Row) -> ApprovalRecord:
    refs = tuple(
        CardRef(
            conversation_id=str(r["conversation_id"]),
            thread_id=r.get("thread_id"),
            message_id=str(r["message_id"]),
            for_user=r.get("for_user"),
        )
        for r in json.loads(row["card_refs"])
    )
    return ApprovalRecord(
        id=row["id"],
        channel=row["channel"],
        conversation_id=row["conversation_id"],
        thread_id=row["thread_id"],
        session_key=row["session_key"],
        requester=row["requester"],
        requester_name=row["requester_name"],
        tool=row["tool"],
        fingerprint=row["fingerprint"],
        summary=tuple(json.loads(row["summary"])),
        full_text=row["full_text"],
        cut=bool(row["cut"]),
        diff_text=row["diff_text"],
        ask_reason=row["ask_reason"],
        status=ApprovalStatus(row["status"]),
        decided_by=row["decided_by"],
        decided_by_name=row["decided_by_name"],
        reason=row["reason"],
        reply=row["reply"],
        card_refs=refs,
        created_at=float(row["created_at"]),
        expires_at=float(row["expires_at"]),
        decided_at=row["decided_at"],
        replica_id=row["replica_id"],
        turn_id=row["turn_id"],
        call_id=row["call_id"],
        agent=row["agent"],
        reminders_sent=int(row["reminders_sent"]),
        reminded_at=row["reminded_at"],
        escalated_to=tuple(filter(None, (row["escalated_to"] or "").split(","))),
        escalated_at=row["escalated_at"],
        escalated_roles=_strings(row["escalated_roles"]),
        approvers_named=_strings(row["approvers_named"]),
        grant_choices=_choices(row["grant_choices"]),
        quorum=int(row["quorum"]),
    )


def _strings(stored: str | None) -> tuple[str, ...]:
    """A JSON list of strings column (NULL: none)."""
    return tuple(str(s) for s in json.loads(stored)) if stored else ()


def _choices(text: str | None) -> tuple[OfferedGrant, ...]:
    """The stored grant choices; a damaged value offers none rather than failing the row."""
    try:
        return tuple(OfferedGrant.from_json(c) for c in json.loads(text)) if text else ()
    except (ValueError, TypeError, KeyError):
        return ()


def _vote(row: Row) -> ApprovalVote:
    return ApprovalVote(
        voter=row["voter"],
        voter_name=row["voter_name"],
        position=int(row["position"]),
        choice=row["choice"],
        route=row["route"],
        at=float(row["at"]),
    )


#: Approval ids per statement reading votes (well under SQLite's limit on variables).
_VOTE_IDS = 400


class Approvals:
    """Reads and writes the ``approvals`` table, and the quorum votes of its rows
    (``approval_votes``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(self, rec: ApprovalRecord) -> None:
        await self._db.execute(
            "INSERT INTO approvals (id, channel, conversation_id, thread_id, session_key,"
            " requester, requester_name, tool, fingerprint, summary, full_text, cut,"
            " ask_reason, status, card_refs, created_at, expires_at, replica_id, turn_id,"
            " call_id, agent, approvers_named, grant_choices, quorum, diff_text)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rec.id,
                rec.channel,
                rec.conversation_id,
                rec.thread_id,
                rec.session_key,
                rec.requester,
                rec.requester_name,
                rec.tool,
                rec.fingerprint,
                json.dumps(list(rec.summary)),
                rec.full_text,
                int(rec.cut),
                rec.ask_reason,
                ApprovalStatus.PENDING,
                "[]",
                rec.created_at,
                rec.expires_at,
                rec.replica_id,
                rec.turn_id,
                rec.call_id,
                rec.agent,
                json.dumps(list(rec.approvers_named)) if rec.approvers_named else None,
                json.dumps([c.to_json() for c in rec.grant_choices]) if rec.grant_choices else None,
                rec.quorum,
                rec.diff_text,
            ),
        )

    async def claim_reminder(
        self, approval_id: str, *, sent: int, at: float, audit: AuditEntry
    ) -> bool:
        """Count one more reminder on a pending row that has sent ``sent`` so far, and append
        ``audit``, atomically. False, with nothing written, when the row is no longer pending
        or another process counted it first (so each reminder is sent once)."""
        async with self._db.transaction() as tx:
            claimed = await tx.fetchone(
                "UPDATE approvals SET reminders_sent = ?, reminded_at = ?"
                " WHERE id = ? AND status = ? AND reminders_sent = ? RETURNING id",
                (sent + 1, at, approval_id, ApprovalStatus.PENDING, sent),
            )
            if claimed is None:
                return False
            await AuditLog.append_in(tx, audit)
        return True

    async def claim_escalation(
        self,
        approval_id: str,
        to: Sequence[str],
        *,
        at: float,
        audit: AuditEntry,
        roles: Sequence[str] = (),
    ) -> bool:
        """Mark a pending row escalated to ``to`` (and the holders of ``roles``) and append
        ``audit``, atomically. False, with nothing written, when it is no longer pending or
        was escalated already."""
        async with self._db.transaction() as tx:
            claimed = await tx.fetchone(
                "UPDATE approvals SET escalated_to = ?, escalated_at = ?, escalated_roles = ?"
                " WHERE id = ? AND status = ? AND escalated_at IS NULL RETURNING id",
                (
                    ",".join(to),
                    at,
                    json.dumps(list(roles)) if roles else None,
                    approval_id,
                    ApprovalStatus.PENDING,
                ),
            )
            if claimed is None:
                return False
            await AuditLog.append_in(tx, audit)
        return True

    async def set_card_refs(self, approval_id: str, refs: Sequence[CardRef]) -> None:
        payload = json.dumps(
            [
                {
                    "conversation_id": r.conversation_id,
                    "thread_id": r.thread_id,
                    "message_id": r.message_id,
                    **({"for_user": r.for_user} if r.for_user is not None else {}),
                }
                for r in refs
            ]
        )
        await self._db.execute(
            "UPDATE approvals SET card_refs = ? WHERE id = ?", (payload, approval_id)
        )

    async def get(self, approval_id: str) -> ApprovalRecord | None:
        row = await self._db.fetchone("SELECT * FROM approvals WHERE id = ?", (approval_id,))
        if row is None:
            return None
        return (await self._with_votes([_record(row)]))[0]

    async def list(self, *, status: ApprovalStatus | None = None) -> list[ApprovalRecord]:
        if status is None:
            rows = await self._db.fetchall("SELECT * FROM approvals ORDER BY created_at")
        else:
            rows = await self._db.fetchall(
                "SELECT * FROM approvals WHERE status = ? ORDER BY created_at", (status,)
            )
        return await self._with_votes([_record(r) for r in rows])

    async def _with_votes(
        self, records: builtins.list[ApprovalRecord]
    ) -> builtins.list[ApprovalRecord]:
        """``records`` with the votes of those that need a quorum (no read for the rest)."""
        ids = [r.id for r in records if r.quorum > 1]
        if not ids:
            return records
        votes: dict[str, builtins.list[ApprovalVote]] = {}
        for start in range(0, len(ids), _VOTE_IDS):
            chunk = ids[start : start + _VOTE_IDS]
            rows = await self._db.fetchall(
                f"SELECT * FROM approval_votes WHERE approval_id IN ({', '.join('?' * len(chunk))})"
                " ORDER BY position",
                tuple(chunk),
            )
            for row in rows:
                votes.setdefault(row["approval_id"], []).append(_vote(row))
        return [
            replace(r, votes=tuple(votes.get(r.id, ()))) if r.quorum > 1 else r for r in records
        ]

    async def vote(
        self,
        approval_id: str,
        vote: ApprovalVote,
        *,
        audit: Callable[[int, int], AuditEntry],
        decided: Resolution,
        decided_audit: AuditEntry,
        grant: NewGrant | None = None,
    ) -> VoteResult:
        """Count ``vote`` (its ``position`` is set here) toward the pending row's quorum,
        atomically: its own audit row
        (``audit(given, needed)``), and when it is the quorum's last, the row moved to
        ``decided`` with ``decided_audit`` (and ``grant``). One vote per voter: a second
        one of the same voter writes nothing (:attr:`VoteOutcome.REPEATED`)."""
        async with self._db.transaction() as tx:
            # Touching the row takes its lock (PostgreSQL): an expiry or a deny of another
            # connection waits for this transaction, and then finds it no longer pending if
            # this vote decided it. Interactive transactions already run one at a time.
            row = await tx.fetchone(
                "UPDATE approvals SET quorum = quorum WHERE id = ? AND status = ? RETURNING quorum",
                (approval_id, ApprovalStatus.PENDING),
            )
            if row is None:
                return VoteResult(outcome=VoteOutcome.CLOSED)
            needed = int(row["quorum"])
            counted = await tx.fetchone(
                "SELECT COUNT(*) AS n FROM approval_votes WHERE approval_id = ?", (approval_id,)
            )
            given = (int(counted["n"]) if counted else 0) + 1
            added = await tx.fetchone(
                "INSERT INTO approval_votes (approval_id, voter, voter_name, position, choice,"
                " route, at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (approval_id, voter) DO NOTHING RETURNING voter",
                (
                    approval_id,
                    vote.voter,
                    vote.voter_name,
                    given,
                    vote.choice,
                    vote.route,
                    vote.at,
                ),
            )
            if added is None:
                return VoteResult(outcome=VoteOutcome.REPEATED, given=given - 1, needed=needed)
            await AuditLog.append_in(tx, audit(given, needed))
            if given < needed:
                return VoteResult(outcome=VoteOutcome.COUNTED, given=given, needed=needed)
            moved = await tx.fetchone(
                "UPDATE approvals SET status = ?, decided_by = ?, decided_by_name = ?,"
                " reason = ?, reply = ?, decided_at = ? WHERE id = ? AND status = ? RETURNING id",
                (
                    decided.status,
                    decided.decided_by,
                    decided.decided_by_name,
                    decided.reason,
                    decided.reply,
                    decided.at,
                    approval_id,
                    ApprovalStatus.PENDING,
                ),
            )
            if moved is None:  # cannot happen while the row is locked; never decide twice
                raise RuntimeError(f"approval {approval_id} was decided under its lock")
            await AuditLog.append_in(tx, decided_audit)
            if grant is not None:
                await Grants.create_in(tx, grant)
        return VoteResult(outcome=VoteOutcome.DECIDED, given=given, needed=needed)

    async def resolve(
        self,
        approval_id: str,
        resolution: Resolution,
        *,
        audit: AuditEntry,
        grant: NewGrant | None = None,
    ) -> bool:
        """Move a pending row to ``resolution`` and append ``audit`` (and create ``grant``)
        atomically. False, with nothing written, when the row is not pending any more."""
        async with self._db.transaction() as tx:
            row = await tx.fetchone("SELECT status FROM approvals WHERE id = ?", (approval_id,))
            if row is None or row["status"] != ApprovalStatus.PENDING:
                return False
            # still pending when written: a single statement of another replica (an expiry)
            # may have decided it since the read (PostgreSQL; SQLite holds every writer off)
            moved = await tx.fetchone(
                "UPDATE approvals SET status = ?, decided_by = ?, decided_by_name = ?,"
                " reason = ?, reply = ?, decided_at = ? WHERE id = ? AND status = ? RETURNING id",
                (
                    resolution.status,
                    resolution.decided_by,
                    resolution.decided_by_name,
                    resolution.reason,
                    resolution.reply,
                    resolution.at,
                    approval_id,
                    ApprovalStatus.PENDING,
                ),
            )
            if moved is None:
                return False
            await AuditLog.append_in(tx, audit)
            if grant is not None:
                await Grants.create_in(tx, grant)
        return True
