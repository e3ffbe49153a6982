"""Handover: each session's turns on one replica at a time, in inbox order.

Only where several replicas share one database (PostgreSQL); one process on SQLite keeps
its in-memory queues and never builds this. The rules:

* **One owner per session** (``store.session_owners``). The owner alone runs the session's
  turns, one at a time (:mod:`~bot.gateway.sessions`), in the order of their inbox ids. The
  first replica to admit a message of a session nobody owns takes it; it keeps it while its
  heartbeat lives (:mod:`bot.replicas`). Ownership moves only by a compare-and-set from the
  owner the taker saw, after the taker found that owner gone on a fresh read of the live
  replicas. Taking a session nobody owns is one statement, which also says whether another
  replica left entries in it (only then are the live replicas read and those settled).
  What a replica remembers owning is a hint: its claims need its row.
* **Any replica admits.** Slack spreads events over every socket, so every replica admits
  messages; the inbox's unique key makes a redelivery a no-op everywhere. A message for a
  session owned elsewhere stays ``received`` in the inbox and its owner is woken by a
  notification on :data:`HANDOVER` naming it and the session.
* **The owner claims what waits.** On a wake-up (its own admission, a notification, a sweep)
  the owner claims the session's waiting entries (one conditional update setting their
  ``replica_id`` where nobody had, while the session's owner row names it) and queues them in
  inbox order. A session it has just taken free with nothing else waiting needs no claim:
  the message it admitted is queued at once (nobody else claims in a session it owns).
  Just before a turn runs its entry is taken once more (``received`` and claimed by this
  replica or nobody): one deleted meanwhile, or claimed by another replica, is dropped, an
  edited one runs as it reads now. So an entry never runs twice, even when a replica taken
  for dead still runs.
* **The sweep** (every :data:`SWEEP_S`, and at start-up) reads every unsettled inbox entry
  with its session's owner: a notification that was lost is made up for; a session whose
  owner is gone is taken over. Taking a session over (at a sweep, or by the admission that
  finds its owner gone) first settles the entries the gone replicas left, with start-up
  recovery's rules (:mod:`~bot.gateway.recovery`): what they were running is settled by
  its replies, answered, or its sender told to ask again, and what they had claimed but not
  begun is released and queued again, before anything newer of the session runs. Entries
  of a live replica are never touched by another.
* **A replica settles what it left itself.** A turn that met the database gone leaves its
  entry ``processing`` on a replica that lives on (:mod:`~bot.gateway.sessions`). The sweep
  settles this replica's own ``processing`` entries that no turn here has in hand any more
  by the same rules, once the database answers again, whichever replica owns their session
  by then; a sender told to ask again is told of an outage, not of a restart. It reads
  which entries are in hand before it reads the entry again: a turn lets go of its entry
  only after its outcome was written (or kept to be written), so an entry still
  ``processing`` on the second read is one no turn here will settle.
* **Idle rows go.** Every :data:`PRUNE_S` a replica deletes the owner rows of settled
  sessions without a message for :data:`PRUNE_IDLE_S`, its own (forgotten first, under the
  session's lock) and those of gone replicas; the next message takes the session again.
* **A handed-over ``/stop`` is acknowledged.** Nothing polls for commands, so the replica
  that hands one over sends it again until each owner says it ran it (an owner runs a copy
  sent again once); when the owner that was to answer never says so, the replica the
  ``/stop`` reached answers it itself. A notification carries a few kilobytes at most
  (:data:`~bot.store.signals.MAX_PAYLOAD_BYTES`), so the command goes as what stopping and
  answering need: its envelope without the words after ``/stop`` and without attachments
  (the sender's display name too, should that still not fit).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace

import structlog

from bot.backoff import cancel_requested
from bot.envelope import envelope_from_json, envelope_to_json
from bot.errors import StorageError
from bot.gateway.admission import Arrival
from bot.gateway.recovery import CutOffBy
from bot.gateway.sessions import Sessions
from bot.store import InboxKey, InboxStatus, Store
from bot.store.inbox import InboxEntry
from bot.store.liveness import Liveness
from bot.store.outage import OutageLog
from bot.store.session_owners import Unsettled
from bot.store.signals import MAX_PAYLOAD_BYTES
from bot.turn import TurnIdentity

log = structlog.get_logger(__name__)

#: The notification channel of handovers; its payload names the owner and the session.
HANDOVER = "hatchway_handover"
#: How often a replica sweeps the inbox for lost notifications and gone owners.
SWEEP_S = 1.0
#: How long a replica that handed a ``/stop`` over waits for the owner to say it was done,
#: and how many times it sends it (a notification may be lost: nothing polls for commands)
ACK_S = 2.0
COMMAND_SENDS = 5
#: How many handed-over commands a replica remembers (a command sent again runs once)
REMEMBERED_COMMANDS = 1000
#: How often a replica prunes owner rows, and how long a settled session stays without a
#: message before its row goes (its next message takes it again, in one statement)
PRUNE_S = 300.0
PRUNE_IDLE_S = 3600.0
#: How many sessions a replica remembers as owned elsewhere (which statement to try first)
REMEMBERED_OWNERS = 10_000

RecoverEntries = Callable[[Sequence[InboxEntry], CutOffBy], Awaitable[object]]
"""Start-up recovery's rules applied to the given cut-off entries: of replicas gone
(``restart``), or this replica's own that its database outage cut off (``outage``)."""

