"""The Discord channel adapter, on discord.py 2.x.

:class:`DiscordChannel` logs in over REST (``/users/@me``), connects to the gateway and hands
user messages to its :class:`~bot.channel.ChannelHost` as envelopes; it renders answers,
progress edits, typing and approval cards. It decides nothing about access or approval.
This module owns the lifecycle and health and composes the parts:
:mod:`~channels.discord.inbound` (messages and application commands in, the commands synced
by :mod:`~channels.discord.commands` after login and answered through
:mod:`~channels.discord.command_replies`), :mod:`~channels.discord.card_surface` (answers on
approval cards and their full views), :mod:`~channels.discord.outbound` (everything posted,
cards as :mod:`~channels.discord.cards` renders them) and :mod:`~channels.discord.members`
(whether an approver can see a conversation, asked before a card is posted), sharing one
:class:`~channels.discord.client.Connection` and one
:class:`~channels.discord.threads.ThreadBook`. Each new gateway session (a start, or a
reconnect Discord would not resume) catches up on what was posted meanwhile in the
conversations the bot has seen, and in the guild channels first posted to while it was away
(:mod:`~channels.discord.catch_up`, from :mod:`~channels.discord.last_seen` and
:mod:`~channels.discord.watermark`, written every few seconds while it runs); edits and
deletions are reported to the host (:mod:`~channels.discord.inbound`); start-up recovery asks
:mod:`~channels.discord.delivery_check` whether a reply cut off by a crash was posted; a turn
mentioned in a thread or reply chain reads its earlier messages through
:mod:`~channels.discord.thread_history`.

Several replicas (a PostgreSQL store): every replica logs in and sends over REST, but only
the one holding the alias's ``gateway`` role (:meth:`~bot.channel.ChannelHost.lead`) keeps a
gateway session, so each event reaches one replica. The session is unsharded (discord.py's
``Client``, shard 0 of 1, the only shard of a bot in fewer than 2,500 guilds), so the
alias's lease ``discord.<alias>.gateway`` is the lease of its one shard; a bot Discord
requires to shard is refused with close code 4011, which fails the channel with that
reason. The others are on standby; whichever takes the role over reads the last-seen rows
and the watermark again from the store and catches up on what was posted meanwhile. When
the role is lost the session is closed (code 1000: Discord ends it, and the next holder
identifies anew) before another replica may connect.

Health: ``STARTING`` until the gateway's READY (credentials accepted, session established;
messages flow from then on, before discord.py's ``on_ready``, which waits
``guild_ready_timeout_s`` for the guilds' details) → ``CONNECTED``; a
dropped gateway → ``RECONNECTING`` until discord.py resumes or re-identifies (it backs off
with jitter); ``CONNECTED`` on standby too (the detail says so); a refused token (401 on
login, gateway close 4004) or a missing privileged intent (close 4014) → ``FAILED`` and
:class:`~bot.errors.ChannelAuthError` from :meth:`run`.
"""

from __future__ import annotations

import aiohttp
import discord
import structlog

from bot.backoff import Backoff, cancel_requested, sleep_before_retry
from bot.channel import (
    ChannelHealth,
    ChannelHost,
    HealthState,
)
from bot.channel_registry import ChannelContext
from bot.config import ChannelCommon, Settings
from bot.envelope import ChannelRef
from bot.errors import ChannelAuthError, ChannelError, ConfigError
from bot.scrub import register_secret
from channels.common.card_index import CardIndex
from channels.common.health import HealthRecord
from channels.common.outbound import SendsThrough
from channels.discord.card_surface import DiscordCardAnswers
from channels.discord.catch_up import CatchUp
from channels.discord.client import Connection, GatewayClient, endpoint_scope, gateway_intents
from channels.discord.command_replies import CommandReplies
from channels.discord.commands import sync_commands
from channels.discord.config import DiscordChannelConfig
from channels.discord.delivery_check import ReplyFinder
from channels.discord.downloads import Downloads
from channels.discord.files import FileSender
from channels.discord.inbound import InboundMessages
from channels.discord.last_seen import LastSeen
from channels.discord.members import ConversationMembers
from channels.discord.outbound import Outbound
from channels.discord.thread_history import DiscordThreadHistory
from channels.discord.threads import ThreadBook
from channels.discord.watermark import Watermark

log = structlog.get_logger(__name__)

#: The role only one replica plays per alias (:meth:`bot.channel.ChannelHost.lead`).
GATEWAY_ROLE = "gateway"

#: The gateway's close code for a bot in too many guilds for one session (2,500 or more).
SHARDING_REQUIRED = 4011
SHARDING_DETAIL = (
    "Discord requires sharding for this bot (gateway close code 4011: it is in 2,500 guilds "
    "or more); a Discord channel keeps one unsharded gateway session, so it cannot serve it"
)

