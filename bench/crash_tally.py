"""What ``bench/crash_load.py`` counts: each message's fate once the daemon settled.

Messages carry a tag (``t<N>x``; the closing message of each conversation ``b<N>x``), the
model answers ``answer <tag>``, and a turn's ``shell`` command appends the tag to a file in
the workspace. From the platform: how often each tag was answered, and how many "Please ask
again" notices each conversation received. A reply recovery sent again because no check
could decide whether it had arrived begins with the ledger's ``REPEAT_MARKER``: it is
counted apart (a marked repeat says what it is; only an unmarked second answer is a
duplicate), and the store says which replies were undecided (what the daemon's
``hatchway_replies_undecided`` counts). From the store: which messages the outbox says
were noticed (the notice carries no tag; the inbox entry it answers does), every inbox
entry's status, ``PRAGMA integrity_check`` (SQLite). From the workspace (or, with several
replicas, each replica's workspace): how often each command ran.

The store is read with the same queries on either engine (:class:`StoreReadout`):
:func:`read_sqlite` here, ``tests/reliability/replica_rig.py`` for PostgreSQL.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bot.gateway import SHUTDOWN_MESSAGE
from bot.gateway.ledger import REPEAT_MARKER
from tests.reliability.platform_drivers import PlatformDriver

TAG = re.compile(r"\b[tb]\d+x\b")
ANSWER = re.compile(r"\banswer ([tb]\d+x)\b")
NOTICE = SHUTDOWN_MESSAGE.split(". ")[-1]  # "Please ask again."


#: What the tally reads from the store, in SQL both engines speak.
INBOX_BY_STATUS = "SELECT status, COUNT(*) FROM inbox GROUP BY status"
#: Each notice sent, with the message it answers (its tag is in the payload).
NOTICES_SENT = (
    "SELECT i.payload, o.error FROM outbox o JOIN inbox i"
    " ON i.channel = o.channel AND i.message_id = o.message_id"
    " WHERE o.kind = 'notice' AND o.status = 'sent'"
)
#: The messages whose reply recovery counted as delivered without confirmation.
UNCONFIRMED = (
    "SELECT i.payload FROM outbox o JOIN inbox i"
    " ON i.channel = o.channel AND i.message_id = o.message_id"
    " WHERE o.error LIKE 'unconfirmed%'"
)
#: The messages whose reply no check could decide (sent again, marked).
UNDECIDED = (
    "SELECT i.payload FROM outbox o JOIN inbox i"
    " ON i.channel = o.channel AND i.message_id = o.message_id"
    " WHERE o.error LIKE 'undecided%'"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreReadout:
    """What the tally needs from the store once everything stopped."""

    integrity: str | None  # SQLite's integrity check; None where there is none (PostgreSQL)
    inbox: dict[str, int]  # status -> entries
    notices: list[tuple[str, str]]  # (inbox payload, outbox error) of each notice sent
    unconfirmed: list[tuple[str]]  # inbox payloads
    undecided: list[tuple[str]] = field(default_factory=list)  # inbox payloads


def read_sqlite(db: Path) -> StoreReadout:
    with sqlite3.connect(db) as conn:
        return StoreReadout(
            integrity=str(conn.execute("PRAGMA integrity_check").fetchone()[0]),
            inbox=dict(conn.execute(INBOX_BY_STATUS)),
            notices=conn.execute(NOTICES_SENT).fetchall(),
            unconfirmed=conn.execute(UNCONFIRMED).fetchall(),
            undecided=conn.execute(UNDECIDED).fetchall(),
        )


def message_text(tag: int) -> str:
    return f"load t{tag}x"


def barrier_text(conversation: int) -> str:
    return f"last one b{conversation}x"


def answered_tags(driver: PlatformDriver) -> Counter[str]:
    """How many posts answered each tag (not counting repeats marked as such)."""
    return Counter(
        m.group(1)
        for p in driver.posts()
        if not p.text.startswith(REPEAT_MARKER)
        for m in ANSWER.finditer(p.text)
    )


def marked_tags(driver: PlatformDriver) -> Counter[str]:
    """How many posts answered each tag again, marked as a possible repeat."""
    return Counter(
        m.group(1)
        for p in driver.posts()
        if p.text.startswith(REPEAT_MARKER)
        for m in ANSWER.finditer(p.text)
    )


@dataclass(kw_only=True)
class Tally:
    platform: str
    plan: list[tuple[int, int]]  # (tag number, conversation), in sending order
    while_down: set[str] = field(default_factory=set)  # tags sent while the daemon was down
    rounds: list[str] = field(default_factory=list)
    final_exit: int | None = None
    elapsed_s: float = 0.0
    settled_in_time: bool = False
    answered: Counter[str] = field(default_factory=Counter)
    marked: Counter[str] = field(default_factory=Counter)
    #: Messages whose reply no check could decide (the daemon's undecided count).
    undecided: set[str] = field(default_factory=set)
    noticed: set[str] = field(default_factory=set)
    #: Messages whose answer or notice was counted as delivered unconfirmed (its send began
    #: before a crash, on a platform that cannot be asked: Telegram's documented policy).
    unconfirmed: set[str] = field(default_factory=set)
    ran: Counter[str] = field(default_factory=Counter)
    notices_unaccounted: int = 0
    #: Edits that changed a message, made by a process never told its id (a probe's).
    blind_edits: list[str] = field(default_factory=list)
    edits: int = 0  # every edit that changed a message
    inbox: dict[str, int] = field(default_factory=dict)
    integrity: str | None = ""  # None: the engine has no integrity check (PostgreSQL)

    # -- while running -------------------------------------------------------------------

    def settled(self, driver: PlatformDriver, store: StoreReadout | None = None) -> bool:
        """Every message has an answer or a notice came for it (by count). With what was
        read from the store, a message whose reply recovery counted as delivered without
        confirmation counts too: on a platform that cannot be asked (Telegram) it may never
        arrive, and waiting for it would never end. (An unconfirmed notice that did arrive
        then counts twice, so this may say settled one message early: the barrier that
        follows covers it, a conversation's last message being answered after the others.)"""
        answered = {
            tag for tag in answered_tags(driver) + marked_tags(driver) if tag.startswith("t")
        }
        notices = sum(1 for p in driver.posts() if NOTICE in p.text)
        unsure = set() if store is None else _tags_in(store.unconfirmed) - answered
        return len(answered) + notices + len(unsure) >= len(self.plan)

    def barriers_answered(self, driver: PlatformDriver) -> int:
        return sum(1 for tag in answered_tags(driver) if tag.startswith("b"))

    # -- at the end ----------------------------------------------------------------------

    def collect(self, driver: PlatformDriver, db: Path, workspace: Path, ran: str) -> None:
        """Read the platform, the SQLite file ``db`` and the workspace."""
        self.absorb(driver, read_sqlite(db), [workspace], ran)

    def absorb(
        self, driver: PlatformDriver, store: StoreReadout, workspaces: Sequence[Path], ran: str
    ) -> None:
        """Read the platform, what was read from the store, and every workspace (all
        read afresh: absorbing again replaces what an earlier call read)."""
        self.answered = answered_tags(driver)
        self.marked = marked_tags(driver)
        self.blind_edits = driver.blind_edits_that_changed()
        self.edits = len(driver.edits_that_changed())
        self.undecided = _tags_in(store.undecided)
        self.integrity = store.integrity
        self.inbox = dict(store.inbox)
        self.unconfirmed = _tags_in(store.unconfirmed)
        self._settle_notices(driver, store.notices)
        self.ran = Counter()
        for workspace in workspaces:
            for path in workspace.rglob(ran):
                self.ran.update(path.read_text(encoding="utf-8").split())

    def _settle_notices(self, driver: PlatformDriver, notices: list[tuple[str, str]]) -> None:
        """Which messages were told to ask again. The outbox says which notices went out;
        the platform, how many each conversation got. A notice carries no tag, so where a
        conversation got fewer than the outbox says, the missing ones are taken to be those
        counted as delivered without confirmation (their messages are then lost); any other
        difference is counted in :attr:`notices_unaccounted`."""
        conversation_of = {f"t{tag}x": conversation for tag, conversation in self.plan}
        on_platform = Counter(p.conversation for p in driver.posts() if NOTICE in p.text)
        by_conversation: dict[int, list[tuple[str, bool]]] = {}
        repeated: Counter[int] = Counter()  # notices sent again marked, per conversation
        for payload, error in notices:
            found = TAG.search(str(payload))
            if found and found.group(0) in conversation_of:
                tag = found.group(0)
                unconfirmed = str(error or "").startswith("unconfirmed")
                by_conversation.setdefault(conversation_of[tag], []).append((tag, unconfirmed))
                if str(error or "").startswith("undecided"):
                    repeated[conversation_of[tag]] += 1
        self.noticed = set()
        self.notices_unaccounted = 0
        for conversation in set(on_platform) | set(by_conversation):
            recorded = by_conversation.get(conversation, [])
            missing = len(recorded) - on_platform[conversation]
            unsure = [tag for tag, unconfirmed in recorded if unconfirmed]
            if -repeated[conversation] <= missing < 0:
                missing = 0  # a marked repeat of a notice that had arrived: it says so
            if missing < 0 or missing > len(unsure):
                self.notices_unaccounted += abs(missing)
                missing = 0
            never_arrived = set(unsure[:missing])
            self.noticed.update(tag for tag, _ in recorded if tag not in never_arrived)

    def _tags(self) -> list[str]:
        return [f"t{tag}x" for tag, _ in self.plan]

    def _heard(self, tag: str) -> int:
        """Answers of ``tag``, marked repeats included."""
        return self.answered[tag] + self.marked[tag]

    def once(self) -> list[str]:
        return [t for t in self._tags() if self._heard(t) == 1 and t not in self.noticed]

    def twice(self) -> list[str]:
        """Answered twice without a mark: a duplicate nobody was told of."""
        return [t for t in self._tags() if self.answered[t] >= 2]

    def repeated_marked(self) -> list[str]:
        """Answered, and answered again with the mark of a possible repeat."""
        return [t for t in self._tags() if self.answered[t] >= 1 and self.marked[t] >= 1]

    def only_marked(self) -> list[str]:
        """Answered only by a marked repeat (the first copy had not arrived)."""
        return [t for t in self._tags() if self.answered[t] == 0 and self.marked[t] >= 1]

    def undecided_tags(self) -> list[str]:
        return [t for t in self._tags() if t in self.undecided]

    def only_noticed(self) -> list[str]:
        return [t for t in self._tags() if self._heard(t) == 0 and t in self.noticed]

    def both(self) -> list[str]:
        return [t for t in self._tags() if self._heard(t) >= 1 and t in self.noticed]

    def lost(self) -> list[str]:
        return [t for t in self._tags() if self._heard(t) == 0 and t not in self.noticed]

    def lost_unconfirmed(self) -> list[str]:
        """Lost messages whose answer or notice recovery counted as delivered, unconfirmed."""
        return [t for t in self.lost() if t in self.unconfirmed]

    def ran_twice(self) -> list[str]:
        return [t for t in self._tags() if self.ran[t] >= 2]

    def ok(self) -> bool:
        return (
            not self.lost()
            and not self.twice()
            and not self.both()
            and not self.ran_twice()
            and self.notices_unaccounted == 0
            and not self.blind_edits
            and self.integrity in ("ok", None)
        )

    def table(self) -> str:
        def row(label: str, tags: list[str]) -> str:
            shown = f"  {', '.join(tags[:8])}{' …' if len(tags) > 8 else ''}" if tags else ""
            return f"  {label:<22}{len(tags):>5}{shown}"

        lines = [
            f"{self.platform}: {len(self.plan)} messages ({len(self.while_down)} sent while down),"
            f" {len(self.rounds)} rounds, {self.elapsed_s:.1f} s",
            row("answered once", self.once()),
            row("answered twice", self.twice()),
            row("  again, marked", self.repeated_marked()),
            row("answered marked only", self.only_marked()),
            row("undecided (metric)", self.undecided_tags()),
            row("noticed", self.only_noticed()),
            row("answered and noticed", self.both()),
            row("lost", self.lost()),
            row("  reply unconfirmed", self.lost_unconfirmed()),
            row("  sent while down", [t for t in self.lost() if t in self.while_down]),
            row("command ran twice", self.ran_twice()),
            f"  {'notices unaccounted':<22}{self.notices_unaccounted:>5}",
            f"  {'edits that changed':<22}{self.edits:>5}  by a probe: {len(self.blind_edits)}"
            + (f"  {self.blind_edits[:3]}" if self.blind_edits else ""),
            f"  inbox {self.inbox}, integrity {self.integrity or 'n/a'},"
            f" settled {'yes' if self.settled_in_time else 'NO'}, last exit {self.final_exit}",
        ]
        lines += [f"  round {i + 1}: {how}" for i, how in enumerate(self.rounds)]
        return "\n".join(lines)


def _tags_in(rows: list[tuple[str]]) -> set[str]:
    """The message tags in inbox payloads."""
    return {found.group(0) for (payload,) in rows if (found := TAG.search(str(payload)))}
