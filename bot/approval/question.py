"""The message a policy question imagines: who writes where, routed as the gateway routes it.

``hatchway policy explain``, the console's *Explain* page and ``hatchway doctor``'s approval
warnings all judge a call nobody made: :func:`imagined_envelope` builds the envelope such a
call would come with (a group message or a direct message, addressed to the bot, from a
user with roles; a scheduled job's turn with ``background``), and :func:`agents_on` lists
the agents that can answer on a channel alias (its own, and those of the routes that can
match there), whose approval tables may differ.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from bot.config import DEFAULT_AGENT, Settings
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.routing import Router, route_rules
from bot.visible_text import visible

#: The message and call id an imagined call carries.
CALL_ID = "policy-explain"


@dataclass(frozen=True, slots=True, kw_only=True)
class Unanswerable:
    """What is wrong with a question, in one sentence (escaped, safe to show)."""

    message: str


def imagined_envelope(
    settings: Settings,
    *,
    channel: str,
    conversation: str,
    user: str,
    roles: Sequence[str] = (),
    thread: str | None = None,
    dm: bool = False,
    agent: str | None = None,
    background: bool = False,
) -> IngressEnvelope | Unanswerable:
    """The message the question imagines (``channel`` is ``kind.alias``), routed as the
    gateway routes it (``agent`` overrides the route), or what is wrong with the question."""
    kind, dot, alias = channel.partition(".")
    if not dot or settings.channels.get(kind, alias) is None:
        known = ", ".join(f"{k}.{a}" for k, a, _ in settings.channels.all()) or "none"
        return Unanswerable(
            message=f"no channel {visible(channel)!r} in the configuration (configured: {known})"
        )
    if agent is not None and agent != DEFAULT_AGENT and agent not in settings.agents:
        return Unanswerable(message=f"no agent {visible(agent)!r} in the configuration")
    if not conversation or not user:
        return Unanswerable(message="the question needs a conversation id and a user id")
    ref = ChannelRef(kind=kind, alias=alias)
    envelope = IngressEnvelope(
        channel=ref,
        message_id=CALL_ID,
        conversation_id=conversation,
        sender=Sender(id=user, display_name=user, roles=tuple(roles)),
        text="",
        reply_target=DeliveryTarget(channel=ref, conversation_id=conversation, thread_id=thread),
        thread_id=thread,
        is_direct=dm,
        is_group=not dm,
        addressed_to_bot=True,
        capabilities=Capabilities(
            terminal_prompt=kind == "console", approval_backchannel=kind != "console"
        ),
        background=background,
    )
    envelope = Router(settings).routed(envelope)
    if agent is not None:
        envelope = dataclasses.replace(envelope, agent=agent, route="--agent")
    return envelope


def agents_on(settings: Settings, kind: str, alias: str) -> list[str]:
    """The agents that can answer on ``kind.alias``: the alias's own, then those of the
    routes that can match there (a route naming no channel, the kind, or the alias)."""
    cfg = settings.channels.get(kind, alias)
    found = [cfg.agent] if cfg is not None else []
    for rule in route_rules(settings):
        where = rule.match.channel
        if where in (None, kind, f"{kind}.{alias}") and rule.agent not in found:
            found.append(rule.agent)
    return found
