"""Discord messages in: the adapter's only filters, then envelopes to the host.

It applies ``allowed_guilds`` (guild ids are a Discord notion the gateway does not see) and
ignores its own messages, system messages and gateway replays of a message id; everything
else — access, mention rules, pairing — is the gateway's. A guild message that will get a
thread of its own (``thread_per_request``) is recorded in the
:class:`~channels.discord.threads.ThreadBook` so the first answer opens it.
"""

from __future__ import annotations

from collections import OrderedDict

import discord
import structlog

from bot.envelope import ChannelRef
from channels.discord.client import Connection
from channels.discord.config import DiscordChannelConfig
from channels.discord.normalise import (
    NormaliseOptions,
    envelope_from_facts,
    facts_from_message,
    is_conversational,
)
from channels.discord.threads import PendingThread, ThreadBook

log = structlog.get_logger(__name__)

SEEN_LIMIT = 4096


class InboundMessages:
    """Turns ``on_message`` events into envelopes for the host."""

    def __init__(
        self,
        ref: ChannelRef,
        config: DiscordChannelConfig,
        connection: Connection,
        threads: ThreadBook,
    ) -> None:
        self.ref = ref
        self._config = config
        self._connection = connection
        self._threads = threads
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._log = log.bind(channel=str(ref))

    async def message_created(self, message: discord.Message) -> None:
        client, host = self._connection.connected(), self._connection.host
        if client is None or client.user is None or host is None:
            return
        if message.author.id == client.user.id or not is_conversational(message):
            return
        guild = message.guild
        allowed = self._config.allowed_guilds
        if guild is not None and allowed and str(guild.id) not in allowed:
            self._log.debug("discord_guild_not_allowed", guild_id=str(guild.id))
            return
        if not self._first_sighting(str(message.id)):
            return
        options = NormaliseOptions(
            channel=self.ref,
            bot_user_id=str(client.user.id),
            thread_per_request=self._config.thread_per_request,
            thread_counts_as_mention=self._config.thread_counts_as_mention,
            approval_backchannel=bool(self._config.approvers or self._config.approver_roles),
        )
        facts = facts_from_message(message, bot_threads=self._threads.posted)
        envelope = envelope_from_facts(facts, options)
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

    def _first_sighting(self, message_id: str) -> bool:
        if message_id in self._seen:
            return False
        self._seen[message_id] = None
        if len(self._seen) > SEEN_LIMIT:
            self._seen.popitem(last=False)
        return True
