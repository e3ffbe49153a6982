"""The Discord channel adapter, on discord.py 2.x.

:class:`DiscordChannel` logs in over REST (``/users/@me``), connects to the gateway and hands
user messages to its :class:`~bot.channel.ChannelHost` as envelopes; it renders answers,
progress edits, typing and approval cards. It decides nothing about access or approval: the
only filter it applies is ``allowed_guilds`` (guild ids are a Discord notion the gateway does
not see), plus ignoring its own messages, system messages and gateway replays of a message id.

Health: ``STARTING`` until READY (credentials accepted, guilds received) → ``CONNECTED``; a
dropped gateway → ``RECONNECTING`` until discord.py resumes or re-identifies (it backs off
with jitter); a refused token (401 on login, gateway close 4004) or a missing privileged
intent (close 4014) → ``FAILED`` and :class:`~bot.errors.ChannelAuthError` from :meth:`run`.
"""

from __future__ import annotations

import asyncio
import random
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import aiohttp
import discord
import structlog

from bot.channel import (
    ApprovalCard,
    ApprovalChoice,
    ApprovalClick,
    CardState,
    ChannelHealth,
    ChannelHost,
    ClickVerdict,
    HealthState,
    SentMessage,
)
from bot.channel_registry import ChannelContext
from bot.config import ChannelCommon, DiscordChannelConfig, Settings
from bot.envelope import ChannelRef, DeliveryTarget
from bot.errors import ChannelAuthError, ChannelError, ConfigError
from bot.scrub import register_secret
from channels.discord_approval import (
    CARD_REACTIONS,
    REACTION_CHOICES,
    ApprovalButton,
    card_content,
    card_view,
)
from channels.discord_client import GatewayClient, endpoint_scope, gateway_intents
from channels.discord_markup import render_chunks, render_single
from channels.discord_normalise import (
    NormaliseOptions,
    envelope_from_facts,
    facts_from_message,
    is_conversational,
)

log = structlog.get_logger(__name__)

INTENT_HINT = (
    "the Message Content intent is not enabled for this application: enable it in the Discord "
    "Developer Portal → your application → Bot → Privileged Gateway Intents"
)
_SEEN_LIMIT = 4096
_PENDING_THREAD_LIMIT = 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class _PendingThread:
    """A thread to open from a request message before the first answer is posted."""

    channel_id: int
    guild_id: int
    name: str


def _role_keys(member: discord.Member | None) -> tuple[str, ...]:
    """A member's role ids and names (without @everyone), for approver-role matching."""
    if member is None:
        return ()
    roles = [r for r in member.roles if not r.is_default()]
    return tuple(dict.fromkeys([*(str(r.id) for r in roles), *(r.name for r in roles)]))


