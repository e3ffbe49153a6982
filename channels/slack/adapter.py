"""The Slack channel, on slack-bolt's async app.

Inbound: Socket Mode by default (app-level token, see :mod:`channels.slack.socket`), or the
HTTP Events API mounted on the daemon's aiohttp app at ``events_path``. The signature and
timestamp are checked on the raw bytes before bolt sees the request (a bad or stale request
gets 401, one log line): bolt parses the body before it checks the signature, and a
malformed unsigned body would crash it. Bolt runs each listener before it acknowledges
(``process_before_response``): a message event is written to the store, then acknowledged,
then handed to the host by a worker owned by :meth:`SlackChannel.run`, so a crash after the
ack loses nothing and a slow gateway never delays the ack past Slack's 3 seconds; other
payloads are acknowledged first thing (see :mod:`channels.slack.inbound`). Retries are no-ops:
payloads are deduplicated by ``event_id`` and by ``channel:ts`` (also the envelope's
``message_id``, so the ``message``/``app_mention`` pair of one mention yields one envelope).
A stop closes the socket (or the route) first, then hands the host what was received and
not yet handed over (:mod:`~channels.slack.stopping`), so that no event waits for a later
start while newer messages of its conversation are answered by other replicas.

This module owns the lifecycle, health and the HTTP route, and composes the parts:
:mod:`~channels.slack.inbound` (listeners and the worker: messages in, stored first by
:mod:`~channels.slack.journal`, handed over by :mod:`~channels.slack.handover`; edits and
deletions read by :mod:`~channels.slack.message_events`),
:mod:`~channels.slack.card_surface` (presses, reactions and modal answers on approval cards),
:mod:`~channels.slack.outbound` (everything posted; Block Kit cards from
:mod:`~channels.slack.cards`), :mod:`~channels.slack.files` (files users share, downloaded
with the bot token; files the bot sends), :mod:`~channels.slack.members` (whether an
approver is a member of a conversation, asked before a card is posted) and
:mod:`~channels.slack.delivery_check` (whether a reply cut off by a crash reached Slack, by
its metadata), :mod:`~channels.slack.thread_history` (a thread's earlier messages, read on
a mention for context), :mod:`~channels.slack.assistant` (Slack's assistant threads: their
events, status line, suggested prompts and title) and :mod:`~channels.slack.streaming`
(answers streamed into them), sharing one
:class:`~channels.slack.api.SlackWebApi` and one
:class:`~channels.common.card_index.CardIndex`.

Health is ``CONNECTED`` only after ``auth.test`` accepted the bot token and the event stream
is live; a refused token sets ``FAILED`` and ``run`` raises
:class:`~bot.errors.ChannelAuthError`. Bolt is handed that one answer
(:mod:`~channels.slack.authorize`), so no event asks ``auth.test`` again.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.app.async_app import AsyncApp

from bot.backoff import Backoff, sleep_before_retry
from bot.channel import (
    ChannelHealth,
    ChannelHost,
    HealthState,
)
from bot.config import ChannelCommon, Settings
from bot.envelope import ChannelRef
from bot.errors import ChannelAuthError, ChannelError, ConfigError
from bot.ops.web import header_bytes
from bot.scrub import register_secrets
from channels.common.card_index import CardIndex
from channels.common.health import HealthRecord
from channels.common.outbound import SendsThrough
from channels.slack.api import DisplayNames, SlackWebApi
from channels.slack.assistant import SlackAssistant
from channels.slack.authorize import KnownBot, quiet_token_notice
from channels.slack.command_replies import CommandReplies
from channels.slack.commands import app_id_of
from channels.slack.config import SlackChannelConfig
from channels.slack.delivery_check import SlackDeliveryCheck
from channels.slack.files import SlackFiles
from channels.slack.inbound import SlackInbound
from channels.slack.journal import EventJournal
from channels.slack.members import ConversationMembers
from channels.slack.normalise import BotIdentity
from channels.slack.outbound import SlackOutbound
from channels.slack.socket import SocketSession
from channels.slack.stopping import finish_while_stopping
from channels.slack.streaming import SlackAnswerStreams
from channels.slack.thread_history import SlackThreadHistory

if TYPE_CHECKING:
    from bot.channel_registry import ChannelContext
    from bot.store import Store

_SIGNATURE_MAX_AGE_S = 300
#: How long a stop gives the events received and not yet handed over to reach the inbox
#: (one admission each; the stop's own limit for every part is 10 s).
HAND_OVER_LIMIT_S = 5.0


def _check_signature(request: web.Request, body: bytes, signing_secret: str) -> None:
    """Raise 401 unless Slack signed ``body`` within the last five minutes (Slack's
    ``v0`` scheme), comparing the header's raw bytes so that any value is merely wrong."""
    stamp = header_bytes(request, "X-Slack-Request-Timestamp")
    if not (stamp.isdigit() and len(stamp) <= 12) or (
        abs(time.time() - int(stamp)) > _SIGNATURE_MAX_AGE_S
    ):
        raise web.HTTPUnauthorized(text="missing or stale request timestamp")
    digest = hmac.new(signing_secret.encode(), b"v0:" + stamp + b":" + body, hashlib.sha256)
    expected = b"v0=" + digest.hexdigest().encode()
    if not signing_secret or not hmac.compare_digest(
        expected, header_bytes(request, "X-Slack-Signature")
    ):
        raise web.HTTPUnauthorized(text="invalid request signature")


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackCredentials:
    """The secrets a Slack channel runs with (read from the environment by :func:`create`)."""

    bot_token: str
    app_token: str | None = None
    signing_secret: str | None = None


