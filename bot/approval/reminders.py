"""Reminders and escalation of an unanswered approval card.

Driven from the pending rows and their timestamps, never from the turn that waits: a
:class:`Reminders` sweep reads every pending row and acts on what is due, so a request
whose turn waits in another task (or, later, none at all) is reminded the same way. Off
unless ``approval.remind_after_s`` or ``approval.escalate_after_s`` is set (per channel in
its ``approval`` table, per agent in ``[agents.<name>.approval]``, per tool in either's
``tools`` table; docs/approvals.md has the timeline and the precedence):

* **reminder**: ``remind_after_s`` after the card was posted (and as long again after each
  reminder, at most ``remind_max`` times) a short reply goes to every place a copy of the
  card is (the conversation's thread, an approver's DM). It is text only, never a second set
  of buttons, and says when the request expires in UTC and in the configured zone of each
  approver who has one (``approval.approver_zones``);
* **escalation**: once, ``escalate_after_s`` after the card was posted, the users of
  ``escalate_to`` may decide it too and are shown it: where the platform says they can see
  the conversation, a reply there names them; otherwise each gets a copy in their DM. Every
  copy of the card then says whom it was escalated to.

Each step is claimed with one conditional update of the row (:meth:`Approvals.claim_reminder`,
:meth:`Approvals.claim_escalation`) which also appends its audit row (``reminded``,
``escalated``), so two sweeps — two replicas, or a sweep racing a decision — never send one
twice; a sweep acts only on the rows of its own replica (``replica_id``), as the turn waiting
on them is its (the replica that adopts a dead one's parked turn rewrites the row's
``replica_id``: :func:`bot.gateway.resumption.settle_at_start`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable

import structlog

from bot import telemetry
from bot.approval import audit, reasons
from bot.approval.card import escalated_names, parse_channel_ref
from bot.approval.card_desk import CHANNEL_FAILURES, CardDesk, ChannelLookup
from bot.approval.policy import EffectivePolicy
from bot.approval.reach import eligible_approvers
from bot.approval.shared import SharedApprovals
from bot.config import DEFAULT_AGENT
from bot.envelope import ChannelRef, DeliveryTarget
from bot.scrub import scrub_text
from bot.store import Store
from bot.store.approvals import ApprovalRecord, ApprovalStatus
from bot.store.audit import Decision
from bot.timezones import find_zone
from bot.visible_text import visible

log = structlog.get_logger(__name__)

#: The approval policy of a channel alias for an agent and a tool (its reminder schedule).
AgentPolicyLookup = Callable[[ChannelRef, str, str | None], EffectivePolicy]
#: How often the daemon's sweep looks at the pending rows.
SWEEP_INTERVAL_S = 5.0


def next_reminder_at(record: ApprovalRecord, policy: EffectivePolicy) -> float | None:
    """When ``record``'s next reminder is due (None: no more reminders)."""
    after = policy.remind_after_s
    if after is None or record.reminders_sent >= policy.remind_max:
        return None
    due = record.created_at + after * (record.reminders_sent + 1)
    if record.reminded_at is not None:  # a sweep that was away sends them spaced, not at once
        due = max(due, record.reminded_at + after)
    return due


def escalation_at(record: ApprovalRecord, policy: EffectivePolicy) -> float | None:
    """When ``record`` is escalated (None: never, or already)."""
    if policy.escalate_after_s is None or record.escalated_at:
        return None
    if not (policy.escalate_to or policy.escalate_to_roles):
        return None
    return record.created_at + policy.escalate_after_s


def expiry_text(expires_at: float, zones: list[str]) -> str:
    """``expires_at`` as "14:05 UTC (15:05 Europe/Paris)": UTC, then each of ``zones``."""
    moment = dt.datetime.fromtimestamp(expires_at, tz=dt.UTC)
    text = moment.strftime("%Y-%m-%d %H:%M UTC")
    local: list[str] = []
    for name in zones:
        zone = find_zone(name)
        if zone is not None:
            local.append(f"{moment.astimezone(zone).strftime('%Y-%m-%d %H:%M')} {name}")
    return f"{text} ({', '.join(local)})" if local else text


def reminder_text(
    record: ApprovalRecord, policy: EffectivePolicy, *, number: int, reader: str | None = None
) -> str:
    """The reminder: the tool, who asked, how long it waits, when it expires. ``reader``:
    the approver whose DM it goes to (the expiry in their zone alone); None: a conversation,
    where it is said in the zone of each approver who may read it."""
    readers = (*eligible_approvers(policy, record.requester), *record.escalated_to)
    if reader is not None:
        readers = (reader,)
    zones = dict(policy.approver_zones)
    wanted = sorted({zones[a] for a in readers if a in zones})
    asked_by = visible(record.requester_name or record.requester)
    return (
        f"⏰ Reminder {number}/{policy.remind_max}: {visible(record.tool)} (asked by "
        f"{asked_by}) still waits for an approver. Answer on its card; it expires at "
        f"{expiry_text(record.expires_at, wanted)}."
    )


