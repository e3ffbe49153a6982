"""The Telegram channel, on python-telegram-bot 22.x.

Inbound: long polling (default) with a ``getUpdates`` loop of our own, or a webhook guarded by
the secret token (:mod:`channels.telegram.webhook`). The polling offset lives in
``store.channel_state`` and is advanced only after an update was handed to the host
(:mod:`channels.telegram.offset`), so a restart neither repeats nor loses updates.

Updates used: new and edited messages, callback queries (approval buttons) and, with
``reactions_for_approval``, message reactions; :mod:`channels.telegram.inbound` routes them
(a reply to an approval card is a deny-with-edit, :mod:`channels.telegram.card_surface`; an
edit goes to :meth:`~bot.channel.ChannelHost.edited` under the message's own id).
Before a card is posted in a group, the approval service asks the channel's ``members``
whether an approver is in it (:mod:`channels.telegram.members`); a DM copy to a user who never
started the bot fails with :class:`~bot.errors.ChannelError` like any refused message.

Deleted messages: the Bot API sends no update when a user deletes a message in a private
chat, a group or a channel. Its ``Update`` object (PTB's ``telegram.Update``, whose
``ALL_TYPES`` lists every kind) has one deletion only, ``deleted_business_messages``, for the
chats of a connected business account, which this bot does not ask for; and a bot cannot read
chat history to notice a message gone. So the adapter never calls
:meth:`~bot.channel.ChannelHost.deleted`: a message deleted before its turn ran is still
answered (sent with ``allow_sending_without_reply``, the answer does not need it).

Exactly-once replies: a Telegram bot cannot read history, but it can edit its own messages.
Every message is recorded before it is sent, sends to one chat are serialised
(:mod:`channels.telegram.send_record`), and a send a crash cut off is looked for by an edit
probe (:mod:`channels.telegram.delivery_check`): the channel's ``delivery`` is a
:class:`~bot.channel.DeliveryCheck` whose check runs after start-up, in the background
(:class:`~bot.channel.BackgroundDeliveryCheck`). The probe waits for the connection; the rows
a crash left are settled as soon as it is up.

Files: the channel's ``downloads`` (a user's file, by its ``file_id``, from the Bot API
server's own host: :mod:`channels.telegram.downloads`) and ``files`` (``sendPhoto`` or
``sendDocument``: :mod:`channels.telegram.files`). A bot cannot read history: ``history``
is None, and ``replied`` is the message a mention replied to, as the update carried it.

Chat commands: once connected, the channel offers :data:`bot.chat_commands.CHAT_COMMANDS` in
Telegram's command menu (``setMyCommands``, :mod:`channels.telegram.commands`); a failure
there is logged and does not stop the start.

Several replicas (a PostgreSQL store): only the replica holding the alias's ``poll`` role
polls (:meth:`~bot.channel.ChannelHost.lead`); the others stay connected for sending, on
standby, and whichever takes the role over starts from the offset in the store. Its
``getUpdates`` loop is cancelled when the role is lost, before another replica may poll. A
message the host refuses because the database is unavailable is not confirmed: the loop
pauses and asks for it again from the same offset. Nor is one whose hand-over the stop or
the lost role reached on its way in (whether it was admitted is unknown): the next poller
asks for it again, and the inbox drops it if it was. In webhook mode every replica receives.

Health: ``STARTING`` → ``CONNECTED`` once ``getMe`` accepted the token and the first
``getUpdates`` (or ``setWebhook``) succeeded, or while on standby (the detail says so);
``RECONNECTING`` with the reason on network errors or a ``409 Conflict`` (another poller on
the same token); ``FAILED`` when the token is refused, and :meth:`TelegramChannel.run`
raises :class:`~bot.errors.ChannelAuthError`.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Mapping

import httpx
import structlog
from telegram import Bot, Message, Update
from telegram.error import Conflict, InvalidToken, NetworkError, RetryAfter
from telegram.ext import Application
from telegram.request import HTTPXRequest

from bot.backoff import Backoff, cancel_requested, sleep_before_retry
from bot.channel import (
    ChannelHealth,
    ChannelHost,
    HealthState,
)
from bot.channel_registry import ChannelContext
from bot.config import ChannelCommon, Settings
from bot.envelope import ChannelRef
from bot.errors import ChannelAuthError, ChannelError, ConfigError, StorageError
from bot.scrub import register_secret
from bot.store.signals import NoSignals
from channels.common.card_index import CardIndex
from channels.common.health import HealthRecord
from channels.common.outbound import SendsThrough
from channels.telegram.addressing import BotIdentity
from channels.telegram.card_surface import TelegramCardAnswers
from channels.telegram.commands import CommandMenu
from channels.telegram.config import TelegramChannelConfig
from channels.telegram.delivery_check import TelegramDeliveryCheck
from channels.telegram.downloads import TelegramDownloads
from channels.telegram.files import TelegramFiles
from channels.telegram.inbound import UpdateRouter, allowed_updates
from channels.telegram.members import ConversationMembers
from channels.telegram.offset import PollingOffset
from channels.telegram.outbound import TelegramOutbound
from channels.telegram.poll_request import RenewingRequest
from channels.telegram.ratelimit import retry_after_seconds
from channels.telegram.send_record import SendRecord
from channels.telegram.webhook import WebhookReceiver

log = structlog.get_logger(__name__)

# Connections for Bot API calls: PTB's default for an application's own request object.
API_POOL = 256

#: The role only one replica plays per alias (:meth:`bot.channel.ChannelHost.lead`).
POLL_ROLE = "poll"


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS context of every Telegram HTTP client in this process: httpx's default (the CA
    bundle, or what ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` name when it is first made), made
    once. Loading the CA bundle costs ~20 ms of CPU; each channel has PTB's two httpx clients
    (Bot API calls, getUpdates) and its file downloads, and a context is made to be shared
    by many connections, so all of them, of every channel, use this one."""
    return httpx.create_ssl_context()


