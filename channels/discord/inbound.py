"""Discord messages in: new, fetched by a catch-up, edited and deleted; application
commands. The adapter's only filters, then envelopes to the host.

It applies ``allowed_guilds`` (guild ids are a Discord notion the gateway does not see) and
ignores its own messages, system messages and second sightings of a message id (a gateway
replay, or a message both received live and fetched by :mod:`channels.discord.catch_up`);
everything else — access, mention rules, pairing — is the gateway's. A guild message that
will get a thread of its own (``thread_per_request``) is recorded in the
:class:`~channels.discord.threads.ThreadBook` so the first answer opens it. Every message
of a served conversation is recorded as seen (:mod:`channels.discord.last_seen`) once the
host has it.

Edits and deletions come as discord.py's raw events, so they work for messages no longer
(or never) in its cache. An edit is handed to the host (``ChannelHost.edited``, an envelope
built like a live message's, same ``message_id``) only when the text changed: compared with
what this adapter saw of the message, or discord.py's cached copy; for a message known to
neither (from before a restart), only when the update carries an edit time less than
:data:`FRESH_EDIT_S` old, so a pin or an embed added to an old message is not taken for an
edit. The bot's own messages are never reported. A deletion is reported by id
(``ChannelHost.deleted``); the gateway ignores ids it does not hold.

An application command is deferred at once (Discord's 3 s; see
:mod:`channels.discord.command_replies`), privately in a server (every answer to it, a
refusal by the rate limits included, is the user's alone, as on Slack), delivered as
``/<name>``, and settled when the host is done with it: a command the gateway refused is
acknowledged in time all the same. A command from a server outside ``allowed_guilds`` is
answered, privately, that the bot does not serve it there: a command must be answered, and
the gateway never sees it.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from datetime import UTC, datetime

import discord
import structlog

from bot.envelope import ChannelRef, IngressEnvelope
from channels.discord.client import Connection, GatewayClient, endpoint_scope
from channels.discord.command_replies import CommandReplies
from channels.discord.config import DiscordChannelConfig
from channels.discord.last_seen import LastSeen
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
#: An update of a message this adapter knows nothing about counts as an edit only when its
#: edit time is this recent (seconds).
FRESH_EDIT_S = 300.0


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=8).digest()


class InboundMessages:
    """Turns message events (and fetched messages) into envelopes for the host."""

    def __init__(
        self,
        ref: ChannelRef,
        config: DiscordChannelConfig,
        connection: Connection,
        threads: ThreadBook,
        replies: CommandReplies,
        last_seen: LastSeen,
    ) -> None:
        self.ref = ref
        self._config = config
        self._connection = connection
        self._threads = threads
        self._replies = replies
        self._last_seen = last_seen
        #: Message (and interaction) ids already handled, with a digest of the text
        #: delivered: how a second sighting is dropped and an edit is told from an update.
        self._seen: OrderedDict[str, bytes] = OrderedDict()
        self._log = log.bind(channel=str(ref))

    async def message_created(self, message: discord.Message, *, fetched: bool = False) -> None:
        """A new message, from the gateway or (``fetched``) from a catch-up."""
        client, host = self._connection.connected(), self._connection.host
        if client is None or client.user is None or host is None:
            return
        guild = message.guild
        if not self._guild_allowed(guild.id if guild is not None else None):
            return
        conversation = str(message.channel.id)
        if message.author.id == client.user.id or not is_conversational(message):
            self._last_seen.seen(conversation, message.id)
            return
        if not self._first_sighting(str(message.id), message.content):
            return
        envelope = self._envelope(message, client)
        self._log.info(
            "discord_message_received",
            message_id=envelope.message_id,
            conversation_id=envelope.conversation_id,
            addressed=envelope.addressed_to_bot,
            fetched=fetched,
        )
        with self._last_seen.delivering(conversation, message.id):
            await host.deliver(envelope)
        await self._last_seen.write_if_due()

    async def message_edited(self, payload: discord.RawMessageUpdateEvent) -> None:
        """A message was updated: handed to the host when its text was edited."""
        client, host = self._connection.connected(), self._connection.host
        if client is None or client.user is None or host is None:
            return
        message = payload.message
        if message.author.id == client.user.id or not is_conversational(message):
            return
        if not self._guild_allowed(payload.guild_id):
            return
        message_id, now = str(message.id), _digest(message.content)
        before = self._seen.get(message_id)
        if before is None and payload.cached_message is not None:
            before = _digest(payload.cached_message.content)
        if before == now or (before is None and not _freshly_edited(message)):
            return
        self._remember(message_id, now)
        envelope = self._envelope(message, client)
        self._log.info(
            "discord_message_edited",
            message_id=envelope.message_id,
            conversation_id=envelope.conversation_id,
            addressed=envelope.addressed_to_bot,
        )
        await host.edited(envelope)

    async def message_deleted(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self._deleted(payload.guild_id, [(payload.message_id, payload.cached_message)])

    async def messages_deleted(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        cached = {m.id: m for m in payload.cached_messages}
        ids = sorted(payload.message_ids)
        await self._deleted(payload.guild_id, [(i, cached.get(i)) for i in ids])

    async def _deleted(
        self, guild_id: int | None, messages: list[tuple[int, discord.Message | None]]
    ) -> None:
        client, host = self._connection.connected(), self._connection.host
        if client is None or client.user is None or host is None:
            return
        if not self._guild_allowed(guild_id):
            return
        for message_id, cached in messages:
            if cached is not None and cached.author.id == client.user.id:
                continue
            self._log.info("discord_message_deleted", message_id=str(message_id))
            await host.deleted(self.ref, str(message_id))

    def _envelope(self, message: discord.Message, client: GatewayClient) -> IngressEnvelope:
        """The message's envelope; a guild message that gets a thread of its own has it
        recorded as pending, so the first answer opens it."""
        assert client.user is not None
        facts = facts_from_message(message, bot_threads=self._threads.posted)
        envelope = envelope_from_facts(facts, self._options(str(client.user.id)))
        guild = message.guild
        if guild is not None and envelope.thread_id == envelope.message_id:
            name = (envelope.text.splitlines() or [""])[0][:80].strip() or "hatchway"
            self._threads.expect(
                envelope.message_id,
                PendingThread(channel_id=message.channel.id, guild_id=guild.id, name=name),
            )
        return envelope

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
        # private in a server: an answer may be a refusal (the rate limits), nobody else's
        await self._replies.defer(interaction, ephemeral=interaction.guild_id is not None)
        facts = facts_from_interaction(interaction, name)
        envelope = envelope_from_command(facts, self._options(str(client.user.id)))
        self._log.info(
            "discord_command_received",
            command=name.partition(" ")[0],  # never its text (arguments may hold anything)
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

    def _first_sighting(self, message_id: str, text: str = "") -> bool:
        if message_id in self._seen:
            return False
        self._remember(message_id, _digest(text))
        return True

    def _remember(self, message_id: str, digest: bytes) -> None:
        self._seen[message_id] = digest
        self._seen.move_to_end(message_id)
        if len(self._seen) > SEEN_LIMIT:
            self._seen.popitem(last=False)


def _freshly_edited(message: discord.Message) -> bool:
    edited = message.edited_at
    if edited is None:
        return False
    return abs((datetime.now(UTC) - edited).total_seconds()) <= FRESH_EDIT_S
