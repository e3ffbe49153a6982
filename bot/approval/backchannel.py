"""The inline backchannel: post an approval card, wait for one decision, edit the card.

Contract:

* each :meth:`Backchannel.ask` creates a new approval row with a fresh opaque id bound to the
  call's fingerprint; a click decides only that row, once (conditional update in the store);
* the waiting ask wakes on an in-process click and also re-reads the row about once per
  ``poll_interval_s``, so a decision written by another process (``hatchway approvals
  approve``) is noticed;
* on timeout the runtime expires the row (unless someone decided first) and the card shows it;
  a click arriving after the deadline expires it too, so a late click never sees a row that
  is still pending but can no longer be decided;
* when no eligible approver can see the conversation (:mod:`bot.approval.reach`) and no
  approver's direct-message copy could be posted, the request is expired at once
  (``no approver reachable``) instead of waiting for nobody;
* the cards are edited to the outcome by the asking side; a restart is handled by
  :meth:`expire_pending`, a shutdown by :meth:`close`, which expires every pending request
  at once (waking the turns that wait on them) and refuses new ones. Where several replicas
  share the database, a decision made on another replica wakes the asking one through it,
  and a start or a stop expires only what :mod:`bot.approval.shared` allows (the requests
  of replicas gone, or of this one). A click on a request
  that is no longer open edits the card it came from
  (:attr:`~bot.cards.CardAction.card`) to the row's outcome as well, which covers
  copies whose place was never stored; edits always render the row, so two of them racing
  show the same outcome.

This module is the asking side and the lifecycle (start, shutdown, the replicas' watch); the
answers live in :mod:`bot.approval.card_flow` (:attr:`Backchannel.flow`), the waiting and
the runtime's expiry in :mod:`bot.approval.waits`.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass

import structlog

from bot import telemetry
from bot.approval.card import decision_for
from bot.approval.card_desk import CardDesk, ChannelLookup, PolicyLookup
from bot.approval.card_flow import CardFlow
from bot.approval.gate import ApprovalDecision, ApprovalParked
from bot.approval.handler import AskedCall
from bot.approval.reach import ReachCheck, eligible_approvers, named_approvers
from bot.approval.reasons import RuntimeReason
from bot.approval.shared import SharedApprovals
from bot.approval.waits import Waits
from bot.channel import Channel
from bot.crashpoints import crash_point
from bot.scrub import scrub_text
from bot.store import Store
from bot.store.approvals import ApprovalRecord, ApprovalStatus
from bot.store.inbox import InboxStatus
from bot.store.parked import ParkRecord, ParkState, UnreadableParkRecord
from bot.turn import PARK_BY

log = structlog.get_logger(__name__)

#: The inbox error of a parked turn ``/stop`` or ``/new`` ended.
CANCELLED_WHILE_PARKED = "cancelled while parked"


class Backchannel:
    """Approval cards in chat: asks, and the start, shutdown and replicas' watch. One per daemon."""

    def __init__(
        self,
        store: Store,
        channel_for: ChannelLookup,
        policy_for: PolicyLookup,
        clock: Callable[[], float],
        *,
        poll_interval_s: float = 1.0,
        shared: SharedApprovals | None = None,
    ) -> None:
        self._store = store
        self._shared = shared or SharedApprovals(store)
        self._cards = CardDesk(store, channel_for, policy_for)
        self._clock = clock
        self._waits = Waits(store, clock, poll_interval_s=poll_interval_s)
        #: Applies the answers (:mod:`bot.approval.card_flow`).
        self.flow = CardFlow(store, policy_for, self._cards, self._waits, self._shared, clock)
        self._closed = False

    async def ask(
        self,
        asked: AskedCall,
        channel: Channel,
        *,
        approver_here: bool,
        reach: ReachCheck | None = None,
    ) -> ApprovalDecision:
        """Post the card (in the conversation, and to eligible approvers' DMs when
        configured) and wait for one decision. ``approver_here`` says whether an eligible
        approver can see the conversation's card (:func:`bot.approval.reach.approvers_here`)."""
        request, policy, view = asked.request, asked.policy, asked.view
        env = request.turn.envelope
        named = await named_approvers(channel, env, policy, check=reach)
        now = self._clock()
        record = ApprovalRecord(
            # Hex, not urlsafe base64: an id starting with "-" reads as an option to
            # `hatchway approvals approve ID`.
            id=secrets.token_hex(12),
            channel=request.turn.channel,
            conversation_id=env.conversation_id,
            thread_id=env.thread_id,
            session_key=request.turn.session_key,
            requester=env.sender.id,
            requester_name=scrub_text(env.sender.display_name),
            tool=request.tool,
            fingerprint=request.fingerprint,
            summary=view.lines,
            full_text=view.full,
            cut=view.cut,
            diff_text=view.diff_text,
            ask_reason=asked.why,
            created_at=now,
            expires_at=now + policy.timeout_s,
            replica_id=self._shared.replica_id,
            turn_id=request.turn.turn_id,
            call_id=request.call_id,
            agent=env.agent,
            approvers_named=named,
            grant_choices=asked.grant_choices,
            quorum=asked.quorum,
        )
        await self._store.approvals.create(record)
        wakeup = self._waits.open(record.id)
        # a turn that can park records itself before the card is out: a stop, or a kill,
        # from here on leaves a turn that can continue once the card is decided
        # (with several replicas, only while every live one parks: a rolling upgrade)
        ticket = (
            request.park
            if request.park is not None
            and policy.park
            and not self._closed
            and await self._shared.can_park()
            else None
        )
        parkable = ticket is not None and await ticket.hold(record.id, now)
        if parkable:
            self._waits.parkable(record.id)
        self.flow.remember_turn(record.id, request.turn.turn_id)
        telemetry.note("hatchway.approval_id", record.id)
        log.info(
            "approval_requested",
            approval_id=record.id,
            tool=request.tool,
            fingerprint=record.fingerprint[:16],
            channel=record.channel,
        )
        try:
            # an approver's DM copy, unless this conversation already is that DM
            dm_to = tuple(
                a
                for a in eligible_approvers(policy, env.sender.id)
                if env.is_group or a != env.sender.id
            )
            # the requester's own DM, where nobody else sees a card: a notice, no buttons
            told_only = policy.dm_approvers and not env.is_group and not approver_here
            if told_only:
                await self._cards.tell_waiting(channel, record, env.reply_target)
                refs = await self._cards.post_copies(channel, record, dm_to)
            else:
                refs = await self._cards.post(
                    channel, record, env.reply_target, dm_to=dm_to if policy.dm_approvers else ()
                )
            crash_point("after_card_post")
            if refs:
                # Shielded: a cancel landing inside a write must not leave it half done.
                await asyncio.shield(self._store.approvals.set_card_refs(record.id, refs))
            if not refs:
                # told only: no approver's copy could be posted
                failed = RuntimeReason.NOBODY_REACHABLE if told_only else RuntimeReason.CARD_FAILED
                await self.expire(record, failed)
            elif not approver_here and not told_only and len(refs) == 1:
                log.warning("approval_nobody_reachable", approval_id=record.id, tool=record.tool)
                await self.expire(record, RuntimeReason.NOBODY_REACHABLE)
            elif self._closed and not parkable:
                await self.expire(record, RuntimeReason.SHUTDOWN)
            elif self._closed or await self._waits.until_decided(
                record,
                wakeup,
                park_at=now + policy.wait_in_turn_s if parkable else None,
                park_by=PARK_BY.get(),
            ):
                # asked again as the turn parks: a replica of a release that does not park
                # may have joined since the card was posted (a rolling upgrade)
                if await self._shared.can_park():
                    # the card stays open; the turn ends here and resumes once it is decided
                    log.info("approval_parked", approval_id=record.id, tool=record.tool)
                    raise ApprovalParked(record.id, now)
                # as with park = false from here on: a stop expires the card, otherwise the
                # turn goes on waiting for it
                assert ticket is not None
                self._waits.unparkable(record.id)
                parkable = False
                await ticket.release(record.id)
                log.info("approval_not_parked", approval_id=record.id, tool=record.tool)
                if self._closed:
                    await self.expire(record, RuntimeReason.SHUTDOWN)
                else:
                    await self._waits.until_decided(record, wakeup)
        except asyncio.CancelledError:
            await self.expire(record, RuntimeReason.CANCELLED)
            await self._cards.edit_all(record.id)
            if ticket is not None and parkable:
                await asyncio.shield(ticket.release(record.id))
            raise
        finally:
            self._waits.release(record.id)
        if ticket is not None and parkable:
            await ticket.release(record.id)  # decided in its turn: nothing to resume
        final = await self._cards.edit_all(record.id)
        decision = decision_for(final or record, request.fingerprint)
        log.info(
            "approval_decided",
            approval_id=record.id,
            tool=request.tool,
            verdict=decision.verdict,
            decided_by=decision.decided_by,
        )
        return decision

    async def expire(self, record: ApprovalRecord, why: RuntimeReason) -> bool:
        """Runtime decision (:meth:`Waits.expire`): False if already decided."""
        return await self._waits.expire(record, why)

    async def expire_pending(self, why: RuntimeReason) -> int:
        """Expire every pending row (restart or shutdown; with several replicas, only those
        of replicas gone, or this one's) and edit its cards. A turn of this process waiting
        on a row wakes and tells its conversation itself; for any other row the conversation
        is told here to ask again. Returns how many were expired."""
        count = 0
        pending = await self._store.approvals.list(status=ApprovalStatus.PENDING)
        if pending:
            # a parked turn's card stays open across stops and starts (bot.approval.parking)
            held = {r.approval_id for r in await self._store.parked.rows()}
            pending = [r for r in pending if r.id not in held and not self._waits.may_park(r.id)]
        for record in await self._shared.expirable(pending, why):
            if not await self.expire(record, why):
                continue
            count += 1
            await self._cards.edit_all(record.id)
            if not self._waits.waiting(record.id):
                await self._cards.notify_expired(record, why)
        return count

    async def expire_parked_due(self) -> int:
        """Expire the cards of parked turns whose ``expires_at`` has passed (reason
        ``timeout``) and edit them; their turns then resume to tell the model. Returns
        how many were expired."""
        count = 0
        for approval_id in await self._store.parked.due(self._clock()):
            record = await self._store.approvals.get(approval_id)
            if record is not None and await self.expire(record, RuntimeReason.TIMEOUT):
                count += 1
                await self._cards.edit_all(approval_id)
        return count

    async def expire_parked_changed(
        self,
        reason: Callable[[ParkRecord], Awaitable[RuntimeReason | None]],
        *,
        ends: Collection[RuntimeReason] = (),
    ) -> int:
        """The configuration changed (a reload, or a start after the file was edited): the
        still-open card of each parked turn that no longer fits it (``reason`` names what
        changed: its tool, agent, channel or the requester's access) expires and is edited
        once the turn resumes (which then tells the model, or, its agent gone, the
        requester); nothing of it runs. A turn whose reason is in ``ends`` (its channel, or
        the requester's access, is gone) does not resume at all: its card is edited here,
        its row goes and its entry is ``failed`` with the reason. Returns how many."""
        count = 0
        for row in await self._store.parked.rows(states=(ParkState.PARKED,)):
            record = await self._store.approvals.get(row.approval_id)
            if record is None or record.status is not ApprovalStatus.PENDING:
                continue
            try:
                parked = await self._store.parked.get(row.approval_id)
            except UnreadableParkRecord:
                continue  # its resumption fails it with a notice
            why = None if parked is None else await reason(parked)
            if why is None:
                continue
            if why not in ends:
                if await self.expire(record, why):
                    log.info("parked_card_expired_by_config", approval_id=record.id, reason=why)
                    count += 1
                continue
            # taken first, so that no sweep resumes it between the expiry and the end
            if not await self._store.parked.claim(row.approval_id, None):
                continue
            if not await self.expire(record, why):
                await self._store.parked.unclaim(row.approval_id, at=self._clock())
                continue
            log.info("parked_card_expired_by_config", approval_id=record.id, reason=why)
            count += 1
            await self._cards.edit_all(record.id)
            await self._store.parked.drop(row.approval_id)
            await self._store.inbox.mark(row.inbox, InboxStatus.FAILED, str(why))
        return count

    async def close_parked(self, session_key: str) -> int:
        """End the parked turns of ``session_key`` (``/stop``, ``/new``): each card still
        open expires (reason ``cancelled``) and is edited, the row goes and the inbox entry
        is ``failed`` (:data:`CANCELLED_WHILE_PARKED`); nothing resumes. Returns how many."""
        count = 0
        for row in await self._store.parked.session_calls(session_key):
            if row.state is not ParkState.PARKED:
                continue  # its turn still waits in its process: /stop cancels it there
            # claimed as a resumption claims it, before its card expires: a sweep that then
            # sees the card decided leaves the row (it would edit the card a second time and
            # queue a resumption of the turn ended here); a crash before the row goes gives
            # the claim back at the next start (settle_at_start)
            if not await self._store.parked.claim(row.approval_id, row.owner):
                continue  # decided before the stop: its resumption has it
            record = await self._store.approvals.get(row.approval_id)
            if record is not None and await self.expire(record, RuntimeReason.CANCELLED):
                await self._cards.edit_all(record.id)
            await self._store.parked.drop(row.approval_id)
            await self._store.inbox.mark(row.inbox, InboxStatus.FAILED, CANCELLED_WHILE_PARKED)
            log.info("parked_turn_cancelled", approval_id=row.approval_id)
            count += 1
        return count

    async def close(self) -> int:
        """Shutdown: refuse new requests and expire every pending one at once, so no turn
        holds the drain waiting for an answer. Returns how many were expired."""
        self._closed = True
        parked = self._waits.park_all()
        if parked:
            log.info("approvals_parking_at_stop", count=parked)
        return await self.expire_pending(RuntimeReason.SHUTDOWN)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def waits(self) -> Waits:
        """The turns of this process that wait on a row (parking hooks into it)."""
        return self._waits

    @property
    def desk(self) -> CardDesk:
        """Posts and edits the cards (reminders and escalation add copies)."""
        return self._cards

    @property
    def shared(self) -> SharedApprovals:
        return self._shared

    async def watch(self) -> None:
        """Several replicas: wake on decisions made on other replicas and expire the
        requests of replicas that are gone (:meth:`SharedApprovals.watch`); until
        cancelled."""
        await self._shared.watch(self._waits.wake, self._expire_gone)

    async def _expire_gone(self) -> int:
        count = await self.expire_pending(RuntimeReason.RESTART)
        if count:
            log.info("approvals_expired_pending", count=count, reason=RuntimeReason.RESTART)
        return count


@dataclass(frozen=True, slots=True, kw_only=True)
class CardHandler:
    """Asks with an approval card on ``channel`` through the daemon's backchannel."""

    backchannel: Backchannel
    channel: Channel
    #: An eligible approver can see the conversation's own card.
    approver_here: bool
    #: The platform's answers behind ``approver_here``, read again to name approvers.
    reach: ReachCheck | None = None

    async def decide(self, asked: AskedCall) -> ApprovalDecision:
        return await self.backchannel.ask(
            asked, self.channel, approver_here=self.approver_here, reach=self.reach
        )
