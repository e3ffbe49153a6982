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
  (:attr:`~bot.channel.ApprovalClick.card`) to the row's outcome as well, which covers
  copies whose place was never stored; edits always render the row, so two of them racing
  show the same outcome;
* :meth:`Backchannel.refusal` answers "would this user's click be refused, and how?" from
  the row alone, for adapters deciding whether to offer a reply form; it writes nothing.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from structlog.contextvars import bound_contextvars

from bot import telemetry
from bot.approval import audit, reasons
from bot.approval.approvers import refusal
from bot.approval.card import card_for, decision_for
from bot.approval.card_desk import CardDesk, ChannelLookup, PolicyLookup
from bot.approval.gate import ApprovalDecision
from bot.approval.grants import GrantScope, new_grant
from bot.approval.handler import AskedCall
from bot.approval.policy import EffectivePolicy
from bot.approval.reach import eligible_approvers
from bot.approval.reasons import AnswerRoute, RuntimeReason
from bot.approval.shared import SharedApprovals
from bot.channel import ApprovalCard, ApprovalChoice, ApprovalClick, Channel, ClickVerdict
from bot.envelope import ChannelRef
from bot.scrub import scrub_text
from bot.store import Store
from bot.store.approvals import ApprovalRecord, ApprovalStatus, Resolution

log = structlog.get_logger(__name__)

#: How many approvals' turns a backchannel remembers for the log lines of their clicks (a
#: late click too); a click on an approval asked before a restart names no turn.
TURNS_KEPT = 1024


