"""Admission step: ``/usage`` and ``/status``, for members, after the command limits.

``/usage`` answers one person with their own model usage and what is left of their
budgets (:mod:`bot.usage.standing`), privately (:mod:`bot.gateway.private_answer`): in a
direct message, or where the platform shows the answer to its sender alone
(``IngressEnvelope.private_reply``: a Slack slash command, a Discord application command), it
is answered in place; anywhere else the answer goes to the sender's direct message with the
bot, and the conversation is told only that it went there (or, when the platform refused the
direct message — a Telegram user who never started the bot, closed Discord DMs — how to ask
privately). Nothing of it is said in a group.

``/status`` answers in the conversation, since it says nothing about one person: the agent
and model that serve it (and the route that chose the agent), whether an approval can be
answered here, and the grants in force here (read with :meth:`bot.store.grants.Grants.list`,
filtered by :func:`bot.approval.grants.scopes_for`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

import structlog

from bot.approval.grants import scopes_for
from bot.approval.policy import EffectivePolicy, effective_policy
from bot.approval.reach import approvers_here
from bot.chat_commands import command_of
from bot.config import Settings
from bot.envelope import IngressEnvelope
from bot.gateway.admission import Admit, Arrival
from bot.gateway.private_answer import answer_privately
from bot.gateway.sending import ChannelLookup, Replies
from bot.store import Store
from bot.store.grants import GrantRecord
from bot.turn import TurnIdentity
from bot.usage.standing import standing, usage_text

log = structlog.get_logger(__name__)

SENT_PRIVATELY = "📬 I sent you your usage in a direct message."
NOT_SENT = (
    "I could not send you a direct message, and your usage is not shown here: "
    "open a direct chat with me and send {prefix}usage there."
)


class StatusCommands:
    """``/usage`` and ``/status`` (see the module doc)."""

    #: what this step acts on; any other message passes it by (admission.compose)
    commands = frozenset({"usage", "status"})

    def __init__(
        self,
        *,
        store: Store,
        replies: Replies,
        channel_for: ChannelLookup,
        settings: Callable[[], Settings],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._replies = replies
        self._channel_for = channel_for
        self._settings = settings
        self._clock = clock

    async def __call__(self, arrival: Arrival, call_next: Admit) -> None:
        name = command_of(arrival.envelope.text)
        if name == "usage":
            await self._usage(arrival)
        elif name == "status":
            await self._status(arrival)
        else:
            await call_next(arrival)

    async def _usage(self, arrival: Arrival) -> None:
        envelope = arrival.envelope
        turn = TurnIdentity(turn_id="usage", session_key=arrival.session_key, envelope=envelope)
        text = usage_text(await standing(self._settings(), self._store, turn, now=self._clock()))
        log.info("command_answered", command="usage", user_id=envelope.sender.id)
        prefix = envelope.capabilities.command_prefix
        await answer_privately(
            self._replies,
            self._channel_for,
            envelope,
            text,
            sent=SENT_PRIVATELY,
            not_sent=NOT_SENT.format(prefix=prefix),
        )

    async def _status(self, arrival: Arrival) -> None:
        envelope = arrival.envelope
        settings = self._settings()
        policy = _policy(settings, envelope)
        here = await approvers_here(self._channel_for(envelope.channel), envelope, policy)
        grants = await self._store.grants.list(now=self._clock())
        wanted = set(scopes_for(envelope))
        shown = [g for g in grants if (g.scope, g.scope_key) in wanted]
        lines = [
            _agent_line(settings, envelope),
            _approval_line(settings, envelope, policy, here=here),
            *_grant_lines(shown),
        ]
        log.info("command_answered", command="status", user_id=envelope.sender.id)
        await self._replies.send(envelope, "\n".join(lines))


def _policy(settings: Settings, envelope: IngressEnvelope) -> EffectivePolicy:
    ref = envelope.channel
    profile = settings.agents.get(envelope.agent)
    return effective_policy(
        settings.approval,
        settings.channels.get(ref.kind, ref.alias),
        None if profile is None else profile.approval,
    )


def _agent_line(settings: Settings, envelope: IngressEnvelope) -> str:
    agent = settings.agent_for(envelope.agent)
    chain = [agent.provider, *agent.fallback]
    models = []
    for name in chain:
        provider = settings.providers.get(name)
        models.append(f"{provider.model} ({name})" if provider is not None else name)
    why = f", chosen by {envelope.route}" if envelope.route else ""
    fallback = f"; if it fails: {', '.join(models[1:])}" if len(models) > 1 else ""
    return f"Agent: {envelope.agent}{why}. Model: {models[0]}{fallback}."


def _approval_line(
    settings: Settings, envelope: IngressEnvelope, policy: EffectivePolicy, *, here: bool
) -> str:
    if policy.level == "full":
        return "Approvals: none asked (approval level full): tools run without asking."
    you = ""
    cfg = settings.channels.get(envelope.channel.kind, envelope.channel.alias)
    if cfg is not None and cfg.is_approver(envelope.sender):
        you = " You are an approver here."
    level = (
        " Level readonly: tools with side effects are refused."
        if policy.level == "readonly"
        else ""
    )
    if here and envelope.capabilities.approval_backchannel:
        where = "an approver can answer a request's card in this conversation."
    elif envelope.capabilities.terminal_prompt:
        where = "asked at this terminal."
    elif policy.dm_approvers and policy.approvers:
        where = "nobody can answer a card here; requests go to the approvers' direct messages."
    else:
        where = "nobody can answer one here, so tools that need one are refused."
    return f"Approvals: {where}{level}{you}"


def _grant_lines(grants: list[GrantRecord]) -> list[str]:
    if not grants:
        return ["Grants in force here: none."]
    lines = ["Grants in force here:"]
    for grant in grants:
        scope = {"conversation": "this conversation", "channel": "this channel"}.get(
            grant.scope, "everywhere"
        )
        until = (
            "until revoked"
            if grant.expires_at is None
            else "until "
            + datetime.fromtimestamp(grant.expires_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
        )
        lines.append(f"• {grant.tool}: {scope}, {until}")
    return lines