CONFLICT_DETAIL = (
    "409 Conflict from getUpdates: another process is polling this bot token (or a webhook "
    "is set). Only one poller may run per token; stop the other one."
)


class TelegramChannel(SendsThrough):
    """A Telegram bot: receives updates and delegates sending to :class:`TelegramOutbound`."""

    def __init__(
        self,
        ref: ChannelRef,
        config: TelegramChannelConfig,
        context: ChannelContext,
        *,
        token: str,
        webhook_secret: str | None = None,
    ) -> None:
        register_secret(token)
        register_secret(webhook_secret)
        # PTB builds two httpx clients (Bot API calls, getUpdates); each would load the CA
        # bundle into a TLS context of its own, so they share the process's one
        tls = {"verify": tls_context()}
        app = (
            Application.builder()
            .token(token)
            .base_url(config.api_base_url)
            .base_file_url(config.file_base_url)
            .request(HTTPXRequest(connection_pool_size=API_POOL, httpx_kwargs=tls))
            .get_updates_request(
                RenewingRequest(lambda: HTTPXRequest(connection_pool_size=1, httpx_kwargs=tls))
            )
            .updater(None)
            .build()
        )
        self.ref = ref
        self._config = config
        self._app = app
        cards = CardIndex(context.store.channel_state, str(ref))
        self._record = SendRecord(
            context.store.channel_state,
            str(ref),
            shared=not isinstance(context.store.signals, NoSignals),
            bound_after_s=config.delivery_check_margin_s,
        )
        self.delivery = TelegramDeliveryCheck(
            ref=ref, config=config, bot=app.bot, record=self._record
        )
        self._outbound = outbound = TelegramOutbound(
            ref=ref, config=config, bot=app.bot, cards=cards, record=self._record
        )
        # the optional parts of a bot.channel.Channel
        self.cards = outbound
        self.members = ConversationMembers(ref=ref, bot=app.bot)
        self.downloads = TelegramDownloads(ref=ref, config=config, bot=app.bot, tls=tls_context())
        self.files = TelegramFiles(ref=ref, config=config, bot=app.bot, outbound=self._outbound)
        self.history = None
        self.work_status = None
        self.answer_stream = None
        self.live_text = None
        self._menu = CommandMenu(ref=ref, bot=app.bot)
        answers = TelegramCardAnswers(ref=ref, config=config, bot=app.bot, outbound=self._outbound)
        self._inbound = UpdateRouter(ref=ref, config=config, cards=answers)
        self.replied = self._inbound.replied
        self.viewing = None
        self._offset = PollingOffset(context.store.channel_state, str(ref))
        self._webhook_secret = webhook_secret
        self._health = HealthRecord(ref)
        self._webhook: WebhookReceiver | None = None

    @property
    def health(self) -> ChannelHealth:
        return self._health.current

    @property
    def webhook_port(self) -> int:
        """The port the webhook receiver is bound to (0 when not serving)."""
        return self._webhook.port if self._webhook is not None else 0

    async def run(self, host: ChannelHost) -> None:
        """Connect, then receive until cancelled."""
        try:
            await self._connect()
            self.delivery.connected.set()
            await self._menu.register()
            # owned here, and cancelled when receiving ends (which raises what it raised)
            background = [
                asyncio.create_task(self._settle_left_behind()),
                asyncio.create_task(self._record.keep_alive()),
            ]
            try:
                if self._config.mode == "webhook":
                    await self._serve_webhook(host)
                else:
                    await self._poll_while_leading(host)
            finally:
                for task in background:
                    task.cancel()
                await asyncio.gather(*background, return_exceptions=True)
        finally:
            if self._webhook is not None:
                await self._webhook.aclose()
                self._webhook = None
            await self._app.shutdown()
            # A failed initialize leaves the Application uninitialised but its HTTP clients
            # open; the bot closes them (a no-op after a full shutdown).
            await self._app.bot.shutdown()
            if self._health.state is not HealthState.FAILED:
                self._health.set(HealthState.STOPPED)

    async def _connect(self) -> None:
        """``getMe`` until it answers; a refused token is fatal."""
        backoff = Backoff(self._config.reconnect_backoff())
        while True:
            try:
                await self._app.initialize()
                if self._config.mode == "polling":
                    await self._app.bot.delete_webhook(drop_pending_updates=False)
            except InvalidToken as exc:
                detail = (
                    "Telegram refused the bot token (getMe answered 401/404); check "
                    f"the {self._config.token_env} environment variable"
                )
                self._health.set(HealthState.FAILED, detail)
                raise ChannelAuthError(f"{self.ref}: {detail}") from exc.__cause__
            except RetryAfter as exc:
                await sleep_before_retry(retry_after_seconds(exc))
                continue
            except NetworkError as exc:
                await self._reconnect_pause(backoff, f"cannot reach the Bot API: {exc}")
                continue
            break
        bot = self._app.bot
        self._inbound.me = BotIdentity(id=bot.id, username=bot.username or "")
        log.info("telegram_connected", channel=str(self.ref), bot=bot.username)

    async def _settle_left_behind(self) -> None:
        """Check the sends a crash cut off (:mod:`channels.telegram.delivery_check`) and
        forget the parts of replies old enough; a database that fails leaves them to the
        chats' next sends."""
        try:
            await self._record.prune()
            await self.delivery.run()
        except StorageError as exc:
            log.warning("telegram_delivery_check_paused", channel=str(self.ref), error=str(exc))

    def _saw(self, update: Update) -> None:
        """Note the ids of the messages an update brings (:meth:`SendRecord.saw`)."""
        shown: tuple[Message | None, ...] = (
            update.message,
            update.edited_message,
            update.channel_post,
            update.edited_channel_post,
        )
        for message in shown:
            sender = None if message is None else message.from_user
            if message is not None and (sender is None or sender.id != self._app.bot.id):
                self._record.saw(message.chat_id, message.message_id)

    async def _reconnect_pause(self, backoff: Backoff, reason: str) -> None:
        self._health.set(HealthState.RECONNECTING, reason)
        delay = backoff.next_delay()
        log.warning(
            "telegram_reconnecting", channel=str(self.ref), reason=reason, delay_s=round(delay, 2)
        )
        await sleep_before_retry(delay)

    # -- polling ------------------------------------------------------------------------------

    async def _poll_while_leading(self, host: ChannelHost) -> None:
        """Poll while this process plays the alias's poller role; with several replicas,
        wait on standby while another replica does, and again after losing the role."""
        while True:
            await host.lead(self.ref, POLL_ROLE, lambda: self._poll(host), standby=self._standby)
            log.info("telegram_polling_stopped", channel=str(self.ref), reason="role lost")

    def _standby(self, why: str) -> None:
        self._health.set(HealthState.CONNECTED, f"standby, not polling: {why}")

    async def _poll(self, host: ChannelHost) -> None:
        """The ``getUpdates`` loop, from the offset in the store (another replica may have
        moved it on since this one last polled)."""
        bot: Bot = self._app.bot
        offset = await self._offset.load()
        backoff = Backoff(self._config.reconnect_backoff())
        while True:
            # The first call after (re)connecting does not wait, so health turns honest fast.
            live = self._health.state is HealthState.CONNECTED
            try:
                updates = await bot.get_updates(
                    offset=offset,
                    timeout=self._config.poll_timeout_s if live else 0,
                    allowed_updates=allowed_updates(self._config),
                )
            except InvalidToken as exc:
                detail = "Telegram refused the bot token while polling"
                self._health.set(HealthState.FAILED, detail)
                raise ChannelAuthError(f"{self.ref}: {detail}") from exc.__cause__
            except RetryAfter as exc:
                await sleep_before_retry(retry_after_seconds(exc))
                continue
            except Conflict:
                await self._reconnect_pause(backoff, CONFLICT_DETAIL)
                continue
            except NetworkError as exc:
                await self._reconnect_pause(backoff, f"getUpdates failed: {exc}")
                continue
            backoff.reset()
            self._health.set(HealthState.CONNECTED)
            try:
                for update in updates:
                    self._saw(update)
                    await self._inbound.route(update, host)
                    if cancel_requested():
                        # The stop (or the lost role) reached the update on its way in and a
                        # library turned it into an error that the host logged: whether it
                        # was admitted is unknown, so it is not confirmed; the next poller
                        # asks for it again (the inbox drops it if it was admitted).
                        raise asyncio.CancelledError
                    offset = update.update_id + 1
                    await self._offset.commit(offset)
            except StorageError as exc:
                # Not confirmed: asked for again from this offset (what was admitted before
                # the failure comes again too, and the inbox knows it).
                await self._reconnect_pause(backoff, f"the database did not take an update: {exc}")

    # -- webhook ------------------------------------------------------------------------------

    async def _serve_webhook(self, host: ChannelHost) -> None:
        if not self._webhook_secret:
            raise ChannelError(
                f"{self.ref}: webhook mode needs a secret token in the "
                f"{self._config.webhook_secret_env} environment variable"
            )
        if not self._config.webhook_url:
            raise ChannelError(f"{self.ref}: webhook mode needs webhook_url (the public URL)")

        async def on_update(data: Mapping[str, object]) -> None:
            try:
                update = Update.de_json(dict(data), self._app.bot)
            except (KeyError, TypeError, ValueError) as exc:
                # Only Telegram knows the secret; a malformed update will not improve on retry.
                log.warning("telegram_update_malformed", channel=str(self.ref), error=str(exc))
                return
            self._saw(update)
            await self._inbound.route(update, host)

        self._webhook = WebhookReceiver(
            path=self._config.webhook_path, secret=self._webhook_secret, on_update=on_update
        )
        await self._webhook.start(self._config.webhook_listen, self._config.webhook_port)
        await self._app.bot.set_webhook(
            url=self._config.webhook_url,
            secret_token=self._webhook_secret,
            allowed_updates=allowed_updates(self._config),
        )
        self._health.set(HealthState.CONNECTED)
        await asyncio.Event().wait()


def create(ref: ChannelRef, config: ChannelCommon, context: ChannelContext) -> TelegramChannel:
    """Build the adapter for ``[channels.telegram.<alias>]``; the token comes from the
    environment variable the config names."""
    if not isinstance(config, TelegramChannelConfig):
        raise ConfigError(f"channels.{ref}: expected a Telegram channel configuration")
    token = Settings.secret(config.token_env)
    if token is None:
        raise ConfigError(
            f"channels.{ref}: the bot token is missing; set the {config.token_env} "
            "environment variable (BotFather gives the token)"
        )
    secret = Settings.secret(config.webhook_secret_env) if config.mode == "webhook" else None
    return TelegramChannel(ref, config, context, token=token, webhook_secret=secret)


__all__ = ["TelegramChannel", "create"]