class SlackChannel(SendsThrough):
    """A Slack workspace as a :class:`~bot.channel.Channel`, with every optional part but
    ``replied`` (Slack lets a bot read threads back)."""

    _outbound: SlackOutbound

    def __init__(
        self,
        *,
        ref: ChannelRef,
        config: SlackChannelConfig,
        credentials: SlackCredentials,
        store: Store | None = None,
        web_app: web.Application | None = None,
    ) -> None:
        self.ref = ref
        self._config = config
        self._creds = credentials
        self._api = SlackWebApi(
            token=credentials.bot_token,
            base_url=config.api_base_url,
            rate_limit_retries=config.rate_limit_retries,
        )
        state = store.channel_state if store is not None else None
        cards = CardIndex(state, str(ref))
        replies = CommandReplies(ref=ref, api=self._api, api_base_url=config.api_base_url)
        self._assistant = SlackAssistant(ref=ref, config=config, api=self._api, state=state)
        #: the status line of an assistant thread (bot.channel.WorkStatus)
        self.work_status = self._assistant
        #: answers streamed into an assistant thread (bot.channel.AnswerStream)
        self.answer_stream = SlackAnswerStreams(
            ref=ref,
            api=self._api,
            assistant=self._assistant,
            state=state,
            enabled=config.assistant.stream,
        )
        names = DisplayNames(self._api, ttl_s=config.user_cache_ttl_s)
        self._inbound = SlackInbound(
            ref=ref,
            config=config,
            api=self._api,
            names=names,
            cards=cards,
            command_replies=replies,
            journal=EventJournal(state, str(ref)),
            app_id=app_id_of(credentials.app_token),
            assistant=self._assistant,
        )
        files = SlackFiles(
            ref=ref,
            api=self._api,
            token=credentials.bot_token,
            api_base_url=config.api_base_url,
            download_max_bytes=config.download_max_bytes,
            upload_max_bytes=config.upload_max_bytes,
            command_replies=replies,
        )
        self._outbound = SlackOutbound(
            ref=ref,
            config=config,
            api=self._api,
            cards=cards,
            command_replies=replies,
            files=files,
            streams=self.answer_stream,
        )
        # the optional parts of a bot.channel.Channel
        self.cards = self._outbound
        self.files = self._outbound
        self.downloads = files
        self.delivery = SlackDeliveryCheck(ref=ref, api=self._api)
        self.members = ConversationMembers(self._api)
        self.history = SlackThreadHistory(api=self._api, names=names)
        self.replied = None
        #: the channel a person viewed beside an assistant thread (bot.channel.PlaceViewed)
        self.viewing = self._assistant
        self.live_text = None
        self._health = HealthRecord(ref, HealthState.STOPPED, "not started")
        self._app: AsyncApp | None = None
        if config.mode == "http":
            if web_app is None:
                raise ConfigError(f"channels.slack.{ref.alias}: HTTP mode needs a web server")
            web_app.router.add_post(config.events_path, self._handle_http)

    @property
    def health(self) -> ChannelHealth:
        return self._health.current

    # -- lifecycle -------------------------------------------------------------------------

    async def run(self, host: ChannelHost) -> None:
        """Check the bot token, then receive events until cancelled."""
        self._health.set(HealthState.STARTING, "checking the bot token")
        try:
            async with self._api.kept_alive():
                await self._run(host)
        except* ChannelAuthError as group:
            error = group.exceptions[0]
            self._health.set(HealthState.FAILED, f"{error}; check the tokens in the environment")
            raise error from None
        finally:
            self._app = None
            if self._health.state is not HealthState.FAILED:
                self._health.set(HealthState.STOPPED, "stopped")

    async def _run(self, host: ChannelHost) -> None:
        bot = await self._authenticate()
        quiet_token_notice(logging.getLogger(f"slack_bolt.{AsyncApp.__name__}"))
        app = AsyncApp(
            # Without a name, AsyncApp calls inspect.stack(), which reads the source of
            # every frame: about half a second of start-up.
            name="hatchway",
            client=self._api.client,
            # who the bot is, from the auth.test above: no event calls it again
            authorize=KnownBot(bot, self._creds.bot_token),
            signing_secret=self._creds.signing_secret or "",
            request_verification_enabled=self._config.mode == "http",
            # the listener runs before the ack: a message event is stored first
            process_before_response=True,
            # never bolt's default, which writes into the metadata of the bot's replies
            assistant_thread_context_store=self._assistant.contexts,
        )
        self._inbound.register(app)
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._inbound.run(host, bot, tasks))
                tasks.create_task(self._serve(app))
        finally:
            # nothing more comes in (the socket closed, the route answers 503): what was
            # received goes to the inbox now, not at some later start
            self._app = None
            await finish_while_stopping(
                self._inbound.hand_over_rest(host, bot),
                limit_s=HAND_OVER_LIMIT_S,
                what="slack hand-over of received events",
            )

    async def _authenticate(self) -> BotIdentity:
        backoff = Backoff(self._config.reconnect_backoff())
        while True:
            try:
                bot = await self._api.auth_test()
            except ChannelAuthError:
                raise
            except ChannelError as exc:
                self._health.set(HealthState.STARTING, f"{exc}; retrying")
                await sleep_before_retry(backoff.next_delay())
                continue
            self.delivery.know(bot)
            self.history.know(bot)
            await self._assistant.start()
            return bot

    async def _serve(self, app: AsyncApp) -> None:
        """Receive events until cancelled: HTTP requests through the mounted route, or the
        Socket Mode connection."""
        if self._config.mode == "http":
            self._app = app
            self._health.set(HealthState.CONNECTED, f"HTTP events at {self._config.events_path}")
            await asyncio.Event().wait()
            return
        if self._creds.app_token is None:
            raise ChannelAuthError("socket mode needs an app-level token")
        session = SocketSession(
            app=app,
            api=self._api,
            app_token=self._creds.app_token,
            set_health=self._health.set,
            backoff=self._config.reconnect_backoff(),
            ping_interval_s=self._config.ping_interval_s,
        )
        await session.run()

    async def _handle_http(self, request: web.Request) -> web.Response:
        app = self._app
        if app is None:
            return web.Response(status=503, text="slack channel not running")
        _check_signature(request, await request.read(), self._creds.signing_secret or "")
        response = await app.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(response)


