"""Answers to approval requests: a click or reaction on a card, a web console answer, a CLI
decision, and the read-only questions adapters ask before offering a reply form.

Kept apart from the asking side (:mod:`bot.approval.backchannel`) because an answer may reach
any process, long after the ask (a late click, a click after a restart, one on another
replica): it works from the row alone. Each answer decides one row once (the store's
conditional update), checks the approver rules (:func:`~bot.approval.approvers.refusal`) and,
for the web console, the fingerprint of the call it was shown; refused clicks are audited,
unknown, foreign-channel, late and repeated ones change nothing. A decision wakes the waiting
turn (:class:`~bot.approval.waits.Waits`, or another replica through
:class:`~bot.approval.shared.SharedApprovals`).
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from structlog.contextvars import bound_contextvars

from bot.approval import audit
from bot.approval.approvers import refusal
from bot.approval.card import card_for
from bot.approval.card_desk import CardDesk, PolicyLookup
from bot.approval.grants import GrantScope, new_grant
from bot.approval.policy import EffectivePolicy
from bot.approval.reasons import AnswerRoute, RuntimeReason
from bot.approval.shared import SharedApprovals
from bot.approval.waits import Waits
from bot.channel import ApprovalCard, ApprovalChoice, ApprovalClick, ClickVerdict
from bot.envelope import ChannelRef
from bot.scrub import scrub_text
from bot.store import Store
from bot.store.approvals import ApprovalRecord, ApprovalStatus, Resolution
from bot.store.grants import NewGrant

log = structlog.get_logger(__name__)

#: How many approvals' turns are remembered for the log lines of their clicks (a late click
#: too); a click on an approval asked before a restart names no turn.
TURNS_KEPT = 1024


class Answers:
    """Applies the answers to approval rows. One per daemon, beside its backchannel."""

    def __init__(
        self,
        store: Store,
        policy_for: PolicyLookup,
        cards: CardDesk,
        waits: Waits,
        shared: SharedApprovals,
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._policy_for = policy_for
        self._cards = cards
        self._waits = waits
        self._shared = shared
        self._clock = clock
        #: the turn of each approval asked here, the latest TURNS_KEPT (click log lines)
        self._turns: dict[str, str] = {}

    def remember_turn(self, approval_id: str, turn_id: str) -> None:
        """``approval_id`` was asked by ``turn_id``: its answers' log lines name that turn."""
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
                await self._waits.expire(record, RuntimeReason.TIMEOUT)
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
        decided = Resolution(
            status=status, decided_by=click.user_id, reason=route, at=now, reply=reply
        )
        if not await self._resolve(record, decided, grant=grant):
            return ClickVerdict.ALREADY_DECIDED
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
        status = ApprovalStatus.APPROVED if approve else ApprovalStatus.DENIED
        decided = Resolution(
            status=status, decided_by=operator, reason=AnswerRoute.CLI, at=self._clock()
        )
        if not await self._resolve(record, decided):
            return ClickVerdict.ALREADY_DECIDED
        return ClickVerdict.ACCEPTED

    async def _resolve(
        self, record: ApprovalRecord, decided: Resolution, *, grant: NewGrant | None = None
    ) -> bool:
        """Apply a person's decision to the pending row, audited; when it wins, wake the turn
        waiting on it, here or on another replica. False if someone decided first."""
        won = await self._store.approvals.resolve(
            record.id, decided, audit=audit.entry_for_resolution(record, decided), grant=grant
        )
        if won:
            self._waits.wake(record.id)
            await self._shared.decided(record)
        return won


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
