"""A Discord message and an application command carry their server (``guild_id``), so a
route naming the server sends them, and a ``/new`` typed there, to the same agent."""

from __future__ import annotations

from bot.config import parse_settings
from bot.envelope import ChannelRef
from bot.routing import Router
from channels.discord.normalise import (
    CommandFacts,
    MessageFacts,
    NormaliseOptions,
    envelope_from_command,
    envelope_from_facts,
)

REF = ChannelRef(kind="discord", alias="main")
OPTIONS = NormaliseOptions(channel=REF, bot_user_id="900")


def test_a_guild_route_reaches_messages_and_commands_alike() -> None:
    router = Router(
        parse_settings(
            {
                "channels": {"discord": {"main": {"token_env": "T"}}},
                "agents": {"ops": {"routes": [{"channel": "discord", "guild": "77"}]}},
            },
            environ={},
            require_provider=False,
        )
    )
    said = envelope_from_facts(
        MessageFacts(message_id="1", channel_id="5", guild_id="77", author_id="42", content="hi"),
        OPTIONS,
    )
    typed = envelope_from_command(
        CommandFacts(interaction_id="2", channel_id="5", guild_id="77", user_id="42", text="/new"),
        OPTIONS,
    )
    elsewhere = envelope_from_facts(
        MessageFacts(message_id="3", channel_id="6", guild_id="78", author_id="42", content="hi"),
        OPTIONS,
    )
    dm = envelope_from_facts(MessageFacts(message_id="4", channel_id="9", author_id="42"), OPTIONS)
    assert (said.guild_id, typed.guild_id, dm.guild_id) == ("77", "77", None)
    assert router.route(said) == router.route(typed) == ("ops", "agents.ops.routes[0]")
    assert router.route(elsewhere) == ("default", "channels.discord.main.agent")
    assert router.route(dm)[0] == "default"
