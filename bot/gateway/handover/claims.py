"""Claims: the owner of a session admits, claims and takes its turns; any other replica
hands them over.

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
  notification on :data:`~bot.gateway.handover.ownership.HANDOVER` naming it and the
  session.
* **The owner claims what waits.** On a wake-up (its own admission, a notification, a sweep)
  the owner claims the session's waiting entries (one conditional update setting their
  ``replica_id`` where nobody had, while the session's owner row names it) and queues them in
  inbox order. A session it has just taken free with nothing else waiting needs no claim:
  the message it admitted is queued at once (nobody else claims in a session it owns).
  Just before a turn runs its entry is taken once more (``received`` and claimed by this
  replica or nobody): one deleted meanwhile, or claimed by another replica, is dropped, an
  edited one runs as it reads now. So an entry never runs twice, even when a replica taken
  for dead still runs.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import replace

import structlog

from bot.envelope import envelope_from_json, envelope_to_json
from bot.errors import StorageError
from bot.gateway.admission import Arrival
from bot.gateway.handover.ownership import HANDOVER, Ownership
from bot.gateway.handover.relay import Command, CommandRelay
from bot.gateway.handover.settlement import RecoverEntries, Settlement
from bot.gateway.handover.sweep import PRUNE_IDLE_S, PRUNE_S, SWEEP_S, Sweep
from bot.gateway.sessions import Sessions
from bot.store import InboxKey, Store
from bot.store.liveness import Liveness
from bot.turn import TurnIdentity

log = structlog.get_logger(__name__)


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
        self._clock = clock
        self._ownership = Ownership(replica)
        self._settlement = Settlement(
            store=store,
            sessions=sessions,
            ownership=self._ownership,
            recover=recover,
            clock=clock,
        )
        self._sweep = Sweep(
            store=store,
            sessions=sessions,
            ownership=self._ownership,
            settlement=self._settlement,
            pull=self._pull,
            forget_dropped=self._forget_dropped,
            clock=clock,
            sweep_s=sweep_s,
            prune_s=prune_s,
            prune_idle_s=prune_idle_s,
        )
        self._relay = CommandRelay(store=store, ownership=self._ownership)
        #: the envelope id and payload each claimed entry had when it was queued: a
        #: different payload at its take means it was edited meanwhile
        self._payloads: dict[InboxKey, tuple[str, str]] = {}
        self._wakeups: asyncio.Queue[str] = asyncio.Queue()

    def run_commands_with(self, run: Command) -> None:
        """Have ``run`` carry out the chat commands other replicas hand over."""
        self._relay.run_commands_with(run)

    async def forward_stop(self, arrival: Arrival, nothing_here: bool) -> bool:
        """Hand a ``/stop`` to the owners of the sessions it acts on
        (:meth:`~bot.gateway.handover.relay.CommandRelay.forward_stop`)."""
        return await self._relay.forward_stop(arrival, nothing_here)

    async def sweep(self) -> int:
        """One sweep (:meth:`~bot.gateway.handover.sweep.Sweep.sweep`); how many sessions
        were taken over."""
        return await self._sweep.sweep()

    async def prune(self, *, idle_s: float | None = None) -> int:
        """Prune idle owner rows (:meth:`~bot.gateway.handover.sweep.Sweep.prune`); how
        many went."""
        return await self._sweep.prune(idle_s=idle_s)

    def drain(self) -> None:
        """The replica is stopping: it claims nothing more, takes no session and begins no
        turn; the turns running finish (within the drain's time). What it claimed and has
        not begun, and what it admits from now on, is run by the replica that takes its
        sessions over once it is gone."""
        self._ownership.draining = True

    @property
    def _me(self) -> str:
        return self._ownership.me

    @property
    def _draining(self) -> bool:
        return self._ownership.draining

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
            cached = key in self._ownership.owned
            owner = self._me if cached else await self._owner_for(key, turn)
            if owner is None:  # queued by the take itself
                return
            if owner == self._me and (await self._pull(key, turn) or not cached):
                return
            if cached:
                # the session's row was moved or pruned meanwhile (the claim found no row of
                # this replica): ask the database who owns it now
                self._ownership.owned.discard(key)
                owner = await self._owner_for(key)
                if owner == self._me:
                    await self._pull(key, turn)
                    return
            await self._store.signals.notify(HANDOVER, json.dumps({"to": owner, "session": key}))
            log.info("turn_handed_over", session=key, owner=owner)
        except StorageError as exc:
            log.warning("handover_deferred", session=key, error=str(exc))

    async def own(self, key: str) -> bool:
        """Whether this replica owns ``key`` now, taking it first when nobody owns it or
        its owner is gone (settling what the gone owner left, as an admission would):
        what a parked turn's resumption, or its adoption, asks before it is queued here
        (:mod:`bot.gateway.resumption`). False while draining, and when another live
        replica owns it."""
        if self._draining:
            return False
        # a fresh read of the live replicas: the one kept may still count a gone owner
        await self._ownership.live()
        return await self._owner_for(key) == self._me and not self._draining

    async def _leave_to_next_owner(self, key: str) -> None:
        """This replica is stopping: wake the session's owner when it is another live one;
        otherwise the entry waits for whichever replica takes the session once this one has
        left (its sweep)."""
        owner = await self._store.session_owners.owner(key)
        if owner is not None and owner != self._me and owner in await self._ownership.live():
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

    # -- the owner's side -------------------------------------------------------------------

    async def run(self) -> None:
        """Listen for handovers, sweep and prune, run handed-over commands; lives until
        cancelled."""
        await self._store.signals.listen(HANDOVER, self._signalled)
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._woken())
                group.create_task(self._sweep.run())
                group.create_task(self._relay.run())
        finally:
            await self._store.signals.unlisten(HANDOVER, self._signalled)

    def _signalled(self, payload: str) -> None:
        try:
            data = json.loads(payload)
            owner = str(data["to"])
            if owner != self._me:
                return
            if "ack" in data or data.get("command") is not None:
                self._relay.heard(data)
                return
            key = str(data["session"])
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("handover_signal_unreadable")
            return
        self._wakeups.put_nowait(key)

    async def _woken(self) -> None:
        while True:
            key = await self._wakeups.get()
            try:
                await self._pull(key)
            except StorageError as exc:
                log.warning("handover_pull_failed", session=key, error=str(exc))

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
        async with self._ownership.held(key):
            # a session seen owned elsewhere is likely still so: read its owner first
            was = (
                await self._store.session_owners.owner(key)
                if self._ownership.is_elsewhere(key)
                else None
            )
            while True:
                if was is None:
                    taken = await self._store.session_owners.take_free(
                        key,
                        self._me,
                        at=self._clock(),
                        admitted=None if admitted is None else admitted.inbox,
                    )
                    if taken is not None:
                        self._ownership.owned.add(key)
                        self._ownership.forget_elsewhere(key)
                        if taken.leftovers:
                            await self._settlement.settle_gone(key, await self._ownership.live())
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
                    self._ownership.owned.add(key)
                    self._ownership.forget_elsewhere(key)
                    return was
                if was in self._ownership.seen_live:
                    self._ownership.seen_elsewhere(key)
                    return was
                live = await self._ownership.live()
                if was in live:
                    self._ownership.seen_elsewhere(key)
                    return was
                if await self._settlement.take_over(key, was=was, live=live):
                    self._ownership.forget_elsewhere(key)
                    return self._me
                was = await self._store.session_owners.owner(key)

    async def _pull(self, key: str, admitted: TurnIdentity | None = None) -> bool:
        """Claim ``key``'s waiting entries and queue those not queued here, in inbox order
        (``admitted``: the turn this replica just admitted, queued as it is). Whether the
        claim found anything (nothing: the session is not this replica's, or nothing
        waits)."""
        if self._draining:
            return True
        async with self._ownership.held(key):
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
