"""Routing: which agent answers a conversation.

Each channel alias names its default agent (``channels.<kind>.<alias>.agent``, ``default``
unless set); a route of ``[[agents.<name>.routes]]`` that matches the message wins over it.
Routes are tried most specific first: by how many keys they set (``channel`` naming an
alias counts one more than a bare kind), and between routes of equal weight, in the order
they are declared (agents in file order, then their routes in order). The gateway routes
every message as it arrives and puts the outcome on the envelope (``agent``, ``route``), so
the turn, its session key, its log lines and the approval policy all see the same agent,
and a message re-queued after a restart keeps the agent it was admitted with.

This module decides from the envelope and the settings alone; it sits below the gateway and
the agent (both may import it), above the configuration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.config import DEFAULT_AGENT, RouteConfig, Settings
from bot.envelope import IngressEnvelope, with_route


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteRule:
    """One declared route: the agent it leads to, where it is written
    (``agents.ops.routes[0]``) and what it matches."""

    agent: str
    where: str
    match: RouteConfig
    order: int

    @property
    def weight(self) -> int:
        """How specific the route is: its keys, and one more when ``channel`` names an
        alias (``telegram.main`` is narrower than ``telegram``)."""
        channel = self.match.channel
        return self.match.specificity + (1 if channel is not None and "." in channel else 0)

    def matches(self, envelope: IngressEnvelope) -> bool:
        m = self.match
        if m.channel is not None:
            ref = envelope.channel
            if m.channel != (str(ref) if "." in m.channel else ref.kind):
                return False
        return (
            (m.conversation is None or m.conversation == envelope.conversation_id)
            and (m.thread is None or m.thread == envelope.thread_id)
            and (m.dm is None or m.dm == envelope.is_direct)
            and (m.guild is None or m.guild == envelope.guild_id)
        )


def route_rules(settings: Settings) -> list[RouteRule]:
    """Every declared route in the order they are tried (heaviest first, then as declared)."""
    declared: list[RouteRule] = []
    for agent, profile in settings.agents.items():
        for index, match in enumerate(profile.routes):
            declared.append(
                RouteRule(
                    agent=agent,
                    where=f"agents.{agent}.routes[{index}]",
                    match=match,
                    order=len(declared),
                )
            )
    return sorted(declared, key=lambda rule: (-rule.weight, rule.order))


class Router:
    """Decides the agent of each message from one configuration (build a new one on
    reload)."""

    def __init__(self, settings: Settings) -> None:
        self._rules: Sequence[RouteRule] = route_rules(settings)
        self._channel_agent = {
            f"{kind}.{alias}": config.agent for kind, alias, config in settings.channels.all()
        }

    @property
    def rules(self) -> Sequence[RouteRule]:
        return self._rules

    def route(self, envelope: IngressEnvelope) -> tuple[str, str]:
        """The agent that answers ``envelope`` and why (the route's key, or the channel's
        ``agent`` key)."""
        for rule in self._rules:
            if rule.matches(envelope):
                return rule.agent, rule.where
        channel = str(envelope.channel)
        agent = self._channel_agent.get(channel)
        if agent is None:
            return DEFAULT_AGENT, "default"
        return agent, f"channels.{channel}.agent"

    def routed(self, envelope: IngressEnvelope) -> IngressEnvelope:
        """``envelope`` with its agent and route filled in."""
        agent, why = self.route(envelope)
        if envelope.agent == agent and envelope.route == why:
            return envelope
        return with_route(envelope, agent, why)
