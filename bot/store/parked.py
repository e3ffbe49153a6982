"""Parked turns: what a turn waiting on an approval card needs to continue in another process.

A turn whose tool call waits on a card records a :class:`ParkRecord` as soon as the card is
posted (``waiting``: its coroutine still waits in this process), so that neither a stop
nor a ``kill -9`` loses it. After ``approval.wait_in_turn_s``, or at once on a stop, the turn
**parks**: its batch joins history with a "waiting for approval" result per call (the
provider's rule: one result per call id), its inbox entry becomes ``parked`` and the row
``parked``, all in one transaction (:func:`parking`); its coroutine ends. Once the card is
decided, one process claims the row (:meth:`ParkedTurns.claim`: ``parked`` → ``resuming``,
one conditional update, so of two deciders, two replicas or two sweeps exactly one resumes
it) and continues the turn (:mod:`bot.agent.resume`); the row goes when it is done.

The body is versioned JSON (:data:`VERSION`) and bounded (:data:`MAX_BODY_CHARS`: a batch
too large to keep is not parked; its card keeps today's rules). It holds the turn's message
and the batch of tool calls as the model wrote them (what history and the inbox hold too,
no more), and which calls were asked on which card: the decided ones are those whose card
is. A body that cannot be read (corrupt, or a version this release does not know) is
:class:`UnreadableParkRecord`: that turn fails alone.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from bot.envelope import IngressEnvelope, envelope_from_json, envelope_to_json
from bot.providers.base import ToolCallRequest
from bot.store.engine import Database
from bot.store.inbox import InboxKey, InboxStatus
from bot.store.statements import Row, Write

#: The body's format. Version 1: ``envelope``, ``agent``, ``text``, ``calls``, ``asked``,
#: ``waiting``, ``since``, and, optional (a release that does not know it ignores it, and a
#: body without it resumes with a new progress message), ``progress``: the turn's progress
#: message, ``{"message_id": …, "lines": [[key, line], …]}``; ``cut_off``: ``true`` once a
#: resumption of it was cut off before its batch's outcomes were recorded (a release that does
#: not know it would run the batch again).
VERSION = 1
#: The signal a replica sends when one of its turns records a row: the other replicas'
#: resumption sweeps open their idle gate (:mod:`bot.gateway.resumption`).
PARKED = "hatchway_parked"
#: The longest body kept (characters of JSON): a batch larger than this is not parked.
MAX_BODY_CHARS = 256_000
#: The most lines, and the longest line, of a progress message kept with a parked turn.
MAX_PROGRESS_LINES = 40
MAX_PROGRESS_LINE_CHARS = 400


class ParkState(enum.StrEnum):
    WAITING = "waiting"
    PARKED = "parked"
    RESUMING = "resuming"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressRef:
    """The progress message a parked turn showed (sent to its envelope's reply target):
    its resumption edits it, from ``lines`` (key, line) as they were, instead of sending a
    new one."""

    message_id: str
    lines: tuple[tuple[str, str], ...] = ()

    @classmethod
    def bounded(cls, message_id: str, lines: Sequence[tuple[str, str]]) -> ProgressRef:
        """The last :data:`MAX_PROGRESS_LINES` lines, each cut to
        :data:`MAX_PROGRESS_LINE_CHARS`."""
        kept = tuple(
            (key[:MAX_PROGRESS_LINE_CHARS], line[:MAX_PROGRESS_LINE_CHARS])
            for key, line in lines[-MAX_PROGRESS_LINES:]
        )
        return cls(message_id=message_id[:MAX_PROGRESS_LINE_CHARS], lines=kept)

    def to_json(self) -> dict[str, object]:
        return {"message_id": self.message_id, "lines": [list(pair) for pair in self.lines]}

    @classmethod
    def from_json(cls, data: object) -> ProgressRef | None:
        """None for a body without one, or one that cannot be read (it is only a nicety)."""
        if not isinstance(data, dict):
            return None
        message_id, lines = data.get("message_id"), data.get("lines")
        if not isinstance(message_id, str) or not message_id or not isinstance(lines, list):
            return None
        pairs = [
            (str(pair[0]), str(pair[1]))
            for pair in lines
            if isinstance(pair, list) and len(pair) == 2
        ]
        return cls.bounded(message_id, pairs)


class UnreadableParkRecord(ValueError):
    """A parked turn's body that this release cannot read (corrupt, or another version)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ParkRecord:
    """One turn waiting on the card ``approval_id``.

    ``calls`` is the batch as the model wrote it; ``asked`` the card of each call a person
    was asked about (by the call's index; ``waiting`` is the index of the call whose card
    this row waits on); ``text`` the text the model wrote with the calls; ``since`` when
    the card was posted (the "waiting for approval since …" results say it)."""

    approval_id: str
    turn_id: str
    session_key: str
    envelope: IngressEnvelope
    text: str
    calls: tuple[ToolCallRequest, ...]
    waiting: int
    since: float
    asked: Mapping[int, str] = field(default_factory=dict)
    state: ParkState = ParkState.WAITING
    owner: str | None = None
    parked_at: float | None = None
    progress: ProgressRef | None = None
    #: a resumption of it was cut off before its batch's outcomes were recorded: a call of
    #: the batch may have run, and only a ``retry_safe`` tool is run again
    cut_off: bool = False

    @property
    def inbox(self) -> InboxKey:
        return InboxKey(channel=str(self.envelope.channel), message_id=self.envelope.message_id)

    @property
    def agent(self) -> str:
        return self.envelope.agent

    def body(self) -> str:
        """The versioned JSON kept in the row."""
        body: dict[str, object] = {
            "envelope": envelope_to_json(self.envelope),
            "text": self.text,
            "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.calls],
            "asked": {str(k): v for k, v in self.asked.items()},
            "waiting": self.waiting,
            "since": self.since,
        }
        if self.progress is not None:
            body["progress"] = self.progress.to_json()
        if self.cut_off:
            body["cut_off"] = True
        return json.dumps(
            body,
            ensure_ascii=False,
            separators=(",", ":"),
        )


def _record(row: Row) -> ParkRecord:
    """The row as a record; :class:`UnreadableParkRecord` when its body cannot be read."""
    if int(row["version"]) != VERSION:
        raise UnreadableParkRecord(f"parked turn format version {row['version']} is unknown")
    try:
        body = json.loads(row["body"])
        calls = tuple(
            ToolCallRequest(id=str(c["id"]), name=str(c["name"]), arguments=str(c["arguments"]))
            for c in body["calls"]
        )
        asked = {int(k): str(v) for k, v in dict(body["asked"]).items()}
        waiting = int(body["waiting"])
        record = ParkRecord(
            approval_id=str(row["approval_id"]),
            turn_id=str(row["turn_id"]),
            session_key=str(row["session_key"]),
            envelope=envelope_from_json(str(body["envelope"])),
            text=str(body["text"]),
            calls=calls,
            waiting=waiting,
            since=float(body["since"]),
            asked=asked,
            state=ParkState(row["state"]),
            owner=row["owner"],
            parked_at=row["parked_at"],
            progress=ProgressRef.from_json(body.get("progress")),
            cut_off=body.get("cut_off") is True,
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UnreadableParkRecord(f"parked turn body unreadable: {type(exc).__name__}") from exc
    if not 0 <= waiting < len(calls) or any(not 0 <= i < len(calls) for i in asked):
        raise UnreadableParkRecord("parked turn body names a call outside its batch")
    return record


def parking(approval_id: str, inbox: InboxKey, *, at: float, owner: str | None) -> list[Write]:
    """The writes that park the turn waiting on ``approval_id`` (with its batch's history,
    in one unit of work): the row becomes ``parked`` and the inbox entry ``parked``. The
    row's update is conditional (``waiting`` only), so a row claimed meanwhile stays as is."""
    return [
        Write(
            "UPDATE parked_turns SET state = ?, parked_at = ?, owner = ?, updated_at = ?"
            " WHERE approval_id = ? AND state = ?",
            [(ParkState.PARKED, at, owner, at, approval_id, ParkState.WAITING)],
        ),
        Write(
            "UPDATE inbox SET status = ?, updated_at = ? WHERE channel = ? AND message_id = ?",
            [(InboxStatus.PARKED, at, inbox.channel, inbox.message_id)],
        ),
    ]


def adopting(approval_id: str, *, owner: str, at: float) -> list[Write]:
    """The writes that make the replica ``owner`` the one of the turn parked (or waiting)
    on ``approval_id``, whose replica is gone (for a unit of work): the row's owner, and
    the card's ``replica_id`` while it is pending, for its reminders and escalations are
    the sweep of the replica its row names (:mod:`bot.approval.reminders`)."""
    return [
        Write(
            "UPDATE parked_turns SET owner = ?, updated_at = ?"
            " WHERE approval_id = ? AND state IN (?, ?)",
            [(owner, at, approval_id, ParkState.WAITING, ParkState.PARKED)],
        ),
        Write(
            "UPDATE approvals SET replica_id = ? WHERE id = ? AND status = 'pending'",
            [(owner, approval_id)],
        ),
    ]


def reparking(record: ParkRecord, *, at: float) -> list[Write]:
    """The writes that park again a turn whose resumption was cut off (a kill, a database
    outage) before its batch's outcomes were recorded, marked ``cut_off``: the row
    ``parked`` again (from ``resuming`` only), the inbox entry ``parked`` (from
    ``processing`` only); its card is decided, so the next sweep resumes it again."""
    body = dataclasses.replace(record, cut_off=True).body()
    return [
        Write(
            "UPDATE parked_turns SET state = ?, body = ?, updated_at = ?"
            " WHERE approval_id = ? AND state = ?",
            [(ParkState.PARKED, body, at, record.approval_id, ParkState.RESUMING)],
        ),
        Write(
            "UPDATE inbox SET status = ?, updated_at = ? WHERE channel = ? AND message_id = ?"
            " AND status = ?",
            [
                (
                    InboxStatus.PARKED,
                    at,
                    record.inbox.channel,
                    record.inbox.message_id,
                    InboxStatus.PROCESSING,
                )
            ],
        ),
    ]


def dropping(approval_id: str) -> Write:
    """The write that drops the row of ``approval_id`` (for a unit of work: a resumed
    batch's outcomes are recorded with it)."""
    return Write("DELETE FROM parked_turns WHERE approval_id = ?", [(approval_id,)])


@dataclass(frozen=True, slots=True, kw_only=True)
class ParkRow:
    """A row as it is, readable or not (a sweep must see the unreadable ones too)."""

    approval_id: str
    turn_id: str
    session_key: str
    inbox: InboxKey
    requester: str
    state: ParkState
    owner: str | None


_STATES = frozenset(ParkState)


def _rows(rows: Iterable[Row]) -> list[ParkRow]:
    """The rows this release can read: one in a state a later release added (a rolling
    upgrade gone back) is that release's to settle, so it is passed by, not misread."""
    return [_row(r) for r in rows if r["state"] in _STATES]


def _row(row: Row) -> ParkRow:
    return ParkRow(
        approval_id=str(row["approval_id"]),
        turn_id=str(row["turn_id"]),
        session_key=str(row["session_key"]),
        inbox=InboxKey(channel=str(row["channel"]), message_id=str(row["message_id"])),
        requester=str(row["requester"]),
        state=ParkState(row["state"]),
        owner=row["owner"],
    )


_ROW_COLUMNS = "approval_id, turn_id, session_key, channel, message_id, requester, state, owner"


class ParkedTurns:
    """Reads and writes the ``parked_turns`` table."""

    def __init__(self, db: Database) -> None:
        self._db = db
        #: How many rows this process recorded (:meth:`hold`): the resumption sweep's idle
        #: gate opens when it moves (:mod:`bot.gateway.resumption`).
        self.held = 0

    async def any(self) -> bool:
        """Whether any row is there, in one statement (the sweep's idle gate)."""
        return await self._db.fetchone("SELECT 1 FROM parked_turns LIMIT 1") is not None

    async def hold(self, record: ParkRecord) -> bool:
        """Record ``record`` (``waiting``) as its card is posted. False, with nothing
        written, when its body is larger than :data:`MAX_BODY_CHARS` (the card then keeps
        the rules of a turn that cannot park)."""
        body = record.body()
        if len(body) > MAX_BODY_CHARS:
            return False
        now = time.time()
        await self._db.execute(
            "INSERT INTO parked_turns (approval_id, turn_id, session_key, channel, message_id,"
            " requester, state, version, body, owner, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.approval_id,
                record.turn_id,
                record.session_key,
                record.inbox.channel,
                record.inbox.message_id,
                record.envelope.sender.id,
                ParkState.WAITING,
                VERSION,
                body,
                record.owner,
                now,
                now,
            ),
        )
        # after the write: a sweep that looked before it sees the count move at its next turn
        self.held += 1
        return True

    async def get(self, approval_id: str) -> ParkRecord | None:
        """The record of ``approval_id`` (None: no turn parks on it);
        :class:`UnreadableParkRecord` when its body cannot be read."""
        row = await self._db.fetchone(
            "SELECT * FROM parked_turns WHERE approval_id = ?", (approval_id,)
        )
        return None if row is None else _record(row)

    async def row(self, approval_id: str) -> ParkRow | None:
        row = await self._db.fetchone(
            f"SELECT {_ROW_COLUMNS} FROM parked_turns WHERE approval_id = ?", (approval_id,)
        )
        return None if row is None or row["state"] not in _STATES else _row(row)

    async def rows(self, *, states: Sequence[ParkState] = tuple(ParkState)) -> list[ParkRow]:
        """Every row in one of ``states``, oldest first."""
        marks = ", ".join("?" for _ in states)
        rows = await self._db.fetchall(
            f"SELECT {_ROW_COLUMNS} FROM parked_turns WHERE state IN ({marks}) ORDER BY created_at",
            tuple(states),
        )
        return _rows(rows)

    async def of_gone(self, live: Collection[str]) -> list[ParkRow]:
        """The rows held by a replica not among ``live`` (gone), any state, oldest first:
        what the replicas that take over their sessions adopt."""
        marks = ", ".join("?" for _ in live)
        rows = await self._db.fetchall(
            f"SELECT {_ROW_COLUMNS} FROM parked_turns WHERE owner IS NOT NULL"
            f" AND owner NOT IN ({marks}) ORDER BY created_at",
            tuple(live),
        )
        return _rows(rows)

    async def decided(self) -> list[ParkRow]:
        """The parked rows whose card is no longer pending (decided, expired, or gone):
        those a resumption is due for, oldest first. One indexed read."""
        rows = await self._db.fetchall(
            f"SELECT {', '.join('p.' + c for c in _ROW_COLUMNS.split(', '))}"
            " FROM parked_turns p LEFT JOIN approvals a ON a.id = p.approval_id"
            " WHERE p.state = ? AND (a.id IS NULL OR a.status <> 'pending')"
            " ORDER BY p.created_at",
            (ParkState.PARKED,),
        )
        return _rows(rows)

    async def session_calls(self, session_key: str) -> list[ParkRow]:
        """The rows of ``session_key`` whose card is still open (the duplicate guard)."""
        rows = await self._db.fetchall(
            f"SELECT {_ROW_COLUMNS} FROM parked_turns WHERE session_key = ? AND state <> ?",
            (session_key, ParkState.RESUMING),
        )
        return _rows(rows)

    async def open_fingerprints(self, session_key: str, *, excluding: str) -> set[str]:
        """The fingerprints of the calls whose cards still wait for turns of
        ``session_key`` other than ``excluding`` (the duplicate guard covers parked calls)."""
        rows = await self._db.fetchall(
            "SELECT a.fingerprint FROM parked_turns p JOIN approvals a ON a.id = p.approval_id"
            " WHERE p.session_key = ? AND p.turn_id <> ? AND p.state <> ? AND a.status = 'pending'",
            (session_key, excluding, ParkState.RESUMING),
        )
        return {str(r["fingerprint"]) for r in rows}

    async def claim(
        self,
        approval_id: str,
        owner: str | None,
        *,
        states: Sequence[ParkState] = (ParkState.PARKED,),
    ) -> bool:
        """Take the row to resume it (→ ``resuming``, ``owner``), only from one of
        ``states``: one conditional update, so exactly one of several claimants wins."""
        marks = ", ".join("?" for _ in states)
        row = await self._db.execute_returning(
            f"UPDATE parked_turns SET state = ?, owner = ?, updated_at = ?"
            f" WHERE approval_id = ? AND state IN ({marks}) RETURNING approval_id",
            (ParkState.RESUMING, owner, time.time(), approval_id, *states),
        )
        return row is not None

    async def due(self, now: float) -> list[str]:
        """The cards of parked turns still pending whose life is over at ``now``."""
        rows = await self._db.fetchall(
            "SELECT p.approval_id FROM parked_turns p JOIN approvals a ON a.id = p.approval_id"
            " WHERE p.state = ? AND a.status = 'pending' AND a.expires_at <= ?",
            (ParkState.PARKED, now),
        )
        return [str(r["approval_id"]) for r in rows]

    async def note_progress(self, turn_id: str, progress: ProgressRef) -> int:
        """Keep ``progress`` with the rows of the turn ``turn_id`` not yet claimed (its
        resumption edits that message). A row claimed meanwhile is left as is (its
        resumption sends a new one). Returns how many rows took it."""
        rows = await self._db.fetchall(
            "SELECT * FROM parked_turns WHERE turn_id = ? AND state IN (?, ?)",
            (turn_id, ParkState.WAITING, ParkState.PARKED),
        )
        noted = 0
        for row in rows:
            try:
                record = _record(row)
            except UnreadableParkRecord:
                continue
            body = dataclasses.replace(record, progress=progress).body()
            if len(body) > MAX_BODY_CHARS:
                continue
            done = await self._db.execute_returning(
                "UPDATE parked_turns SET body = ?, updated_at = ?"
                " WHERE approval_id = ? AND state IN (?, ?) RETURNING approval_id",
                (
                    body,
                    time.time(),
                    record.approval_id,
                    ParkState.WAITING,
                    ParkState.PARKED,
                ),
            )
            noted += done is not None
        return noted

    async def unclaim(self, approval_id: str, *, at: float) -> None:
        """Give back a claim whose resumption never began (a stop came first)."""
        await self._db.execute(
            "UPDATE parked_turns SET state = ?, owner = NULL, updated_at = ?"
            " WHERE approval_id = ? AND state = ?",
            (ParkState.PARKED, at, approval_id, ParkState.RESUMING),
        )

    async def drop(self, approval_id: str) -> None:
        """The turn is over (resumed, or failed): the row goes."""
        await self._db.execute("DELETE FROM parked_turns WHERE approval_id = ?", (approval_id,))
