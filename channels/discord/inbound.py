"""Discord messages and application commands in: the adapter's only filters, then envelopes
to the host.

It applies ``allowed_guilds`` (guild ids are a Discord notion the gateway does not see) and
ignores its own messages, system messages and gateway replays of a message id; everything
else — access, mention rules, pairing — is the gateway's. A guild message that will get a
thread of its own (``thread_per_request``) is recorded in the
:class:`~channels.discord.threads.ThreadBook` so the first answer opens it.

An application command is deferred at once (Discord's 3 s; see
:mod:`channels.discord.command_replies`), delivered as ``/<name>``, and settled when the host
is done with it. A command from a server outside ``allowed_guilds`` is answered, privately,
that the bot does not serve it there: a command must be answered, and the gateway never
sees it.
"""

from __future__ import annotations

from collections import OrderedDict

import discord
import structlog

from bot.chat_commands import CommandAccess, command_spec
from bot.envelope import ChannelRef
from channels.discord.client import Connection, endpoint_scope
from channels.discord.command_replies import CommandReplies
from channels.discord.config import DiscordChannelConfig
from channels.discord.normalise import (
    NormaliseOptions,
    envelope_from_command,
    envelope_from_facts,
    facts_from_interaction,
    facts_from_message,
    is_conversational,
)
from channels.discord.threads import PendingThread, ThreadBook

log = structlog.get_logger(__name__)

SEEN_LIMIT = 4096
NOT_SERVED_HERE = "This bot does not serve this server."


class InboundMessages:
    """Turns ``on_message`` events into envelopes for the host."""

    def __init__(
        self,
        ref: ChannelRef,
        config: DiscordChannelConfig,
        connection: Connection,
        threads: ThreadBook,
        replies: CommandReplies,
    ) -> None:
        self.ref = ref
        self._config = config
        self._connection = connection
        self._threads = threads
        self._replies = replies
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._log = log.bind(channel=str(ref))

    async def message_created(self, message: discord.Message) -> None:
        client, host = self._connection.connected(), self._connection.host
        if client is None or client.user is None or host is None:
            return
        if message.author.id == client.user.id or not is_conversational(message):
            return
        guild = message.guild
        if not self._guild_allowed(guild.id if guild is not None else None):
            return
        if not self._first_sighting(str(message.id)):
            return
        facts = facts_from_message(message, bot_threads=self._threads.posted)
        envelope = envelope_from_facts(facts, self._options(str(client.user.id)))
        if guild is not None and envelope.thread_id == envelope.message_id:
            name = (envelope.text.splitlines() or [""])[0][:80].strip() or "hatchway"
            self._threads.expect(
                envelope.message_id,
                PendingThread(channel_id=message.channel.id, guild_id=guild.id, name=name),
            )
        self._log.info(
            "discord_message_received",
            message_id=envelope.message_id,
            conversation_id=envelope.conversation_id,
            addressed=envelope.addressed_to_bot,
        )
        await host.deliver(envelope)

    async def command_invoked(
        self, interaction: discord.Interaction[discord.Client], name: str
    ) -> None:
        client, host = self._connection.connected(), self._connection.host
        if client is None or client.user is None or host is None:
            return
        if not self._guild_allowed(interaction.guild_id):
            with endpoint_scope(self._config.api_base_url):
                await interaction.response.send_message(NOT_SERVED_HERE, ephemeral=True)
            return
        if not self._first_sighting(str(interaction.id)):
            return
        spec = command_spec(name)
        about_the_asker = spec is not None and spec.access is CommandAccess.ANYONE
        in_guild = interaction.guild_id is not None
        await self._replies.defer(interaction, ephemeral=about_the_asker and in_guild)
        facts = facts_from_interaction(interaction, name)
        envelope = envelope_from_command(facts, self._options(str(client.user.id)))
        self._log.info(
            "discord_command_received",
            command=name,
            interaction_id=envelope.message_id,
            conversation_id=envelope.conversation_id,
            thread_id=envelope.thread_id,
            user_id=envelope.sender.id,
        )
        try:
            await host.deliver(envelope)
        finally:
            await self._replies.settle(envelope.message_id)

    def _options(self, bot_user_id: str) -> NormaliseOptions:
        return NormaliseOptions(
            channel=self.ref,
            bot_user_id=bot_user_id,
            thread_per_request=self._config.thread_per_request,
            thread_counts_as_mention=self._config.thread_counts_as_mention,
            approval_backchannel=bool(self._config.approvers or self._config.approver_roles),
        )

    def _guild_allowed(self, guild_id: int | None) -> bool:
        allowed = self._config.allowed_guilds
        if guild_id is None or not allowed or str(guild_id) in allowed:
            return True
        self._log.debug("discord_guild_not_allowed", guild_id=str(guild_id))
        return False

    def _first_sighting(self, message_id: str) -> bool:
        if message_id in self._seen:
            return False
        self._seen[message_id] = None
        if len(self._seen) > SEEN_LIMIT:
            self._seen.popitem(last=False)
        return True
