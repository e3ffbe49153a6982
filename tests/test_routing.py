"""Routing: the agent of a message, from its channel's ``agent`` key and the routes of
``[agents]``, most specific first; and the session key that keeps each agent's history."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.config import parse_settings
from bot.envelope import (
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
    envelope_from_json,
    envelope_to_json,
)
from bot.gateway.sessions import session_key_for
from bot.routing import Router


def envelope(
    channel: str = "telegram.main",
    conversation: str = "100",
    *,
    thread: str | None = None,
    direct: bool = False,
    guild: str | None = None,
) -> IngressEnvelope:
    kind, alias = channel.split(".")
    ref = ChannelRef(kind=kind, alias=alias)
    return IngressEnvelope(
        channel=ref,
        message_id="1",
        conversation_id=conversation,
        thread_id=thread,
        sender=Sender(id="7"),
        text="hi",
        reply_target=DeliveryTarget(channel=ref, conversation_id=conversation),
        is_direct=direct,
        is_group=not direct,
        guild_id=guild,
    )


CHANNELS: dict[str, Any] = {
    "telegram": {"main": {"token_env": "T", "agent": "chat"}, "side": {"token_env": "T"}},
    "discord": {"main": {"token_env": "T"}},
}


def router(agents: dict[str, Any]) -> Router:
    return Router(
        parse_settings(
            {"channels": CHANNELS, "agents": {"chat": {}, **agents}},
            environ={},
            require_provider=False,
        )
    )


AGENTS: dict[str, Any] = {
    "ops": {"routes": [{"conversation": "100"}, {"channel": "discord", "guild": "9"}]},
    "dm": {"routes": [{"dm": True}]},
    "topic": {"routes": [{"channel": "telegram.main", "conversation": "100", "thread": "5"}]},
    "later": {"routes": [{"conversation": "100"}, {"channel": "telegram.side"}]},
}


@pytest.mark.parametrize(
    ("message", "agent", "route"),
    [
        (envelope(conversation="200"), "chat", "channels.telegram.main.agent"),
        (envelope("telegram.side", "200"), "later", "agents.later.routes[1]"),
        (envelope(conversation="100"), "ops", "agents.ops.routes[0]"),
        (envelope(conversation="100", thread="5"), "topic", "agents.topic.routes[0]"),
        (envelope(conversation="100", thread="6"), "ops", "agents.ops.routes[0]"),
        (envelope(conversation="300", direct=True), "dm", "agents.dm.routes[0]"),
        (envelope("discord.main", "55", guild="9"), "ops", "agents.ops.routes[1]"),
        (envelope("discord.main", "55", guild="8"), "default", "channels.discord.main.agent"),
        (envelope("slack.gone", "55"), "default", "default"),
    ],
)
def test_the_most_specific_route_wins(message: IngressEnvelope, agent: str, route: str) -> None:
    routed = router(AGENTS).routed(message)
    assert (routed.agent, routed.route) == (agent, route)


def test_routing_twice_changes_nothing() -> None:
    routes = router(AGENTS)
    once = routes.routed(envelope())
    assert routes.routed(once) is once


def test_a_history_belongs_to_its_agent() -> None:
    message = envelope(conversation="100", thread="5")
    assert session_key_for(message) == "telegram.main:100:5"  # default: keys from before
    routed = router(AGENTS).routed(message)
    assert session_key_for(routed) == "telegram.main:100:5:@topic"
    per_user = session_key_for(routed, per_user_in_groups=True)
    assert per_user == "telegram.main:100:5:u7:@topic"


def test_the_route_is_kept_with_the_inbox_entry() -> None:
    routed = router(AGENTS).routed(envelope("discord.main", "55", guild="9"))
    assert envelope_from_json(envelope_to_json(routed)) == routed
    # an entry stored before routing existed reads as the default agent's
    stored = json.loads(envelope_to_json(envelope()))
    for key in ("guild_id", "agent", "route"):
        del stored[key]
    old = json.dumps(stored)
    assert envelope_from_json(old).agent == "default"