INTENT_HINT = (
    "the Message Content intent is not enabled for this application: enable it in the Discord "
    "Developer Portal → your application → Bot → Privileged Gateway Intents"
)


class DiscordChannel(SendsThrough):
    """A Discord bot. Create with :func:`create`; :meth:`run` lives until cancelled."""

    def __init__(self, ref: ChannelRef, config: DiscordChannelConfig, context: ChannelContext):
        self.ref = ref
        self._config = config
        self._health = HealthRecord(ref, HealthState.STARTING, "not started")
        self._connection = Connection()
        threads = ThreadBook(str(ref))
        cards = CardIndex(context.store.channel_state, str(ref))
        reactions = config.reactions_for_approval
        replies = CommandReplies(ref, api_base_url=config.api_base_url, connection=self._connection)
        self._watermark = Watermark(context.store.channel_state, str(ref))
        self._last_seen = LastSeen(context.store.channel_state, str(ref), watermark=self._watermark)
        self._inbound = InboundMessages(
            ref, config, self._connection, threads, replies, self._last_seen
        )
        self._catch_up = CatchUp(
            ref, config, self._connection, self._last_seen, self._watermark, self._inbound
        )
        self._outbound = outbound = Outbound(
            ref, self._connection, threads, cards, replies, reactions_for_approval=reactions
        )
        self._clicks = DiscordCardAnswers(
            ref, self._connection, cards, self._outbound.codec, reactions_for_approval=reactions
        )
        # the optional parts of a bot.channel.Channel
        self.cards = outbound
        self.files = FileSender(ref, self._connection, self._outbound, replies)
        self.downloads = Downloads(ref, self._connection, api_base_url=config.api_base_url)
        self.delivery = ReplyFinder(ref, self._connection, shown_text=self.shown_text)
        self.members = ConversationMembers(ref, self._connection)
        self.history = DiscordThreadHistory(self._connection)
        self.replied = None
        self.viewing = None
        self.work_status = None
        self.answer_stream = None
        self.live_text = None

    @property
    def health(self) -> ChannelHealth:
        return self._health.current

    # lifecycle -------------------------------------------------------------------------

    async def run(self, host: ChannelHost) -> None:
        """Log in, connect and deliver messages until cancelled (then close the client)."""
        token = Settings.secret(self._config.token_env)
        if token is None:
            self._health.set(HealthState.FAILED, f"no token: {self._config.token_env} is not set")
            self._connection.login_settled.set()  # nobody waits for a login that never comes
            raise ChannelAuthError(
                f"{self.ref}: environment variable {self._config.token_env} "
                "holding the bot token is not set"
            )
        register_secret(token)
        self._connection.host = host
        client = GatewayClient(
            self,
            self._inbound,
            self._clicks,
            intents=gateway_intents(reactions=self._config.reactions_for_approval),
            api_base_url=self._config.api_base_url,
            gateway_url=self._config.gateway_url,
            guild_ready_timeout=self._config.guild_ready_timeout_s,
        )
        self._connection.client = client
        self._connection.login_settled.clear()
        try:
            await self._last_seen.load()
            await self._watermark.load()
            with endpoint_scope(self._config.api_base_url):
                await self._login(client, token)
                self._connection.login_settled.set()
                if self._config.sync_commands:
                    await sync_commands(client.tree, self.ref)
                self._health.set(HealthState.STARTING, "logged in; connecting to the gateway")
                while True:
                    await host.lead(
                        self.ref,
                        GATEWAY_ROLE,
                        lambda: self._gateway_session(client),
                        standby=self._standby,
                    )
                    log.info("discord_gateway_left", channel=str(self.ref), reason="role lost")
        except discord.LoginFailure:
            self._health.set(
                HealthState.FAILED, "Discord refused the bot token (401 on /users/@me)"
            )
            raise ChannelAuthError(f"{self.ref}: Discord refused the bot token") from None
        except discord.PrivilegedIntentsRequired:
            self._health.set(HealthState.FAILED, INTENT_HINT)
            raise ChannelAuthError(f"{self.ref}: {INTENT_HINT}") from None
        except discord.ConnectionClosed as exc:
            if exc.code == 4004:
                self._health.set(
                    HealthState.FAILED, "the gateway refused the bot token (close code 4004)"
                )
                raise ChannelAuthError(f"{self.ref}: the gateway refused the bot token") from None
            if exc.code == SHARDING_REQUIRED:
                self._health.set(HealthState.FAILED, SHARDING_DETAIL)
                raise ChannelError(f"{self.ref}: {SHARDING_DETAIL}") from None
            self._health.set(
                HealthState.FAILED,
                f"the gateway closed the connection (code {exc.code}: {exc.reason})",
            )
            raise ChannelError(f"{self.ref}: gateway closed with code {exc.code}") from None
        except Exception as exc:
            # Not swallowed: recorded so health says why the adapter stopped, then re-raised
            # (unless it is the stop itself, turned into an error by the library).
            if not cancel_requested():
                self._health.set(
                    HealthState.FAILED, f"stopped by an unexpected error: {type(exc).__name__}"
                )
            raise
        finally:
            self._connection.client = None
            self._connection.login_settled.set()
            await client.close()
            self._watermark.disconnected()
            await self._catch_up.stop()
            await self._last_seen.write()
            if self._health.state is not HealthState.FAILED:
                self._health.set(HealthState.STOPPED, "stopped")

    async def _gateway_session(self, client: GatewayClient) -> None:
        """The gateway connected while this process holds the gateway role: from the
        last-seen rows and watermark in the store (another replica may have moved them on),
        until cancelled; then the session is closed, the client (REST) left open."""
        await self._last_seen.load(again=True)
        await self._watermark.load(again=True)
        self._health.set(HealthState.STARTING, "connecting to the gateway")
        try:
            async with self._last_seen.flushing():
                try:
                    await client.connect(reconnect=True)
                finally:
                    # first, before the flush below may wait on a database that does not
                    # answer: the session must be closed by the lease's fence
                    await client.close_gateway()
        finally:
            self._watermark.disconnected()

    def _standby(self, why: str) -> None:
        self._health.set(HealthState.CONNECTED, f"standby, no gateway session: {why}")

    async def _login(self, client: GatewayClient, token: str) -> None:
        """``client.login`` with retries (jittered backoff) while Discord is unreachable."""
        backoff = Backoff(self._config.reconnect_backoff())
        while True:
            try:
                await client.login(token)
                return
            except discord.LoginFailure:
                raise
            except discord.HTTPException as exc:
                if exc.status < 500:
                    self._health.set(HealthState.FAILED, f"login failed: HTTP {exc.status}")
                    raise ChannelError(f"{self.ref}: login failed with HTTP {exc.status}") from None
                reason = f"HTTP {exc.status}"
            except (aiohttp.ClientError, OSError) as exc:
                reason = type(exc).__name__
            wait = backoff.next_delay()
            self._health.set(
                HealthState.RECONNECTING,
                f"cannot reach Discord ({reason}); retrying in {wait:.0f}s",
            )
            await client.http.close()
            await sleep_before_retry(wait)

    # the gateway session's events (GatewayListener; messages go to the inbound part, answers
    # on cards to the card surface) ------------------------------------------------------

    async def gateway_connected(self) -> None:
        # A new session (the gateway's READY; a resume is gateway_resumed): marked for a
        # catch-up before its first message is handled (no await before this).
        self._catch_up.session_started()
        self._watermark.connected()  # after the gap is opened at the stored value
        if self._watermark.stored is None:
            # The first start ever: store the first watermark now, not at the first
            # interval, so a start killed within seconds still leaves one.
            await self._last_seen.write()
        # Messages are dispatched from the gateway's READY on, so the channel is connected
        # then; discord.py's own "ready" only adds the wait for the guilds' details.
        client = self._connection.connected()
        if client is None:
            return
        self._health.set(HealthState.CONNECTED, f"connected as {client.user}")

    async def gateway_ready(self) -> None:
        client = self._connection.connected()
        if client is None:
            return
        # discord.py's "ready" comes guild_ready_timeout_s after the session's READY, even
        # when the gateway dropped meanwhile: it says connected only if nothing dropped since
        if self._health.state is HealthState.CONNECTED:
            self._health.set(
                HealthState.CONNECTED,
                f"connected as {client.user} to {len(client.guilds)} guild(s)",
            )
        # The guilds' channels are known now: fetch what the new session did not see.
        caught_up = await self._catch_up.run()
        if caught_up is not None and self._health.state is HealthState.CONNECTED:
            detail = f"{self._health.current.detail}; {caught_up.describe()}"
            self._health.set(HealthState.CONNECTED, detail)

    async def gateway_resumed(self) -> None:
        self._watermark.connected()  # Discord replays the gap to a resumed session
        self._health.set(HealthState.CONNECTED, "gateway session resumed")

    async def gateway_disconnected(self) -> None:
        self._watermark.disconnected()
        if self._health.state in (HealthState.CONNECTED, HealthState.STARTING):
            self._health.set(
                HealthState.RECONNECTING, "gateway connection lost; discord.py is resuming it"
            )


def create(ref: ChannelRef, config: ChannelCommon, context: ChannelContext) -> DiscordChannel:
    """The registry's factory for ``[channels.discord.<alias>]``."""
    if not isinstance(config, DiscordChannelConfig):
        raise ConfigError(f"channels.discord.{ref.alias}: expected a Discord channel config")
    return DiscordChannel(ref, config, context)