def create(ref: ChannelRef, config: ChannelCommon, context: ChannelContext) -> SlackChannel:
    """Build the channel from its config; secrets come from the environment variables the
    config names. Missing secrets fail here, naming the variable."""
    where = f"channels.slack.{ref.alias}"
    if not isinstance(config, SlackChannelConfig):
        raise ConfigError(f"{where}: expected a Slack channel configuration")

    def need(env_name: str, what: str) -> str:
        value = Settings.secret(env_name)
        if value is None:
            raise ConfigError(f"{where}: {what} is missing; set {env_name} in the environment")
        return value

    bot_token = need(config.bot_token_env, "the bot token (xoxb-...)")
    app_token = signing_secret = None
    if config.mode == "socket":
        app_token = need(config.app_token_env, "the app-level token (xapp-...) for socket mode")
    else:
        signing_secret = need(config.signing_secret_env, "the signing secret for HTTP mode")
        if context.web_app is None:
            raise ConfigError(f'{where}: mode = "http" needs [server] enabled = true')
    register_secrets([bot_token, app_token, signing_secret])
    credentials = SlackCredentials(
        bot_token=bot_token, app_token=app_token, signing_secret=signing_secret
    )
    return SlackChannel(
        ref=ref,
        config=config,
        credentials=credentials,
        store=context.store,
        web_app=context.web_app,
    )