class Backchannel:
    """Approval cards in chat. One per daemon; holds the in-process wake-up events."""

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
        self._policy_for = policy_for
        self._cards = CardDesk(store, channel_for, policy_for)
        self._clock = clock
        self._poll_s = poll_interval_s
        self._wakeups: dict[str, asyncio.Event] = {}
        #: the turn of each approval asked here, the latest TURNS_KEPT (click log lines)
        self._turns: dict[str, str] = {}
        self._closed = False

    async def ask(
        self, asked: AskedCall, channel: Channel, *, approver_here: bool
    ) -> ApprovalDecision:
        """Post the card (in the conversation, and to eligible approvers' DMs when
        configured) and wait for one decision. ``approver_here`` says whether an eligible
        approver can see the conversation's card (:func:`bot.approval.reach.approvers_here`)."""
        request, policy, view = asked.request, asked.policy, asked.view
        env = request.turn.envelope
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
            ask_reason=asked.why,
            created_at=now,
            expires_at=now + policy.timeout_s,
            replica_id=self._shared.replica_id,
        )
        await self._store.approvals.create(record)
        wakeup = self._wakeups[record.id] = asyncio.Event()
        self._remember_turn(record.id, request.turn.turn_id)
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
            refs = await self._cards.post(
                channel, record, env.reply_target, dm_to=dm_to if policy.dm_approvers else ()
            )
            if refs:
                # Shielded: a cancel landing inside a write must not leave it half done.
                await asyncio.shield(self._store.approvals.set_card_refs(record.id, refs))
            if not refs:
                await self.expire(record, RuntimeReason.CARD_FAILED)
            elif not approver_here and len(refs) == 1:
                log.warning("approval_nobody_reachable", approval_id=record.id, tool=record.tool)
                await self.expire(record, RuntimeReason.NOBODY_REACHABLE)
            elif self._closed:
                await self.expire(record, RuntimeReason.SHUTDOWN)
            else:
                await self._wait(record, wakeup)
        except asyncio.CancelledError:
            await self.expire(record, RuntimeReason.CANCELLED)
            await self._cards.edit_all(record.id)
            raise
        finally:
            self._wakeups.pop(record.id, None)
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

    async def _wait(self, record: ApprovalRecord, wakeup: asyncio.Event) -> None:
        """Until the row is decided, or its ``expires_at`` passes on the service's clock (the
        same clock a late click is judged by), then expire it."""
        while True:
            wakeup.clear()  # before reading, so a click landing after the read still wakes us
            current = await self._store.approvals.get(record.id)
            if current is None or current.status is not ApprovalStatus.PENDING:
                return
            remaining = record.expires_at - self._clock()
            if remaining <= 0:
                await self.expire(current, RuntimeReason.TIMEOUT)
                return
            try:
                async with asyncio.timeout(min(self._poll_s, remaining)):
                    await wakeup.wait()
            except TimeoutError:
                pass

    async def expire(self, record: ApprovalRecord, why: RuntimeReason) -> bool:
        """Runtime decision: mark a pending row expired (audited). False if already decided."""
        at = self._clock()
        won = await self._store.approvals.resolve(
            record.id,
            Resolution(
                status=ApprovalStatus.EXPIRED, decided_by=reasons.RUNTIME, reason=why, at=at
            ),
            audit=audit.entry_for_record(
                record,
                at=at,
                decision=ApprovalStatus.EXPIRED.decision,
                decided_by=reasons.RUNTIME,
                reason=why,
            ),
        )
        if won:
            self._wake(record.id)
            log.info("approval_expired", approval_id=record.id, tool=record.tool, reason=why)
        return won

    def _remember_turn(self, approval_id: str, turn_id: str) -> None:
        if len(self._turns) >= TURNS_KEPT:
            del self._turns[next(iter(self._turns))]
        self._turns[approval_id] = turn_id

    async def click(
        self,
        click: ApprovalClick,
        *,
        route: AnswerRoute = AnswerRoute.CLICK,
        fingerprint: str | None = None,
        grant_scope: GrantScope | None = None,
    ) -> ClickVerdict:
        """:meth:`_click`, every log line of it naming the approval and, when it was asked
        in this process, the turn whose call it decides."""
        ids = {"approval_id": click.approval_id}
        turn_id = self._turns.get(click.approval_id)
        if turn_id is not None:
            ids["turn_id"] = turn_id
        with bound_contextvars(**ids):
            return await self._click(
                click, route=route, fingerprint=fingerprint, grant_scope=grant_scope
            )

    async def _click(
        self,
        click: ApprovalClick,
        *,
        route: AnswerRoute,
        fingerprint: str | None,
        grant_scope: GrantScope | None,
    ) -> ClickVerdict:
        """Apply one click. Unknown, foreign-channel, late and repeated clicks change
        nothing; refused clicks are audited. A click on a request that is no longer open
        edits the clicked card to the request's outcome. The web console's answers
        (:mod:`bot.approval.web_answer`) also name their ``route``, the ``fingerprint`` of
        the call they were shown (another one decides nothing) and a ``grant_scope``."""
        record = await self._record(click.channel, click.approval_id)
        if record is None:
            return ClickVerdict.UNKNOWN
        if fingerprint is not None and fingerprint != record.fingerprint:
            log.warning("approval_fingerprint_mismatch", approval_id=record.id, route=route)
            return ClickVerdict.UNKNOWN
        policy = self._policy_for(click.channel)
        refused = refusal(
            policy, user_id=click.user_id, roles=click.user_roles, requester=record.requester
        )
        if refused is not None:
            await self._store.audit.append(
                audit.entry_for_record(
                    record,
                    at=self._clock(),
                    decision=audit.refused_click(click.choice),
                    decided_by=click.user_id,
                    reason=refused.value,
                )
            )
            log.warning(
                "approval_click_refused",
                approval_id=record.id,
                user_id=click.user_id,
                verdict=refused,
            )
            return refused
        verdict = await self._decide(record, click, policy, route, grant_scope)
        if verdict is not ClickVerdict.ACCEPTED and click.card is not None:
            await self._cards.show_outcome(record.id, click.card)
        return verdict

    async def refusal(
        self, channel: ChannelRef, approval_id: str, user_id: str, roles: tuple[str, ...]
    ) -> ClickVerdict | None:
        """The verdict :meth:`click` would refuse this user's click with now, in the same
        order; None when it would be decided. Reads only: nothing is decided, expired,
        audited or edited."""
        record = await self._record(channel, approval_id)
        if record is None:
            return ClickVerdict.UNKNOWN
        refused = refusal(
            self._policy_for(channel), user_id=user_id, roles=roles, requester=record.requester
        )
        return refused or _closed(record, self._clock())

    async def card(self, channel: ChannelRef, approval_id: str) -> ApprovalCard | None:
        """The card of ``approval_id`` as its row is now; None when unknown to ``channel``."""
        record = await self._record(channel, approval_id)
        if record is None:
            return None
        return card_for(record, timeout_s=self._policy_for(channel).timeout_s)

    async def _record(self, channel: ChannelRef, approval_id: str) -> ApprovalRecord | None:
        """The approval row, unless it does not exist or belongs to another channel alias."""
        record = await self._store.approvals.get(approval_id)
        if record is None or record.channel != str(channel):
            return None
        return record

    async def _decide(
        self,
        record: ApprovalRecord,
        click: ApprovalClick,
        policy: EffectivePolicy,
        route: AnswerRoute,
        grant_scope: GrantScope | None,
    ) -> ClickVerdict:
        now = self._clock()
        closed = _closed(record, now)
        if closed is not None:
            if record.status is ApprovalStatus.PENDING:
                # The deadline passed while the asking side had not yet noticed: the runtime's
                # timeout is the decision, as it would have been a moment later.
                await self.expire(record, RuntimeReason.TIMEOUT)
            return closed
        if record.cut and not click.full_view and click.choice is not ApprovalChoice.DENY:
            # The card hid part of the request: only a view that showed all of it approves.
            log.warning("approval_click_needs_full_view", approval_id=record.id)
            return ClickVerdict.NEEDS_FULL_VIEW
        status, grant, reply = ApprovalStatus.APPROVED, None, None
        if click.choice is ApprovalChoice.DENY:
            # A blank reply is a plain deny: the model is told nothing it could act on.
            text = (click.replacement_text or "").strip()
            reply = scrub_text(text) if text else None
            status = ApprovalStatus.EDITED if reply else ApprovalStatus.DENIED
        elif click.choice is ApprovalChoice.ALWAYS:
            status = ApprovalStatus.ALWAYS
            grant = new_grant(
                tool=record.tool,
                scope=grant_scope or policy.grant_scope,
                channel=record.channel,
                conversation_id=record.conversation_id,
                granted_by=click.user_id,
                now=now,
                ttl_s=policy.grant_ttl_s,
            )
        won = await self._store.approvals.resolve(
            record.id,
            Resolution(
                status=status,
                decided_by=click.user_id,
                reason=route,
                at=now,
                reply=reply,
            ),
            audit=audit.entry_for_record(
                record,
                at=now,
                decision=status.decision,
                decided_by=click.user_id,
                reason=route,
            ),
            grant=grant,
        )
        if not won:
            return ClickVerdict.ALREADY_DECIDED
        self._wake(record.id)
        await self._shared.decided(record)
        log.info(
            "approval_clicked",
            approval_id=record.id,
            user_id=click.user_id,
            decision=status,
            route=route,
        )
        return ClickVerdict.ACCEPTED

    async def decide_as_operator(
        self, approval_id: str, approve: bool, operator: str
    ) -> ClickVerdict:
        """A decision from the CLI: the operator is trusted; single use like any other."""
        record = await self._store.approvals.get(approval_id)
        if record is None:
            return ClickVerdict.UNKNOWN
        if record.status is not ApprovalStatus.PENDING:
            return _settled(record)
        now = self._clock()
        status = ApprovalStatus.APPROVED if approve else ApprovalStatus.DENIED
        won = await self._store.approvals.resolve(
            approval_id,
            Resolution(status=status, decided_by=operator, reason=AnswerRoute.CLI, at=now),
            audit=audit.entry_for_record(
                record,
                at=now,
                decision=status.decision,
                decided_by=operator,
                reason=AnswerRoute.CLI,
            ),
        )
        if not won:
            return ClickVerdict.ALREADY_DECIDED
        self._wake(approval_id)
        await self._shared.decided(record)
        return ClickVerdict.ACCEPTED

    async def expire_pending(self, why: RuntimeReason) -> int:
        """Expire every pending row (restart or shutdown; with several replicas, only those
        of replicas gone, or this one's) and edit its cards. A turn of this process waiting
        on a row wakes and tells its conversation itself; for any other row the conversation
        is told here to ask again. Returns how many were expired."""
        count = 0
        pending = await self._store.approvals.list(status=ApprovalStatus.PENDING)
        for record in await self._shared.expirable(pending, why):
            if not await self.expire(record, why):
                continue
            count += 1
            await self._cards.edit_all(record.id)
            if record.id not in self._wakeups:
                await self._cards.notify_expired(record, why)
        return count

    async def close(self) -> int:
        """Shutdown: refuse new requests and expire every pending one at once, so no turn
        holds the drain waiting for an answer. Returns how many were expired."""
        self._closed = True
        return await self.expire_pending(RuntimeReason.SHUTDOWN)

    @property
    def closed(self) -> bool:
        return self._closed

    async def watch(self) -> None:
        """Several replicas: wake on decisions made on other replicas and expire the
        requests of replicas that are gone (:meth:`SharedApprovals.watch`); until
        cancelled."""
        await self._shared.watch(self._wake, self._expire_gone)

    async def _expire_gone(self) -> int:
        count = await self.expire_pending(RuntimeReason.RESTART)
        if count:
            log.info("approvals_expired_pending", count=count, reason=RuntimeReason.RESTART)
        return count

    def _wake(self, approval_id: str) -> None:
        event = self._wakeups.get(approval_id)
        if event is not None:
            event.set()


@dataclass(frozen=True, slots=True, kw_only=True)
class CardHandler:
    """Asks with an approval card on ``channel`` through the daemon's backchannel."""

    backchannel: Backchannel
    channel: Channel
    #: An eligible approver can see the conversation's own card.
    approver_here: bool

    async def decide(self, asked: AskedCall) -> ApprovalDecision:
        return await self.backchannel.ask(asked, self.channel, approver_here=self.approver_here)


def _closed(record: ApprovalRecord, now: float) -> ClickVerdict | None:
    """Why nobody can decide ``record`` at ``now``; None while it is open. A pending row whose
    deadline has passed reads as unknown, as it will once the runtime expires it."""
    if record.status is ApprovalStatus.PENDING:
        return ClickVerdict.UNKNOWN if now >= record.expires_at else None
    return _settled(record)


def _settled(record: ApprovalRecord) -> ClickVerdict:
    """What a decision on a row that is no longer pending gets: an expired request reads as
    unknown (there is nothing left to decide), anything else as already decided."""
    if record.status is ApprovalStatus.EXPIRED:
        return ClickVerdict.UNKNOWN
    return ClickVerdict.ALREADY_DECIDED