Command = Callable[[Arrival, bool], Awaitable[None]]
"""Runs a chat command another replica handed over (``/stop``; the flag: answer it even when
it finds nothing to do)."""


class Handover:
    """Owns sessions, claims their waiting entries, hands over the others (module
    docstring). One per gateway, only on a shared database."""

    def __init__(
        self,
        *,
        store: Store,
        sessions: Sessions,
        replica: Liveness,
        recover: RecoverEntries,
        clock: Callable[[], float] = time.time,
        sweep_s: float = SWEEP_S,
        prune_s: float = PRUNE_S,
        prune_idle_s: float = PRUNE_IDLE_S,
    ) -> None:
        self._store = store
        self._sessions = sessions
        self._replica = replica
        self._recover = recover
        self._clock = clock
        self._sweep_s = sweep_s
        self._prune_s = prune_s
        self._prune_idle_s = prune_idle_s
        #: sessions this replica owns, as far as it knows (a sweep corrects it)
        self._owned: set[str] = set()
        #: the replicas alive at the last fresh read (enough to hand a message over; a
        #: takeover reads again)
        self._seen_live: frozenset[str] = frozenset()
        #: sessions last seen owned by another live replica, oldest first (a hint only)
        self._elsewhere: dict[str, None] = {}
        #: per session, the claim, takeover or pull running and those waiting for it
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
        #: the envelope id and payload each claimed entry had when it was queued: a
        #: different payload at its take means it was edited meanwhile
        self._payloads: dict[InboxKey, tuple[str, str]] = {}
        self._wakeups: asyncio.Queue[str] = asyncio.Queue()
        self._commands: asyncio.Queue[tuple[Arrival, bool, str, str]] = asyncio.Queue()
        #: handed-over commands heard here, by id: True once run (a copy sent again is
        #: only acknowledged again)
        self._heard: dict[str, bool] = {}
        #: the acknowledgements this replica waits for, by (command id, owner)
        self._acks: dict[tuple[str, str], asyncio.Future[None]] = {}
        self._run_command: Command | None = None
        self._draining = False

    def run_commands_with(self, run: Command) -> None:
        """Have ``run`` carry out the chat commands other replicas hand over."""
        self._run_command = run

    def drain(self) -> None:
        """The replica is stopping: it claims nothing more, takes no session and begins no
        turn; the turns running finish (within the drain's time). What it claimed and has
        not begun, and what it admits from now on, is run by the replica that takes its
        sessions over once it is gone."""
        self._draining = True

    @property
    def _me(self) -> str:
        return self._replica.replica_id

    # -- admission --------------------------------------------------------------------------

    async def admitted(self, turn: TurnIdentity) -> None:
        """A message was admitted here (its inbox entry is ``received``): queue it when this
        replica owns its session, or hand it over to the owner. A storage failure from here
        on loses nothing: the entry is in the inbox, and the next sweep sees to it."""
        key = turn.session_key
        try:
            if self._draining:
                await self._leave_to_next_owner(key)
                return
            cached = key in self._owned
            owner = self._me if cached else await self._owner_for(key, turn)
            if owner is None:  # queued by the take itself
                return
            if owner == self._me and (await self._pull(key, turn) or not cached):
                return
            if cached:
                # the session's row was moved or pruned meanwhile (the claim found no row of
                # this replica): ask the database who owns it now
                self._owned.discard(key)
                owner = await self._owner_for(key)
                if owner == self._me:
                    await self._pull(key, turn)
                    return
            await self._store.signals.notify(HANDOVER, json.dumps({"to": owner, "session": key}))
            log.info("turn_handed_over", session=key, owner=owner)
        except StorageError as exc:
            log.warning("handover_deferred", session=key, error=str(exc))

    async def _leave_to_next_owner(self, key: str) -> None:
        """This replica is stopping: wake the session's owner when it is another live one;
        otherwise the entry waits for whichever replica takes the session once this one has
        left (its sweep)."""
        owner = await self._store.session_owners.owner(key)
        if owner is not None and owner != self._me and owner in await self._live():
            await self._store.signals.notify(HANDOVER, json.dumps({"to": owner, "session": key}))
            log.info("turn_handed_over", session=key, owner=owner)
        else:
            log.info("turn_left_to_next_owner", session=key)

    async def take(self, turn: TurnIdentity) -> TurnIdentity | None:
        """Take the turn's entry to run it now (the session worker asks just before): the
        turn as its entry reads now, or None when it was deleted, begun or claimed by
        another replica meanwhile."""
        _, queued = self._payloads.pop(turn.inbox, ("", ""))
        if self._draining:
            # begun here it could be cut off by the end of the drain: the session's next
            # owner runs it instead
            log.info("turn_left_to_next_owner", session=turn.session_key)
            return None
        entry = await self._store.inbox.take(turn.inbox, self._me)
        if entry is None:
            log.info("turn_not_taken", session=turn.session_key, message_id=turn.inbox.message_id)
            return None
        if self._draining:
            # the drain began while the entry was being taken: it counted no turn here, may
            # be over already and would cut this one off; the entry stays claimed by this
            # replica, released to the session's next owner once this one has left
            log.info("turn_left_to_next_owner", session=turn.session_key, taken=True)
            return None
        if queued and entry.payload and entry.payload != queued:
            return replace(turn, envelope=envelope_from_json(entry.payload))
        return turn

    async def forward_stop(self, arrival: Arrival, nothing_here: bool) -> bool:
        """Hand a ``/stop`` that reached this replica to the other live replicas that own
        the sessions it acts on (its session, or every session of its conversation for one
        of a whole conversation); whether any will answer it. When it stopped nothing here
        (``nothing_here``), the first of them answers even if it stops nothing either."""
        envelope = arrival.envelope
        try:
            if envelope.command_scope == "conversation":
                conversation = f"{envelope.channel}:{envelope.conversation_id}"
                owners = await self._store.session_owners.owners_in(conversation)
            else:
                owner = await self._store.session_owners.owner(arrival.session_key)
                owners = set() if owner is None else {owner}
            others = owners - {self._me}
            if not others:
                return False
            live = await self._live()
            handed = sorted(others & live)
            if not handed:
                return False
            command_id = uuid.uuid4().hex
            command = self._forwardable(arrival, command_id, handed)
            if command is None:
                log.warning("command_not_handed_over", error="its envelope is too large to send")
                return False
            acked = await self._hand_over(arrival, command_id, command, handed, nothing_here)
        except StorageError as exc:
            log.warning("command_not_handed_over", error=str(exc))
            return False
        log.info("command_handed_over", owners=handed, acknowledged=acked)
        # the owner asked to answer said it ran it; otherwise this replica answers (what
        # it stopped here, or that nothing it can reach runs)
        return handed[0] in acked

    def _forwardable(self, arrival: Arrival, command_id: str, handed: list[str]) -> str | None:
        """The envelope of a ``/stop`` as it is handed over (JSON), small enough for the
        notification to every owner of ``handed``: the command word without the words after
        it and no attachments (stopping and answering read neither), the sender's display
        name dropped too if it still does not fit; None when nothing fits (this replica then
        answers the command itself)."""
        envelope = arrival.envelope
        words = envelope.text.split(maxsplit=1)
        bare = replace(envelope, text=words[0] if words else "", attachments=())
        nameless = replace(bare, sender=replace(bare.sender, display_name=""))
        for candidate in (bare, nameless):
            command = envelope_to_json(candidate)
            sizes = (
                len(self._command_payload(arrival, command_id, command, owner, False).encode())
                for owner in handed
            )
            if max(sizes) <= MAX_PAYLOAD_BYTES:
                return command
        return None

    def _command_payload(
        self, arrival: Arrival, command_id: str, command: str, owner: str, answer: bool
    ) -> str:
        payload = {
            "to": owner,
            "from": self._me,
            "id": command_id,
            "session": arrival.session_key,
            "command": command,
            "answer": answer,
        }
        # not escaped: a non-ASCII letter is two or three bytes, not six
        return json.dumps(payload, ensure_ascii=False)

    async def _hand_over(
        self,
        arrival: Arrival,
        command_id: str,
        command: str,
        handed: list[str],
        nothing_here: bool,
    ) -> list[str]:
        """Send ``command`` (the envelope as :meth:`_forwardable` wrote it) to each of
        ``handed`` until each says it ran it (again after :data:`ACK_S`, at most
        :data:`COMMAND_SENDS` times: a notification may be lost, the owner runs a copy sent
        again once); the owners that said so."""
        loop = asyncio.get_running_loop()
        waiting = {owner: loop.create_future() for owner in handed}
        for owner, future in waiting.items():
            self._acks[(command_id, owner)] = future
        try:
            for _ in range(COMMAND_SENDS):
                for owner in [o for o, f in waiting.items() if not f.done()]:
                    answer = nothing_here and owner == handed[0]
                    payload = self._command_payload(arrival, command_id, command, owner, answer)
                    await self._store.signals.notify(HANDOVER, payload)
                pending = [f for f in waiting.values() if not f.done()]
                if not pending:
                    break
                await asyncio.wait(pending, timeout=ACK_S)
        finally:
            for owner in handed:
                self._acks.pop((command_id, owner), None)
        return [owner for owner, future in waiting.items() if future.done()]

    # -- the owner's side -------------------------------------------------------------------

    async def run(self) -> None:
        """Listen for handovers and sweep every ``sweep_s``; lives until cancelled."""
        await self._store.signals.listen(HANDOVER, self._signalled)
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._woken())
                group.create_task(self._sweeping())
                group.create_task(self._pruning())
                group.create_task(self._commanded())
        finally:
            await self._store.signals.unlisten(HANDOVER, self._signalled)

    def _signalled(self, payload: str) -> None:
        try:
            data = json.loads(payload)
            owner = str(data["to"])
            if owner != self._me:
                return
            if "ack" in data:
                future = self._acks.get((str(data["ack"]), str(data["by"])))
                if future is not None and not future.done():
                    future.set_result(None)
                return
            key = str(data["session"])
            command = data.get("command")
            envelope = None if command is None else envelope_from_json(str(command))
            answer = bool(data.get("answer", True))
            sender, command_id = str(data.get("from", "")), str(data.get("id", ""))
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("handover_signal_unreadable")
            return
        if envelope is None:
            self._wakeups.put_nowait(key)
        elif command_id and command_id in self._heard:
            if self._heard[command_id]:  # ran already: its acknowledgement was lost
                self._commands.put_nowait(
                    (Arrival(envelope=envelope, session_key=key), False, sender, command_id)
                )
        else:
            if command_id:
                self._heard[command_id] = False
                while len(self._heard) > REMEMBERED_COMMANDS:
                    del self._heard[next(iter(self._heard))]
            arrival = Arrival(envelope=envelope, session_key=key)
            self._commands.put_nowait((arrival, answer, sender, command_id))

    async def _commanded(self) -> None:
        while True:
            arrival, answer, sender, command_id = await self._commands.get()
            if self._run_command is None:
                continue
            if not self._heard.get(command_id, False):
                try:
                    await self._run_command(arrival, answer)
                except Exception:
                    # Boundary: a handed-over command that fails is logged, never fatal.
                    log.exception("handed_over_command_failed")
                if command_id in self._heard:
                    self._heard[command_id] = True
            if sender and command_id:
                ack = {"to": sender, "ack": command_id, "by": self._me}
                try:
                    await self._store.signals.notify(HANDOVER, json.dumps(ack))
                except StorageError as exc:
                    log.warning("command_ack_failed", error=str(exc))

    async def _woken(self) -> None:
        while True:
            key = await self._wakeups.get()
            try:
                await self._pull(key)
            except StorageError as exc:
                log.warning("handover_pull_failed", session=key, error=str(exc))

    async def _sweeping(self) -> None:
        outage = OutageLog("handover_sweep")
        while True:
            await asyncio.sleep(self._sweep_s)
            try:
                await self.sweep()
            except Exception as exc:
                if cancel_requested():
                    raise asyncio.CancelledError from exc
                # Boundary: a failed sweep is tried again at the next one (an outage is
                # one line, not one traceback a second).
                outage.failed(exc)
            else:
                outage.succeeded()

    async def sweep(self) -> int:
        """One look at every unsettled inbox entry: queue what waits for a session this
        replica owns and is not queued here, take over the sessions of gone owners (settling
        what they left). Start-up recovery on a shared database. Returns how many sessions
        were taken over."""
        self._forget_dropped()
        if self._draining:
            return 0
        rows = await self._store.session_owners.unsettled()
        if not rows:
            return 0
        await self._settle_own(rows)
        live = await self._live()
        taken = 0
        for key, entries in _by_session(rows):
            owner = entries[0].owner
            if owner is not None and owner != self._me and owner in live:
                self._owned.discard(key)
                continue
            if owner != self._me:
                async with self._session(key):
                    won = await self._take_over(key, was=owner, live=live)
                if not won:
                    continue
                taken += 1
            elif any(_left_by_gone(e, live) for e in entries):
                async with self._session(key):
                    await self._settle_gone(key, live)
            self._owned.add(key)
            if any(
                e.status is InboxStatus.RECEIVED and not self._sessions.is_live(e.envelope_id)
                for e in entries
            ):
                await self._pull(key)
        return taken

    async def _pruning(self) -> None:
        while True:
            await asyncio.sleep(self._prune_s)
            try:
                await self.prune()
            except StorageError as exc:
                # tried again at the next one
                log.warning("session_owners_prune_failed", error=str(exc))

    async def prune(self, *, idle_s: float | None = None) -> int:
        """Delete the owner rows of settled sessions that saw no message for ``idle_s``
        (default ``prune_idle_s``): this replica's, and those of replicas gone. Returns how
        many went.

        This replica forgets its own first, holding their sessions (so no claim of them
        runs meanwhile here); a claim needs the owner's row, so a session whose row went is
        claimed by nobody until a replica takes it again (its next message, or a sweep)."""
        if self._draining:
            return 0
        idle_since = self._clock() - (self._prune_idle_s if idle_s is None else idle_s)
        rows = await self._store.session_owners.prunable(
            self._me, await self._live(), idle_since=idle_since
        )
        if not rows:
            return 0
        async with AsyncExitStack() as held:
            for key, owner in rows:
                if owner == self._me:
                    await held.enter_async_context(self._session(key))
                    self._owned.discard(key)
            deleted = await self._store.session_owners.prune(rows, idle_since=idle_since)
        if deleted:
            log.info("session_owners_pruned", sessions=len(deleted))
        return len(deleted)

    async def _settle_own(self, rows: Sequence[Unsettled]) -> None:
        """Settle this replica's ``processing`` entries that no turn here has in hand (the
        module docstring), session by session."""
        mine = [e for e in rows if e.status is InboxStatus.PROCESSING and e.replica_id == self._me]
        if not mine or not self._replica.steady():
            return
        in_hand = self._sessions.in_hand()
        for key in dict.fromkeys(e.session_key for e in mine if e.key not in in_hand):
            async with self._session(key):
                await self._settle_left_here(key)

    async def _settle_left_here(self, key: str) -> None:
        # in this order: what is in hand, then the entries (a turn that ends in between has
        # written its outcome by the time it lets go, and reads settled here)
        in_hand = self._sessions.in_hand()
        rows = await self._store.session_owners.unsettled(key)
        left: list[InboxEntry] = []
        for unsettled in rows:
            if (
                unsettled.status is InboxStatus.PROCESSING
                and unsettled.replica_id == self._me
                and unsettled.key not in in_hand
            ):
                entry = await self._store.inbox.get(unsettled.key)
                if entry is not None and entry.status is InboxStatus.PROCESSING:
                    left.append(entry)
        if left and not self._draining:
            log.info("session_recovering", session=key, entries=len(left), left_here=True)
            await self._recover(left, "outage")

    def _forget_dropped(self) -> None:
        """Forget the payloads of turns dropped from their queue before their take
        (``/stop``)."""
        for key, (envelope_id, _) in list(self._payloads.items()):
            if not self._sessions.is_live(envelope_id):
                del self._payloads[key]

    async def _owner_for(self, key: str, admitted: TurnIdentity | None = None) -> str | None:
        """The live owner of ``key``, taking it first when nobody owns it or its owner is
        gone (and then settling what the gone owner left). A session nobody owns costs one
        statement (:meth:`~bot.store.session_owners.SessionOwners.take_free`), and no read
        of the live replicas unless it holds entries another replica left; when nothing
        else of it waits either, ``admitted`` (the turn just admitted here) is queued at
        once, with no claim (its take, just before it runs, names this replica), and None
        is returned."""
        async with self._session(key):
            # a session seen owned elsewhere is likely still so: read its owner first
            was = await self._store.session_owners.owner(key) if key in self._elsewhere else None
            while True:
                if was is None:
                    taken = await self._store.session_owners.take_free(
                        key,
                        self._me,
                        at=self._clock(),
                        admitted=None if admitted is None else admitted.inbox,
                    )
                    if taken is not None:
                        self._owned.add(key)
                        self._elsewhere.pop(key, None)
                        if taken.leftovers:
                            await self._settle_gone(key, await self._live())
                        elif (
                            admitted is not None and not taken.others_waiting and not self._draining
                        ):
                            self._queue(
                                admitted.inbox, admitted, envelope_to_json(admitted.envelope)
                            )
                            return None
                        return self._me
                    was = await self._store.session_owners.owner(key)
                    if was is None:  # pruned meanwhile: take it again
                        continue
                if was == self._me:
                    self._owned.add(key)
                    self._elsewhere.pop(key, None)
                    return was
                if was in self._seen_live:
                    self._seen_elsewhere(key)
                    return was
                live = await self._live()
                if was in live:
                    self._seen_elsewhere(key)
                    return was
                if await self._take_over(key, was=was, live=live):
                    self._elsewhere.pop(key, None)
                    return self._me
                was = await self._store.session_owners.owner(key)

    def _seen_elsewhere(self, key: str) -> None:
        """Remember that ``key`` was owned by another replica (a hint: which statement to
        try first; the oldest are forgotten)."""
        self._elsewhere.pop(key, None)
        self._elsewhere[key] = None
        while len(self._elsewhere) > REMEMBERED_OWNERS:
            del self._elsewhere[next(iter(self._elsewhere))]

    async def _take_over(self, key: str, *, was: str | None, live: frozenset[str]) -> bool:
        """Take ``key`` from ``was`` (gone, or None), then settle what gone replicas left
        in it; False when another replica took it first."""
        if not await self._store.session_owners.take(key, self._me, was=was, at=self._clock()):
            return False
        self._owned.add(key)
        if was is not None:
            log.info("session_taken_over", session=key, was=was)
        await self._settle_gone(key, live)
        return True

    async def _settle_gone(self, key: str, live: frozenset[str]) -> None:
        """Settle the entries of ``key`` that gone replicas left: those they were running by
        recovery's rules, those they had claimed released (the pull queues them again)."""
        rows = await self._store.session_owners.unsettled(key)
        cut_off: list[InboxEntry] = []
        for unsettled in (e for e in rows if _left_by_gone(e, live)):
            if unsettled.status is InboxStatus.PROCESSING:
                entry = await self._store.inbox.get(unsettled.key)
                if entry is not None:
                    cut_off.append(entry)
            elif unsettled.replica_id is not None:
                await self._store.inbox.release(unsettled.key, unsettled.replica_id)
        if cut_off:
            log.info("session_recovering", session=key, entries=len(cut_off))
            await self._recover(cut_off, "restart")

    async def _pull(self, key: str, admitted: TurnIdentity | None = None) -> bool:
        """Claim ``key``'s waiting entries and queue those not queued here, in inbox order
        (``admitted``: the turn this replica just admitted, queued as it is). Whether the
        claim found anything (nothing: the session is not this replica's, or nothing
        waits)."""
        if self._draining:
            return True
        async with self._session(key):
            waiting = await self._store.inbox.claim_waiting(key, self._me)
            for entry in waiting:
                if self._sessions.is_live(entry.envelope_id):
                    continue
                if admitted is not None and entry.key == admitted.inbox:
                    turn = admitted
                elif not entry.payload:
                    continue
                else:
                    turn = TurnIdentity(
                        turn_id=uuid.uuid4().hex,
                        session_key=key,
                        envelope=envelope_from_json(entry.payload),
                    )
                self._queue(entry.key, turn, entry.payload)
            return bool(waiting)

    def _queue(self, key: InboxKey, turn: TurnIdentity, payload: str) -> None:
        """Queue ``turn`` (of the entry ``key``), remembering the payload its entry had (an
        edit meanwhile shows at its take)."""
        self._payloads[key] = (turn.envelope.envelope_id, payload)
        self._sessions.enqueue(turn)

    async def _live(self) -> frozenset[str]:
        """The replicas alive now (this one always: it is running this)."""
        self._seen_live = await self._replica.live_replicas()
        return self._seen_live

    @asynccontextmanager
    async def _session(self, key: str) -> AsyncIterator[None]:
        """One claim, takeover or pull of ``key`` at a time in this process (so queued
        turns keep inbox order); the lock is dropped once nobody holds or awaits it."""
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


def _left_by_gone(entry: Unsettled, live: frozenset[str]) -> bool:
    """Whether ``entry`` is a gone replica's to settle: taken by a replica not alive, or
    running with nobody named (written before replicas were)."""
    if entry.replica_id is None:
        return entry.status is InboxStatus.PROCESSING
    return entry.replica_id not in live


def _by_session(rows: Sequence[Unsettled]) -> Iterator[tuple[str, list[Unsettled]]]:
    """``rows`` grouped by session, sessions in the order of their oldest entry."""
    groups: dict[str, list[Unsettled]] = {}
    for row in rows:
        groups.setdefault(row.session_key, []).append(row)
    yield from groups.items()
