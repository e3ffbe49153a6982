"""Application commands on Discord from a test's side: a user invoking ``/stop`` (etc.) as
Discord delivers it over the gateway, and a host that answers commands while it handles
them, as the gateway's router does."""

from __future__ import annotations

from collections.abc import Callable

from bot.channel import Channel
from bot.envelope import IngressEnvelope
from tests.fakes.discord_payloads import JSON, command_interaction, thread_payload
from tests.fakes.discord_server import Call, FakeDiscord
from tests.fakes.discord_setup import DM, RecordingHost


def channel_object(fake: FakeDiscord, channel_id: str) -> JSON:
    """The partial channel object an interaction carries: a DM, a thread (with its parent)
    or a text channel of one of the fake's guilds."""
    if channel_id == DM:
        return {"id": DM, "type": 1}
    for guild in fake.guilds:
        if channel_id in guild.threads:
            parent, owner = guild.threads[channel_id]
            return thread_payload(channel_id, parent, owner, guild.id)
        if channel_id in guild.channels:
            return {"id": channel_id, "type": 0, "guild_id": guild.id, "name": "channel"}
    raise KeyError(f"the fake has no channel {channel_id}")


async def invoke(
    fake: FakeDiscord,
    name: str,
    user: JSON,
    channel_id: str,
    roles: list[str] | None = None,
    options: dict[str, str] | None = None,
) -> tuple[str, Call]:
    """``user`` runs the registered global command ``/name`` in ``channel_id`` (in a guild,
    as a member holding ``roles``) with string ``options`` (each must be one the command
    registered); returns the interaction id and the adapter's callback (its answer or
    deferral)."""
    [command] = [c for c in fake.commands[None] if c["name"] == name]
    registered = {o["name"] for o in command.get("options", [])}
    assert set(options or {}) <= registered, f"/{name} registered no option {options}"
    interaction_id = fake.new_id()
    payload = command_interaction(
        id=interaction_id,
        command_id=command["id"],
        name=name,
        user=user,
        channel=channel_object(fake, channel_id),
        guild_id=None if channel_id == DM else fake.guild_of(channel_id),
        roles=roles,
        options=options,
    )
    await fake.dispatch("INTERACTION_CREATE", payload)
    [call] = await fake.wait_for_call("POST", rf"/interactions/{interaction_id}/[^/]+/callback")
    return interaction_id, call


class AnsweringHost(RecordingHost):
    """Records envelopes and, while handling one, sends ``answer(envelope)`` (if not None) to
    its reply target through ``channel`` — as the gateway answers a command before its
    ``deliver`` returns."""

    def __init__(self, answer: Callable[[IngressEnvelope], str | None]) -> None:
        super().__init__()
        self.answer = answer
        self.channel: Channel | None = None

    async def deliver(self, envelope: IngressEnvelope) -> None:
        text = self.answer(envelope)
        if text is not None and self.channel is not None:
            await self.channel.send(envelope.reply_target, text)
        await super().deliver(envelope)