class Reminders:
    """The sweep that reminds and escalates the pending requests of this process."""

    def __init__(
        self,
        store: Store,
        channel_for: ChannelLookup,
        policy_for: AgentPolicyLookup,
        cards: CardDesk,
        shared: SharedApprovals,
        clock: Callable[[], float],
        *,
        scheduled: Callable[[], bool],
    ) -> None:
        self._store = store
        self._scheduled = scheduled
        self._channel_for = channel_for
        self._policy_for = policy_for
        self._cards = cards
        self._shared = shared
        self._clock = clock

    async def run(self, interval_s: float = SWEEP_INTERVAL_S) -> None:
        """Sweep every ``interval_s`` until cancelled; a failing sweep is logged and the
        next one tries again."""
        while True:
            try:
                await self.sweep()
            except Exception as exc:
                log.warning("approval_reminders_failed", error=scrub_text(str(exc)))
            await asyncio.sleep(interval_s)

    async def sweep(self) -> int:
        """Send what is due now; returns how many reminders and escalations were sent."""
        if not self._scheduled():  # the default: no query every few seconds for nothing
            return 0
        done = 0
        now = self._clock()
        for record in await self._store.approvals.list(status=ApprovalStatus.PENDING):
            if record.replica_id != self._shared.replica_id or record.expires_at <= now:
                continue
            ref = parse_channel_ref(record.channel)
            policy = self._policy_for(ref, record.agent or DEFAULT_AGENT, record.tool)
            due = escalation_at(record, policy)
            if due is not None and now >= due and await self._escalate(record, policy, now):
                done += 1
                record = await self._store.approvals.get(record.id) or record
            due = next_reminder_at(record, policy)
            if due is not None and now >= due and await self._remind(record, policy, now):
                done += 1
        return done

    async def _remind(self, record: ApprovalRecord, policy: EffectivePolicy, now: float) -> bool:
        number = record.reminders_sent + 1
        entry = audit.entry_for_record(
            record,
            at=now,
            decision=Decision.REMINDED,
            decided_by=reasons.RUNTIME,
            reason=f"reminder {number} of {policy.remind_max}",
        )
        claimed = await self._store.approvals.claim_reminder(
            record.id, sent=record.reminders_sent, at=now, audit=entry
        )
        if not claimed:
            return False
        # each place once: the conversation's own card, and each copy in a user's DM, whose
        # reminder gives the expiry in that user's zone
        places = {(c.conversation_id, c.thread_id, c.for_user) for c in record.card_refs}
        if not places:
            places = {(record.conversation_id, record.thread_id, None)}
        for conversation_id, thread_id, user in sorted(places, key=str):
            text = reminder_text(record, policy, number=number, reader=user)
            await self._say(record, conversation_id, thread_id, text)
        log.info("approval_reminded", approval_id=record.id, tool=record.tool, number=number)
        return True

    async def _escalate(self, record: ApprovalRecord, policy: EffectivePolicy, now: float) -> bool:
        to = tuple(u for u in policy.escalate_to if u != record.requester or policy.self_approval)
        roles = policy.escalate_to_roles
        if not (to or roles):
            return False
        entry = audit.entry_for_record(
            record,
            at=now,
            decision=Decision.ESCALATED,
            decided_by=reasons.RUNTIME,
            reason=f"escalated to {escalated_names(to, roles)}",
        )
        claimed = await self._store.approvals.claim_escalation(
            record.id, to, at=now, audit=entry, roles=roles
        )
        if not claimed:
            return False
        ref = parse_channel_ref(record.channel)
        channel = self._channel_for(ref)
        if channel is not None:
            here = DeliveryTarget(
                channel=ref, conversation_id=record.conversation_id, thread_id=record.thread_id
            )
            members = channel.members
            seen: list[str] = []
            away: list[str] = []
            for user in to:
                sees = await members.can_see(here, user) if members is not None else None
                (seen if sees else away).append(user)
            escalated = await self._store.approvals.get(record.id) or record
            refs = list(escalated.card_refs)
            refs += await self._cards.post_copies(channel, escalated, away)
            await self._store.approvals.set_card_refs(record.id, refs)
            # role holders are found by the platform at click time, in the conversation: named
            # there when it holds a copy of the card (not in a requester's DM told only)
            here_card = any(c.conversation_id == record.conversation_id for c in refs)
            named = escalated_names(tuple(seen), roles if here_card else ())
            if seen or (roles and here_card):
                text = (
                    f"⏫ Escalated to {visible(named)}: {visible(record.tool)} still waits "
                    "for an approver. Answer on its card."
                )
                await self._say(record, record.conversation_id, record.thread_id, text)
        await self._cards.edit_all(record.id)
        log.info("approval_escalated", approval_id=record.id, tool=record.tool, to=to, roles=roles)
        return True

    async def _say(
        self, record: ApprovalRecord, conversation_id: str, thread_id: str | None, text: str
    ) -> None:
        ref = parse_channel_ref(record.channel)
        channel = self._channel_for(ref)
        if channel is None:
            return
        target = DeliveryTarget(channel=ref, conversation_id=conversation_id, thread_id=thread_id)
        try:
            with telemetry.send(ref.kind, "approval_reminder"):
                await channel.send(target, text)
        except CHANNEL_FAILURES as exc:
            log.warning(
                "approval_reminder_failed", approval_id=record.id, error=scrub_text(str(exc))
            )
