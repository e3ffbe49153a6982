"""The approval service: the :class:`~bot.approval.gate.ApprovalGate` the pipeline uses.

It composes the policy (:mod:`bot.approval.policy`), grants, and the three handlers that
answer "ask" (:class:`~bot.approval.handler.ApprovalHandler`): the terminal prompt
(:mod:`bot.approval.terminal`), the approval card (:mod:`bot.approval.backchannel`) and the
runtime's auto-deny (:mod:`bot.approval.auto_deny`). The handler is chosen per ask, in this
order:

1. ``envelope.background`` → auto-deny (scheduled work never prompts), and the run's
   conversation is told once (:class:`~bot.approval.auto_deny.RunNotices`);
2. ``capabilities.terminal_prompt`` and the channel implements
   :class:`~bot.approval.terminal.TerminalPrompter` → terminal;
3. ``capabilities.approval_backchannel``, the channel is running, the alias has approvers,
   and one of them can be reached (sees the conversation, or gets a DM copy:
   :mod:`bot.approval.reach`) → approval card;
4. otherwise → auto-deny at once, with the specific :class:`~bot.approval.reasons.RuntimeReason`.

After :meth:`close` (shutdown) every new request is auto-denied at once (``shutdown``).

Every decision is audited (by the policy here, by the handler for an ask); the daemon calls
:meth:`expire_pending` at start and :meth:`close` when it starts to stop, the adapters'
host (:class:`bot.channel_host.AdapterHost`) binds ``ChannelHost.card_action`` to
:attr:`card_action` (:mod:`bot.approval.card_flow`), the CLI uses :meth:`decide_from_cli`
and the web console :meth:`decide_from_web`. Where several replicas share the database the
daemon also runs :meth:`watch` (:mod:`bot.approval.shared`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Collection

import structlog

from bot.approval import audit, reasons
from bot.approval.auto_deny import AutoDeny, RunNotices
from bot.approval.backchannel import Backchannel, CardHandler
from bot.approval.card_desk import ChannelLookup, escalated_now
from bot.approval.gate import ApprovalDecision, ApprovalRequest, Assessment, PolicyResult
from bot.approval.grant_choices import offered
from bot.approval.grants import GrantBook
from bot.approval.handler import ApprovalHandler, AskedCall
from bot.approval.policy import ApprovalPolicy, EffectivePolicy
from bot.approval.quorum import SINGLE, QuorumNeed, quorum_for, quorum_possible
from bot.approval.reach import ReachCheck, approvers_here
from bot.approval.reasons import AnswerRoute, RuntimeReason
from bot.approval.reminders import Reminders
from bot.approval.shared import SharedApprovals
from bot.approval.summary import describe
from bot.approval.terminal import TerminalHandler, TerminalPrompter
from bot.approval.web_answer import WebAnswer
from bot.cards import Actor, CardAction, CardVerb
from bot.channel import ClickVerdict
from bot.config import DEFAULT_AGENT, Settings
from bot.envelope import ChannelRef
from bot.store import Store
from bot.store.approvals import ApprovalRecord
from bot.store.audit import Decision
from bot.store.grants import OfferedGrant
from bot.store.liveness import Liveness
from bot.store.parked import ParkRecord
from bot.visible_text import visible

log = structlog.get_logger(__name__)


#: How much of a third-party tool's description the card or prompt shows.
ABOUT_CHARS = 300


def _why(request: ApprovalRequest, need: QuorumNeed | None = None) -> str:
    """Why a person is asked, with what a third-party tool says it does (it is not what
    runs: the arguments are, and they are shown in full)."""
    why = "it has side effects" if request.requires_approval else "the policy asks for it"
    if need is not None:
        why = f"{why}; it needs {need.approvals} different approvers"
    if not request.about:
        return why
    about = request.about
    if len(about) > ABOUT_CHARS:
        about = about[: ABOUT_CHARS - 1] + "…"
    return f"{why}. About the tool: {visible(about)}"


def _quorum_possible(asked: AskedCall, policy: EffectivePolicy) -> bool:
    env = asked.request.turn.envelope
    return quorum_possible(
        asked.quorum,
        requester=env.sender.id,
        approvers=policy.approvers,
        escalate_to=policy.escalate_to,
        roles=policy.approver_roles,
        terminal=env.capabilities.terminal_prompt,
    )


class ApprovalService:
    """Policy, handlers and audit for tool approvals. One per daemon (or CLI invocation)."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        channel_for: ChannelLookup,
        clock: Callable[[], float] = time.time,
        *,
        poll_interval_s: float = 1.0,
        liveness: Liveness | None = None,
    ) -> None:
        self._store = store
        self._channel_for = channel_for
        self._clock = clock
        self._policy = ApprovalPolicy(settings)
        self._grants = GrantBook(store, clock)
        self._backchannel = Backchannel(
            store,
            channel_for,
            self._policy.for_channel,
            clock,
            poll_interval_s=poll_interval_s,
            shared=SharedApprovals(store, liveness),
        )
        self._reminders = Reminders(
            store,
            channel_for,
            self._policy.for_channel,
            self._backchannel.desk,
            self._backchannel.shared,
            clock,
            scheduled=self._policy.schedules_reminders,
        )
        self._run_notices = RunNotices(channel_for)
        #: :meth:`bot.channel.ChannelHost.card_action`: an answer on a chat card
        #: (:meth:`bot.approval.card_flow.CardFlow.answer`).
        self.card_action = self._backchannel.flow.answer
        #: The card of an approval as its row is now (:meth:`CardFlow.card`).
        self.card = self._backchannel.flow.card

    def update_settings(self, settings: Settings) -> None:
        """Swap in reloaded settings (SIGHUP): approvers and policy of later requests."""
        self._policy.update_settings(settings)

    async def assess(self, request: ApprovalRequest) -> PolicyResult:
        """Policy only. DENY results and ALLOWs of side-effecting calls are audited."""
        result = await self._policy.evaluate(
            request,
            lambda: self._grants.find(request.tool, request.turn.envelope, request.fingerprint),
        )
        log.debug(
            "approval_assessed",
            tool=request.tool,
            assessment=result.assessment,
            reason=result.text,
        )
        if result.assessment is Assessment.DENY or (
            result.assessment is Assessment.ALLOW and request.requires_approval
        ):
            allowed = result.assessment is Assessment.ALLOW
            await self._store.audit.append(
                audit.entry_for_request(
                    request,
                    describe(
                        request.arguments,
                        notes=request.notes,
                        diff=request.diff,
                        covered=request.covered,
                    ).lines,
                    at=self._clock(),
                    decision=Decision.POLICY_ALLOWED if allowed else Decision.POLICY_DENIED,
                    decided_by=reasons.RUNTIME,
                    reason=result.audit_reason,
                )
            )
        return result

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask the person the envelope allows (terminal or card) or auto-deny at once."""
        env = request.turn.envelope
        quorum_policy = self._policy.for_channel(env.channel, env.agent).quorum
        need = quorum_for(quorum_policy, request.tool, request.arguments)
        asked = AskedCall(
            request=request,
            # the card's life is the tool's and the agent's (their tables' timeout_s)
            policy=self._policy.for_channel(env.channel, env.agent, request.tool),
            # once: the card or prompt and the audit row
            view=describe(
                request.arguments, notes=request.notes, diff=request.diff, covered=request.covered
            ),
            why=_why(request, need),
            # a quorum card offers no sizes of yes unless a grant may satisfy its quorum
            grant_choices=(
                self._grant_choices(request) if need is None or quorum_policy.grants_satisfy else ()
            ),
            quorum=need.approvals if need is not None else SINGLE,
        )
        handler = await self._handler(asked)
        return await handler.decide(asked)

    def _grant_choices(self, request: ApprovalRequest) -> tuple[OfferedGrant, ...]:
        """The grant choices a card for ``request`` offers, under the policy of its channel
        alias and agent."""
        env = request.turn.envelope
        return offered(self._policy.for_channel(env.channel, env.agent), request)

    async def _handler(self, asked: AskedCall) -> ApprovalHandler:
        """The handler for ``asked``, in the order of the module docstring."""
        request, policy = asked.request, asked.policy
        env = request.turn.envelope
        alias = f"channels.{env.channel.kind}.{env.channel.alias}"
        if self._backchannel.closed:
            return self._auto_deny(RuntimeReason.SHUTDOWN, hint="the daemon is shutting down")
        if env.background:
            return AutoDeny(
                why=RuntimeReason.BACKGROUND,
                hint=f"add {request.tool!r} to approval.auto_approve or create a grant; "
                "scheduled runs never prompt",
                audit_log=self._store.audit,
                clock=self._clock,
                notices=self._run_notices,
            )
        channel = self._channel_for(env.channel)
        if asked.quorum > 1 and not _quorum_possible(asked, policy):
            return self._auto_deny(
                RuntimeReason.QUORUM_UNREACHABLE,
                hint=f"{request.tool!r} needs {asked.quorum} approvers besides the requester; "
                f"list more in {alias}.approvers (or approver_roles), or change the "
                "approval.quorum rule",
            )
        if env.capabilities.terminal_prompt and isinstance(channel, TerminalPrompter):
            return TerminalHandler(
                prompter=channel,
                audit_log=self._store.audit,
                grants=self._store.grants,
                clock=self._clock,
            )
        if not env.capabilities.approval_backchannel or channel is None:
            return self._auto_deny(
                RuntimeReason.NO_BACKCHANNEL,
                hint=f"this conversation has no approval backchannel; add {request.tool!r} to "
                f"{alias}.approval.auto_approve or use a channel with approvers",
            )
        if not policy.has_approvers:
            return self._auto_deny(
                RuntimeReason.NO_APPROVER,
                hint=f"set {alias}.approvers, or add {request.tool!r} to approval.auto_approve",
            )
        reach = ReachCheck(channel, env, policy)
        here = await approvers_here(channel, env, policy, check=reach)
        if not here and not policy.dm_approvers:
            return self._auto_deny(
                RuntimeReason.NOBODY_REACHABLE,
                hint=f"no approver other than the requester can see conversation "
                f"{env.conversation_id}; add an approver who is a member, set "
                "approval.dm_approvers = true, or (for a single-person setup) "
                f"{alias}.approval.self_approval = true",
            )
        return CardHandler(
            backchannel=self._backchannel, channel=channel, approver_here=here, reach=reach
        )

    def _auto_deny(self, why: RuntimeReason, *, hint: str) -> AutoDeny:
        return AutoDeny(why=why, hint=hint, audit_log=self._store.audit, clock=self._clock)

    async def expire_pending(self, reason: RuntimeReason = RuntimeReason.RESTART) -> int:
        """Expire all pending approvals (daemon start; with several replicas, only those of
        replicas gone: :mod:`bot.approval.shared`), edit their cards and tell their
        conversations to ask again. Returns the number expired."""
        count = await self._backchannel.expire_pending(reason)
        if count:
            log.info("approvals_expired_pending", count=count, reason=reason)
        return count

    async def expire_parked_due(self) -> int:
        """Expire the parked turns' cards whose life is over (:mod:`bot.gateway.resumption`)."""
        return await self._backchannel.expire_parked_due()

    async def show_outcome(self, approval_id: str) -> None:
        """Edit every copy of a decided card to its outcome (a parked turn's card, which no
        waiting turn edits): through the platforms' message-edit calls, hours later too."""
        final = await self._backchannel.desk.edit_all(approval_id)
        if final is not None:
            # a copy whose place a kill left unstored cannot be edited: say it in a message
            await self._backchannel.desk.tell_outcome(final)

    async def expire_parked_changed(
        self,
        reason: Callable[[ParkRecord], Awaitable[RuntimeReason | None]],
        *,
        ends: Collection[RuntimeReason] = (),
    ) -> int:
        """The configuration changed: the parked turns' cards that no longer fit it expire,
        naming the change (:meth:`Backchannel.expire_parked_changed`)."""
        return await self._backchannel.expire_parked_changed(reason, ends=ends)

    async def close_parked(self, session_key: str) -> int:
        """``/stop`` or ``/new``: the session's parked turns end, their cards closed as
        cancelled (:meth:`Backchannel.close_parked`). Returns how many."""
        return await self._backchannel.close_parked(session_key)

    def on_unwaited(self, callback: Callable[[str], None]) -> None:
        """``callback`` is told the id of each card decided here that no turn of this
        process waits on (a parked turn's: its resumption is due)."""
        self._backchannel.waits.unwaited = callback

    async def watch(self) -> None:
        """Several replicas: hear decisions made on other replicas and expire the requests
        of replicas that are gone, until cancelled (:mod:`bot.approval.shared`)."""
        await self._backchannel.watch()

    async def remind(self) -> None:
        """Send the reminders and escalations that fall due (:mod:`bot.approval.reminders`),
        until cancelled."""
        await self._reminders.run()

    async def sweep_reminders(self) -> int:
        """One sweep of :meth:`remind`: what is due now; returns how many were sent."""
        return await self._reminders.sweep()

    async def close(self) -> int:
        """The daemon starts to stop: pending approvals expire at once (reason
        ``shutdown``; their waiting turns wake and end; with several replicas, this one's
        only) and later requests are refused. Idempotent; returns the number expired."""
        count = await self._backchannel.close()
        if count:
            log.info("approvals_expired_pending", count=count, reason=RuntimeReason.SHUTDOWN)
        return count

    def policy_for(self, channel: ChannelRef, agent: str | None = None) -> EffectivePolicy:
        """The approval settings in force on ``channel`` (approvers, timeout, grant scope),
        under ``agent`` (None: the default agent's)."""
        return self._policy.for_channel(channel, agent or DEFAULT_AGENT)

    def escalated_now(self, record: ApprovalRecord) -> list[str]:
        """The users ``record`` was escalated to whom the configuration in force still
        escalates it to: they may decide it (in chat and in the console)."""
        return escalated_now(self._policy.for_channel, record)[0]

    async def decide_from_web(self, answer: WebAnswer) -> ClickVerdict:
        """A decision from the web console: the same rules as a click on a full view
        (approvers only, never the requester's own call unless ``self_approval``, once, and
        only for the call whose fingerprint the page showed); the waiting turn wakes and
        edits the chat's cards. Refusals are audited like refused clicks; the decision's
        rows record the route ``web``."""
        action = CardAction(
            channel=answer.channel,
            approval_id=answer.approval_id,
            verb=CardVerb.GRANT if answer.grant_choice else CardVerb(answer.choice),
            actor=Actor(user_id=answer.user_id),
            reply=answer.reply,
            full_view=True,
            grant_choice=answer.grant_choice,
        )
        return await self._backchannel.flow.decide(
            action,
            route=AnswerRoute.WEB,
            fingerprint=answer.fingerprint,
        )

    async def decide_from_cli(self, approval_id: str, approve: bool, operator: str) -> ClickVerdict:
        """``hatchway approvals approve|deny ID``; ``operator`` is recorded as the decider.
        The waiting turn (possibly in another process) notices within its poll interval."""
        return await self._backchannel.flow.decide_as_operator(approval_id, approve, operator)
