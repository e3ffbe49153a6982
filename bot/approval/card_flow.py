"""What an answer on an approval card means: the one place that decides it.

Every answer — a button, a reaction, a reply on a chat card (:class:`~bot.cards.CardAction`,
through :meth:`bot.channel.ChannelHost.card_action`), a web console answer, a CLI decision —
is applied here, from the approval row alone: an answer may reach any process long after
the ask (a late click, a click after a restart, one on another replica). In this order:

1. an unknown approval, or one of another channel alias, is unknown (and, for the web
   console, one whose call's fingerprint is not the one the page showed);
2. the approver rules (:func:`~bot.approval.approvers.refusal`): not an approver, or the
   requester's own call. A refused decision is audited; asking for the full view or the
   reply form is only answered. A request that needs several approvers
   (:mod:`bot.approval.quorum`) is never the requester's to decide, whatever
   ``self_approval`` says;
3. a request no longer open: "expired" (a pending row whose deadline passed is expired now,
   by the runtime's timeout) or "already decided"; the clicked card is edited to the outcome;
4. Approve and Always count only from a view that showed everything: the full view, or a
   card neither the approval service (``cut``) nor the platform
   (:meth:`~bot.cards.CardSurface.shows_whole`) shortened; Deny always counts;
5. "show full" gets the request whole, "reply instead" the reply form; a reply is a deny
   with that text (a blank reply is a plain deny: the model is told nothing it could act
   on); Always adds a grant; the row is decided once (the store's conditional update),
   audited, and the waiting turn woken, here or on another replica
   (:class:`~bot.approval.shared.SharedApprovals`). On a request that needs several
   approvers an approval is a vote (:meth:`~bot.store.approvals.Approvals.vote`): counted
   once per person, audited, every copy of the card edited to show it; the one that
   completes the quorum decides the row. Always (or a grant choice) counts there only when
   the quorum's ``grants_satisfy`` is on and it is the approval that completes it, which
   then creates its grant (:func:`~bot.approval.card.offers_grants`: the card offers it only
   then); anywhere else it is refused and audited, never counted as a plain approval. Any
   deny denies.

The answer is then carried out on the platform's :class:`~bot.cards.CardSurface`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import cast

import structlog
from structlog.contextvars import bound_contextvars

from bot.approval import audit
from bot.approval.approvers import refusal
from bot.approval.card import card_for, offers_grants
from bot.approval.card_desk import CardDesk, PolicyLookup, escalated_now, policy_of
from bot.approval.grant_choices import picked
from bot.approval.grants import ALWAYS_SIZE, new_grant
from bot.approval.quorum import waiting_for
from bot.approval.reasons import AnswerRoute, RuntimeReason
from bot.approval.shared import SharedApprovals
from bot.approval.waits import Waits
from bot.cards import CardAction, CardReply, CardReplyKind, CardSurface, CardVerb, answer_on
from bot.channel import ApprovalCard, ApprovalChoice, ClickVerdict
from bot.channel_config import GrantScope
from bot.envelope import ChannelRef
from bot.scrub import scrub_text
from bot.store import Store
from bot.store.approvals import (
    ApprovalRecord,
    ApprovalStatus,
    ApprovalVote,
    Resolution,
    VoteOutcome,
)
from bot.store.audit import AuditEntry, Decision
from bot.store.grants import NewGrant

log = structlog.get_logger(__name__)

#: How many approvals' turns are remembered for the log lines of their answers (a late one
#: too); an answer on an approval asked before a restart names no turn.
TURNS_KEPT = 1024


class CardFlow:
    """Applies the answers to approval rows. One per daemon."""

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
        #: the turn of each approval asked here, the latest TURNS_KEPT (answer log lines)
        self._turns: dict[str, str] = {}

    def remember_turn(self, approval_id: str, turn_id: str) -> None:
        """``approval_id`` was asked by ``turn_id``: its answers' log lines name that turn."""
        if len(self._turns) >= TURNS_KEPT:
            del self._turns[next(iter(self._turns))]
        self._turns[approval_id] = turn_id

    async def answer(self, action: CardAction, surface: CardSurface) -> CardReply:
        """Decide ``action`` and carry the answer out on ``surface``; returns the answer."""
        with self._bound(action.approval_id):
            reply = await self._reply(action, surface)
            if reply.verdict in (ClickVerdict.COUNTED, ClickVerdict.ALREADY_COUNTED):
                reply = await self._counted_reply(reply, action)
            log.info(
                "approval_card_answer",
                approval_id=action.approval_id,
                user_id=action.actor.user_id,
                verb=action.verb,
                full_view=action.full_view,
                answer=reply.kind,
                verdict=reply.verdict,
            )
            await answer_on(surface, reply)
        return reply

    async def decide(
        self,
        action: CardAction,
        *,
        route: AnswerRoute = AnswerRoute.CLICK,
        fingerprint: str | None = None,
        surface: CardSurface | None = None,
    ) -> ClickVerdict:
        """Apply one decision (steps 1–5 of the module docstring). The web console's answers
        name their ``route`` and the ``fingerprint`` of the call they were shown (a grant
        choice travels in the action, as a card's does); ``surface`` answers whether its
        card showed everything."""
        with self._bound(action.approval_id):
            return await self._decide(action, route, fingerprint, surface)

    def _bound(self, approval_id: str) -> AbstractContextManager[None]:
        ids = {"approval_id": approval_id}
        turn_id = self._turns.get(approval_id)
        if turn_id is not None:
            ids["turn_id"] = turn_id
        return bound_contextvars(**ids)

    async def _reply(self, action: CardAction, surface: CardSurface) -> CardReply:
        opens = action.verb is CardVerb.SHOW_FULL or (
            action.verb is CardVerb.REPLY and action.reply is None
        )
        if not opens:
            return CardReply.of(await self._decide(action, AnswerRoute.CLICK, None, surface))
        record = await self._record(action.channel, action.approval_id)
        if record is None:
            return CardReply.of(ClickVerdict.UNKNOWN)
        refused = self._refusal(record, action) or _closed(record, self._clock())
        if refused is not None:
            return CardReply.of(refused)
        if action.verb is CardVerb.REPLY:
            return CardReply(kind=CardReplyKind.OPEN_REPLY_FORM, approval_id=record.id)
        policy = policy_of(self._policy_for, record)
        card = card_for(record, timeout_s=policy.timeout_s, policy=policy)
        return CardReply(kind=CardReplyKind.SHOW_FULL, approval_id=record.id, card=card)

    async def _counted_reply(self, reply: CardReply, action: CardAction) -> CardReply:
        """A counted approval's reply, with its place in the count (``approval 1 of 2
        recorded; waiting for one more``)."""
        record = await self._record(action.channel, action.approval_id)
        words = counted_words(record, action.actor.user_id) if record is not None else ""
        if not words:
            return reply
        if reply.verdict is ClickVerdict.ALREADY_COUNTED:
            words = f"your {words} (counted once)"
        return dataclasses.replace(reply, note=f"{words[0].upper()}{words[1:]}.")

    async def card(self, *, channel: ChannelRef, approval_id: str) -> ApprovalCard | None:
        """The card of ``approval_id`` as its row is now; None when unknown to ``channel``.
        Reads only (the full view of the adapters that still render it themselves)."""
        record = await self._record(channel, approval_id)
        if record is None:
            return None
        policy = policy_of(self._policy_for, record)
        return card_for(record, timeout_s=policy.timeout_s, policy=policy)

    def _refusal(self, record: ApprovalRecord, action: CardAction) -> ClickVerdict | None:
        # the configuration in force now decides (a reload, or a restart, may have taken an
        # approver, a role or an escalation away while the card waited)
        also, also_roles = escalated_now(self._policy_for, record)
        refused = refusal(
            policy_of(self._policy_for, record),
            user_id=action.actor.user_id,
            roles=action.actor.roles,
            requester=record.requester,
            also=also,
            also_roles=also_roles,
        )
        if refused is None and record.quorum > 1 and action.actor.user_id == record.requester:
            # the requester never counts toward a quorum, self_approval or not
            return ClickVerdict.SELF_APPROVAL
        return refused

    async def _record(self, channel: ChannelRef, approval_id: str) -> ApprovalRecord | None:
        """The approval row, unless it does not exist or belongs to another channel alias."""
        record = await self._store.approvals.get(approval_id)
        if record is None or record.channel != str(channel):
            return None
        return record

    async def _decide(
        self,
        action: CardAction,
        route: AnswerRoute,
        fingerprint: str | None,
        surface: CardSurface | None,
    ) -> ClickVerdict:
        choice = action.verb.choice
        if choice is None:
            raise ValueError(f"{action.verb} decides nothing")
        record = await self._record(action.channel, action.approval_id)
        if record is None:
            return ClickVerdict.UNKNOWN
        if fingerprint is not None and fingerprint != record.fingerprint:
            log.warning("approval_fingerprint_mismatch", approval_id=record.id, route=route)
            return ClickVerdict.UNKNOWN
        refused = self._refusal(record, action)
        if refused is not None:
            await self._store.audit.append(
                audit.entry_for_record(
                    record,
                    at=self._clock(),
                    decision=audit.refused_click(choice),
                    decided_by=action.actor.user_id,
                    reason=refused.value,
                )
            )
            log.warning(
                "approval_click_refused",
                approval_id=record.id,
                user_id=action.actor.user_id,
                verdict=refused,
            )
            return refused
        verdict = await self._apply(record, action, choice, route, surface)
        if action.card is not None and (
            verdict is not ClickVerdict.ACCEPTED or await self._unrecorded_parked(record, action)
        ):
            await self._cards.show_outcome(record.id, action.card)
        return verdict

    async def _unrecorded_parked(self, record: ApprovalRecord, action: CardAction) -> bool:
        """Whether ``action`` came from a copy of a parked turn's card whose place was never
        stored (a kill right after posting it): nobody else will edit that copy."""
        card = action.card
        if card is None or any(r.message_id == card.message_id for r in record.card_refs):
            return False
        return await self._store.parked.row(record.id) is not None

    def _shown_whole(
        self, record: ApprovalRecord, channel: ChannelRef, surface: CardSurface | None
    ) -> bool:
        """Whether the card an answer came from showed all of the request."""
        if record.cut:
            return False
        if surface is None:
            return True
        policy = policy_of(self._policy_for, record)
        return surface.shows_whole(card_for(record, timeout_s=policy.timeout_s, policy=policy))

    async def _apply(
        self,
        record: ApprovalRecord,
        action: CardAction,
        choice: ApprovalChoice,
        route: AnswerRoute,
        surface: CardSurface | None,
    ) -> ClickVerdict:
        now = self._clock()
        closed = _closed(record, now)
        if closed is not None:
            if record.status is ApprovalStatus.PENDING:
                # The deadline passed while the asking side had not yet noticed: the runtime's
                # timeout is the decision, as it would have been a moment later.
                await self._waits.expire(record, RuntimeReason.TIMEOUT)
            return closed
        approving = choice is not ApprovalChoice.DENY
        if (
            approving
            and not action.full_view
            and not self._shown_whole(record, action.channel, surface)
        ):
            # The card hid part of the request: only a view that showed all of it approves.
            log.warning("approval_click_needs_full_view", approval_id=record.id)
            return ClickVerdict.NEEDS_FULL_VIEW
        policy = policy_of(self._policy_for, record)
        if record.quorum > 1 and approving:
            return await self._vote(record, action, choice, route, now)
        status, grant, reply = ApprovalStatus.APPROVED, None, None
        always = action.verb is not CardVerb.GRANT and choice is ApprovalChoice.ALWAYS
        if always and not offers_grants(record, policy):
            # Always where no grant could ever let the call run (always_ask, deny, a level
            # other than supervised): refused, never a grant that cannot apply
            await self._refused_choice(record, action, now, ClickVerdict.NO_GRANT_HERE)
            return ClickVerdict.NO_GRANT_HERE
        if action.verb is CardVerb.GRANT:
            sized = await self._sized_grant(record, action, now)
            if sized is None:
                return ClickVerdict.CHOICE_NOT_OFFERED
            status, grant = ApprovalStatus.ALWAYS, sized
        elif choice is ApprovalChoice.DENY:
            # A blank reply is a plain deny: the model is told nothing it could act on.
            text = (action.reply or "").strip()
            reply = scrub_text(text) if text else None
            status = ApprovalStatus.EDITED if reply else ApprovalStatus.DENIED
        elif choice is ApprovalChoice.ALWAYS:
            status = ApprovalStatus.ALWAYS
            grant = new_grant(
                tool=record.tool,
                scope=policy.grant_scope,
                channel=record.channel,
                conversation_id=record.conversation_id,
                granted_by=action.actor.user_id,
                now=now,
                ttl_s=policy.grant_ttl_s,
                size=ALWAYS_SIZE,
            )
        decided = Resolution(
            status=status,
            decided_by=action.actor.user_id,
            decided_by_name=_shown_name(action.actor.name),
            reason=route,
            at=now,
            reply=reply,
        )
        if not await self._resolve(record, decided, grant=grant):
            return ClickVerdict.ALREADY_DECIDED
        log.info(
            "approval_clicked",
            approval_id=record.id,
            user_id=action.actor.user_id,
            decision=status,
            route=route,
        )
        return ClickVerdict.ACCEPTED

    async def _sized_grant(
        self, record: ApprovalRecord, action: CardAction, now: float
    ) -> NewGrant | None:
        """The grant of the choice ``action`` picked (:mod:`bot.approval.grant_choices`);
        None, audited as a refused click, when the card did not offer it or the policy no
        longer allows it (a tampered, unknown or malformed payload): nothing is decided."""
        policy = policy_of(self._policy_for, record)
        pick = picked(policy, tool=record.tool, shown=record.grant_choices, key=action.grant_choice)
        if pick is None:
            await self._refused_choice(record, action, now, ClickVerdict.CHOICE_NOT_OFFERED)
            return None
        return new_grant(
            tool=record.tool,
            scope=cast(GrantScope, pick.scope),
            channel=record.channel,
            conversation_id=record.conversation_id,
            granted_by=action.actor.user_id,
            now=now,
            ttl_s=pick.ttl_s,
            size=pick.label,
            arguments_hash=record.fingerprint if pick.exact else None,
        )

    async def _refused_choice(
        self, record: ApprovalRecord, action: CardAction, now: float, verdict: ClickVerdict
    ) -> None:
        """Audit a refused Always or grant pick (``click_refused:always``, the verdict as
        its reason)."""
        await self._store.audit.append(
            audit.entry_for_record(
                record,
                at=now,
                decision=audit.refused_click(ApprovalChoice.ALWAYS),
                decided_by=action.actor.user_id,
                reason=verdict.value,
            )
        )
        log.warning(
            "approval_grant_choice_refused",
            approval_id=record.id,
            user_id=action.actor.user_id,
            choice=(action.grant_choice or action.verb)[:16],
            verdict=verdict,
        )

    async def _vote(
        self,
        record: ApprovalRecord,
        action: CardAction,
        choice: ApprovalChoice,
        route: AnswerRoute,
        now: float,
    ) -> ClickVerdict:
        """Count one approval toward ``record``'s quorum (the module docstring, step 5)."""
        policy = policy_of(self._policy_for, record)
        voter = action.actor.user_id
        name = _shown_name(action.actor.name)
        grant = None
        status = ApprovalStatus.APPROVED
        if choice is ApprovalChoice.ALWAYS and not offers_grants(record, policy):
            # Always or a grant choice where it would make no grant (a card drawn before
            # they were withdrawn, a replayed payload): refused, never a plain approval
            await self._refused_choice(record, action, now, ClickVerdict.NO_GRANT_HERE)
            return ClickVerdict.NO_GRANT_HERE
        if choice is ApprovalChoice.ALWAYS:
            status = ApprovalStatus.ALWAYS
            if action.verb is CardVerb.GRANT:
                grant = await self._sized_grant(record, action, now)
                if grant is None:
                    return ClickVerdict.CHOICE_NOT_OFFERED
            else:
                grant = new_grant(
                    tool=record.tool,
                    scope=policy.grant_scope,
                    channel=record.channel,
                    conversation_id=record.conversation_id,
                    granted_by=voter,
                    now=now,
                    ttl_s=policy.grant_ttl_s,
                    size=ALWAYS_SIZE,
                )
        return await self._count(
            record,
            ApprovalVote(
                voter=voter,
                voter_name=name,
                position=0,
                choice=str(choice),
                route=route,
                at=now,
            ),
            Resolution(status=status, decided_by=voter, decided_by_name=name, reason=route, at=now),
            grant,
        )

    async def _count(
        self,
        record: ApprovalRecord,
        vote: ApprovalVote,
        decided: Resolution,
        grant: NewGrant | None,
    ) -> ClickVerdict:
        """Record ``vote``; the one that completes the quorum decides as ``decided``."""

        def vote_row(given: int, needed: int) -> AuditEntry:
            return audit.entry_for_record(
                record,
                at=vote.at,
                decision=Decision.VOTED,
                decided_by=vote.voter,
                reason=f"{vote.route}: approval {given} of {needed}",
            )

        result = await self._store.approvals.vote(
            record.id,
            vote,
            audit=vote_row,
            decided=decided,
            decided_audit=audit.entry_for_resolution(record, decided),
            grant=grant,
        )
        log.info(
            "approval_vote",
            approval_id=record.id,
            user_id=vote.voter,
            outcome=result.outcome,
            given=result.given,
            needed=result.needed,
        )
        match result.outcome:
            case VoteOutcome.CLOSED:
                return ClickVerdict.ALREADY_DECIDED
            case VoteOutcome.REPEATED:
                return ClickVerdict.ALREADY_COUNTED
            case VoteOutcome.COUNTED:
                # every copy shows the count; the waiting turn goes on waiting
                await self._cards.edit_all(record.id)
                return ClickVerdict.COUNTED
        self._waits.wake(record.id)
        await self._shared.decided(record)
        return ClickVerdict.ACCEPTED

    async def decide_as_operator(
        self, approval_id: str, approve: bool, operator: str
    ) -> ClickVerdict:
        """A decision from the CLI: the operator is trusted; single use like any other. On
        a request that needs several approvers an approval is one vote, the operator's
        (``operator:NAME``, ``(unverified)`` or not: the same name counts once)."""
        record = await self._store.approvals.get(approval_id)
        if record is None:
            return ClickVerdict.UNKNOWN
        if record.status is not ApprovalStatus.PENDING:
            return _settled(record)
        if approve and record.quorum > 1:
            now = self._clock()
            voter = operator_key(operator)
            return await self._count(
                record,
                ApprovalVote(
                    voter=voter,
                    voter_name=None,
                    position=0,
                    choice=str(ApprovalChoice.APPROVE),
                    route=AnswerRoute.CLI,
                    at=now,
                ),
                Resolution(
                    status=ApprovalStatus.APPROVED,
                    decided_by=operator,
                    reason=AnswerRoute.CLI,
                    at=now,
                ),
                None,
            )
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
    deadline has passed reads as expired, as it will once the runtime expires it."""
    if record.status is ApprovalStatus.PENDING:
        return ClickVerdict.UNKNOWN if now >= record.expires_at else None
    return _settled(record)


def _settled(record: ApprovalRecord) -> ClickVerdict:
    """What a decision on a row that is no longer pending gets: an expired request reads as
    expired (there is nothing left to decide), anything else as already decided."""
    if record.status is ApprovalStatus.EXPIRED:
        return ClickVerdict.UNKNOWN
    return ClickVerdict.ALREADY_DECIDED


#: What the CLI adds to an operator's name it cannot vouch for (bot.commands.operator).
_UNVERIFIED = " (unverified)"


def operator_key(operator: str) -> str:
    """Who an operator's vote counts as: ``operator:NAME`` whether the CLI could vouch for
    the name or not, so that the same name counts once."""
    return operator.removesuffix(_UNVERIFIED)


def counted_words(record: ApprovalRecord, voter: str) -> str:
    """``approval 1 of 2 recorded; waiting for one more``: where ``voter``'s approval of
    ``record`` stands (empty when it holds none)."""
    mine = next((v for v in record.votes if v.voter == voter), None)
    if mine is None:
        return ""
    return waiting_for(record.quorum, mine.position, len(record.votes))


#: The longest display name kept with a decision (as the CLI keeps an operator's name).
NAME_CHARS = 64


def _shown_name(name: str) -> str | None:
    """A display name to keep with a decision: secrets scrubbed, whitespace folded, at most
    :data:`NAME_CHARS` characters; None when nothing is left. :func:`card_for` shows it
    with every invisible character escaped, as it shows the requester's."""
    cleaned = " ".join(scrub_text(name).split())[:NAME_CHARS]
    return cleaned or None