class DiscordChannel:
    """A Discord bot. Create with :func:`create`; :meth:`run` lives until cancelled."""

    def __init__(self, ref: ChannelRef, config: DiscordChannelConfig, context: ChannelContext):
        self.ref = ref
        self._config = config
        self._context = context
        self._health = ChannelHealth(state=HealthState.STARTING, detail="not started")
        self._client: GatewayClient | None = None
        self._host: ChannelHost | None = None
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._cards: dict[str, str] = {}  # card message id -> approval id
        self._pending_threads: OrderedDict[str, _PendingThread] = OrderedDict()
        self._thread_lock = asyncio.Lock()
        self._bot_threads: OrderedDict[str, None] = OrderedDict()  # threads posted in
        self._log = log.bind(channel=str(ref))

    @property
    def health(self) -> ChannelHealth:
        return self._health

    def _set_health(self, state: HealthState, detail: str) -> None:
        if (state, detail) != (self._health.state, self._health.detail):
            self._log.info("discord_health", state=state.value, detail=detail)
        self._health = ChannelHealth(state=state, detail=detail)

    # lifecycle -------------------------------------------------------------------------

    async def run(self, host: ChannelHost) -> None:
        """Log in, connect and deliver messages until cancelled (then close the client)."""
        token = Settings.secret(self._config.token_env)
        if token is None:
            self._set_health(HealthState.FAILED, f"no token: {self._config.token_env} is not set")
            raise ChannelAuthError(
                f"{self.ref}: environment variable {self._config.token_env} "
                "holding the bot token is not set"
            )
        register_secret(token)
        self._host = host
        client = GatewayClient(
            self,
            intents=gateway_intents(reactions=self._config.reactions_for_approval),
            api_base_url=self._config.api_base_url,
            gateway_url=self._config.gateway_url,
            guild_ready_timeout=self._config.guild_ready_timeout_s,
        )
        client.add_dynamic_items(ApprovalButton)
        self._client = client
        try:
            with endpoint_scope(self._config.api_base_url):
                await self._login(client, token)
                self._set_health(HealthState.STARTING, "logged in; connecting to the gateway")
                await client.connect(reconnect=True)
        except discord.LoginFailure:
            self._fail("Discord refused the bot token (401 on /users/@me)")
            raise ChannelAuthError(f"{self.ref}: Discord refused the bot token") from None
        except discord.PrivilegedIntentsRequired:
            self._fail(INTENT_HINT)
            raise ChannelAuthError(f"{self.ref}: {INTENT_HINT}") from None
        except discord.ConnectionClosed as exc:
            if exc.code == 4004:
                self._fail("the gateway refused the bot token (close code 4004)")
                raise ChannelAuthError(f"{self.ref}: the gateway refused the bot token") from None
            self._fail(f"the gateway closed the connection (code {exc.code}: {exc.reason})")
            raise ChannelError(f"{self.ref}: gateway closed with code {exc.code}") from None
        except Exception as exc:
            # Not swallowed: recorded so health says why the adapter stopped, then re-raised.
            self._fail(f"stopped by an unexpected error: {type(exc).__name__}")
            raise
        finally:
            self._client = None
            await client.close()
            if self._health.state is not HealthState.FAILED:
                self._set_health(HealthState.STOPPED, "stopped")

    def _fail(self, detail: str) -> None:
        self._set_health(HealthState.FAILED, detail)

    async def _login(self, client: GatewayClient, token: str) -> None:
        """``client.login`` with retries (jittered backoff) while Discord is unreachable."""
        delay = 1.0
        while True:
            try:
                await client.login(token)
                return
            except discord.LoginFailure:
                raise
            except discord.HTTPException as exc:
                if exc.status < 500:
                    self._fail(f"login failed: HTTP {exc.status}")
                    raise ChannelError(f"{self.ref}: login failed with HTTP {exc.status}") from None
                reason = f"HTTP {exc.status}"
            except (aiohttp.ClientError, OSError) as exc:
                reason = type(exc).__name__
            wait = delay * random.uniform(0.5, 1.5)
            self._set_health(
                HealthState.RECONNECTING,
                f"cannot reach Discord ({reason}); retrying in {wait:.0f}s",
            )
            await client.http.close()
            await asyncio.sleep(wait)
            delay = min(delay * 2, 60.0)

    # gateway events (GatewayListener) --------------------------------------------------

    async def gateway_ready(self) -> None:
        client = self._client
        if client is None or client.user is None:
            return
        self._set_health(
            HealthState.CONNECTED, f"connected as {client.user} to {len(client.guilds)} guild(s)"
        )

    async def gateway_resumed(self) -> None:
        self._set_health(HealthState.CONNECTED, "gateway session resumed")

    async def gateway_disconnected(self) -> None:
        if self._health.state in (HealthState.CONNECTED, HealthState.STARTING):
            self._set_health(
                HealthState.RECONNECTING, "gateway connection lost; discord.py is resuming it"
            )

    async def message_created(self, message: discord.Message) -> None:
        client, host = self._client, self._host
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
        facts = facts_from_message(message, bot_threads=self._bot_threads)
        envelope = envelope_from_facts(facts, options)
        if guild is not None and envelope.thread_id == envelope.message_id:
            name = (envelope.text.splitlines() or [""])[0][:80].strip() or "hatchway"
            self._remember_thread(
                envelope.message_id,
                _PendingThread(channel_id=message.channel.id, guild_id=guild.id, name=name),
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
        if len(self._seen) > _SEEN_LIMIT:
            self._seen.popitem(last=False)
        return True

    def _remember_thread(self, thread_id: str, pending: _PendingThread) -> None:
        self._pending_threads[thread_id] = pending
        if len(self._pending_threads) > _PENDING_THREAD_LIMIT:
            self._pending_threads.popitem(last=False)

    async def reaction_added(self, payload: discord.RawReactionActionEvent) -> None:
        client, host = self._client, self._host
        if not self._config.reactions_for_approval or client is None or host is None:
            return
        if client.user is not None and payload.user_id == client.user.id:
            return
        choice = REACTION_CHOICES.get(str(payload.emoji))
        approval_id = await self._approval_for_card(str(payload.message_id)) if choice else None
        if choice is None or approval_id is None:
            return
        await self._decide(approval_id, choice, str(payload.user_id), payload.member, "reaction")

    async def approval_button(
        self, interaction: discord.Interaction, approval_id: str, choice: ApprovalChoice
    ) -> None:
        user = interaction.user
        member = user if isinstance(user, discord.Member) else None
        verdict = await self._decide(approval_id, choice, str(user.id), member, "button")
        if verdict is None or verdict is ClickVerdict.ACCEPTED:
            await interaction.response.defer()
        else:
            await interaction.response.send_message(verdict.message, ephemeral=True)

    async def _decide(
        self,
        approval_id: str,
        choice: ApprovalChoice,
        user_id: str,
        member: discord.Member | None,
        via: str,
    ) -> ClickVerdict | None:
        host = self._host
        if host is None:
            return None
        click = ApprovalClick(
            channel=self.ref,
            approval_id=approval_id,
            choice=choice,
            user_id=user_id,
            user_roles=_role_keys(member),
        )
        verdict = await host.approval_clicked(click)
        self._log.info(
            "discord_approval_click",
            approval_id=approval_id,
            choice=choice.value,
            user_id=user_id,
            via=via,
            verdict=verdict.value,
        )
        return verdict

    # outbound --------------------------------------------------------------------------

    def _connected_client(self) -> GatewayClient:
        client = self._client
        if client is None or client.user is None:
            raise ChannelError(f"{self.ref}: not connected to Discord")
        return client

    async def _destination(self, target: DeliveryTarget) -> discord.PartialMessageable:
        client = self._connected_client()
        if target.thread_id is not None:
            if target.thread_id in self._pending_threads:
                await self._open_thread(client, target.thread_id)
            self._bot_threads[target.thread_id] = None
            self._bot_threads.move_to_end(target.thread_id)
            if len(self._bot_threads) > _SEEN_LIMIT:
                self._bot_threads.popitem(last=False)
        return client.get_partial_messageable(int(target.thread_id or target.conversation_id))

    async def _open_thread(self, client: GatewayClient, thread_id: str) -> None:
        async with self._thread_lock:
            pending = self._pending_threads.pop(thread_id, None)
            if pending is None:
                return
            parent = client.get_partial_messageable(pending.channel_id, guild_id=pending.guild_id)
            try:
                await parent.get_partial_message(int(thread_id)).create_thread(
                    name=pending.name, auto_archive_duration=1440
                )
            except discord.HTTPException as exc:  # e.g. 160004: a thread already exists
                self._log.warning("discord_thread_open_failed", status=exc.status, code=exc.code)

    @staticmethod
    def _reference(target: DeliveryTarget) -> discord.MessageReference | None:
        reply_to = target.reply_to_message_id
        if reply_to is None or reply_to == target.thread_id:
            return None  # a thread opened from the request: the starter is not in the thread
        return discord.MessageReference(
            message_id=int(reply_to),
            channel_id=int(target.thread_id or target.conversation_id),
            fail_if_not_exists=False,
        )

    async def send(self, target: DeliveryTarget, text: str) -> Sequence[SentMessage]:
        destination = await self._destination(target)
        reference = self._reference(target)
        sent: list[SentMessage] = []
        for chunk in render_chunks(text):
            try:
                if reference is not None and not sent:
                    message = await destination.send(chunk, reference=reference)
                else:
                    message = await destination.send(chunk)
            except discord.HTTPException as exc:
                raise ChannelError(f"{self.ref}: sending failed: HTTP {exc.status}") from exc
            sent.append(SentMessage(target=target, message_id=str(message.id)))
        return sent

    async def edit(self, message: SentMessage, text: str) -> None:
        destination = await self._destination(message.target)
        partial = destination.get_partial_message(int(message.message_id))
        try:
            await partial.edit(content=render_single(text))
        except discord.NotFound:
            self._log.warning("discord_edit_target_gone", message_id=message.message_id)
        except discord.HTTPException as exc:
            raise ChannelError(f"{self.ref}: editing failed: HTTP {exc.status}") from exc

    async def react(self, target: DeliveryTarget, message_id: str, emoji: str) -> None:
        destination = await self._destination(target)
        try:
            await destination.get_partial_message(int(message_id)).add_reaction(emoji)
        except discord.HTTPException as exc:
            self._log.warning("discord_react_failed", status=exc.status, code=exc.code)

    async def typing(self, target: DeliveryTarget) -> None:
        destination = await self._destination(target)
        try:
            await destination.typing()
        except discord.HTTPException as exc:
            self._log.warning("discord_typing_failed", status=exc.status, code=exc.code)

    async def post_approval_card(self, target: DeliveryTarget, card: ApprovalCard) -> SentMessage:
        destination = await self._destination(target)
        view = card_view(card)
        try:
            if view is not None:
                message = await destination.send(card_content(card), view=view)
            else:
                message = await destination.send(card_content(card))
        except discord.HTTPException as exc:
            raise ChannelError(
                f"{self.ref}: posting an approval card failed: HTTP {exc.status}"
            ) from exc
        message_id = str(message.id)
        self._cards[message_id] = card.approval_id
        if self._config.reactions_for_approval and card.state is CardState.PENDING:
            await self._context.store.channel_state.set(
                str(self.ref), f"card:{message_id}", card.approval_id
            )
            for emoji in CARD_REACTIONS:
                await self.react(target, message_id, emoji)
        return SentMessage(target=target, message_id=message_id)

    async def update_approval_card(self, message: SentMessage, card: ApprovalCard) -> None:
        destination = await self._destination(message.target)
        partial = destination.get_partial_message(int(message.message_id))
        try:
            await partial.edit(content=card_content(card), view=card_view(card))
        except discord.NotFound:
            self._log.warning("discord_card_gone", message_id=message.message_id)
        except discord.HTTPException as exc:
            raise ChannelError(
                f"{self.ref}: updating an approval card failed: HTTP {exc.status}"
            ) from exc

    async def _approval_for_card(self, message_id: str) -> str | None:
        known = self._cards.get(message_id)
        if known is not None:
            return known
        return await self._context.store.channel_state.get(str(self.ref), f"card:{message_id}")


def create(ref: ChannelRef, config: ChannelCommon, context: ChannelContext) -> DiscordChannel:
    """The registry's factory for ``[channels.discord.<alias>]``."""
    if not isinstance(config, DiscordChannelConfig):
        raise ConfigError(f"channels.discord.{ref.alias}: expected a Discord channel config")
    return DiscordChannel(ref, config, context)
