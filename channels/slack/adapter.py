"""The Slack channel, on slack-bolt's async app.

Inbound: Socket Mode by default (app-level token, see :mod:`channels.slack.socket`), or the
HTTP Events API mounted on the daemon's aiohttp app at ``events_path``. The signature and
timestamp are checked on the raw bytes before bolt sees the request (a bad or stale request
gets 401, one log line): bolt parses the body before it checks the signature, and a
malformed unsigned body would crash it. Every request is acknowledged at
once; bolt listeners only drop the payload into a bounded queue that a worker owned by
:meth:`SlackChannel.run` drains (see :mod:`channels.slack.inbound`), so a slow gateway never
delays the ack past Slack's 3 seconds. Retries are no-ops:
payloads are deduplicated by ``event_id`` and by ``channel:ts`` (also the envelope's
``message_id``, so the ``message``/``app_mention`` pair of one mention yields one envelope).

Outbound: markdown is rendered to ``mrkdwn`` and split under ``max_message_chars``; answers go
in the thread of the triggering message. Approval cards are Block Kit (see
:mod:`channels.slack.cards`); clicks and, optionally, reactions go to the host, and a
refused clicker gets an ephemeral message. "✏️ Reply instead" opens a modal whose text
becomes a deny-with-a-reply (:mod:`channels.slack.reply_instead`); a cut card's "🔎 Show full and
decide" opens a modal with the whole request and its own Approve / Always / Deny
(:mod:`channels.slack.full_view`). Before a card is posted, the approval service asks
:meth:`SlackChannel.can_see` whether an approver is a member of the conversation
(:mod:`channels.slack.members`). Health is ``CONNECTED`` only
after ``auth.test`` accepted the bot token and the event stream is live; a refused token
sets ``FAILED`` and ``run`` raises :class:`~bot.errors.ChannelAuthError`.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import structlog
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.app.async_app import AsyncApp

from bot.channel import (
    ApprovalCard,
    CardState,
    ChannelHealth,
    ChannelHost,
    HealthState,
    SentMessage,
)
from bot.config import ChannelCommon, Settings, SlackChannelConfig
from bot.envelope import ChannelRef, DeliveryTarget
from bot.errors import ChannelAuthError, ChannelError, ConfigError
from bot.scrub import register_secrets
from bot.web import header_bytes
from channels.common.card_index import CardEntry, CardIndex
from channels.slack.api import SlackWebApi
from channels.slack.cards import card_blocks, card_text
from channels.slack.inbound import SlackInbound
from channels.slack.markup import render_chunks
from channels.slack.members import ConversationMembers
from channels.slack.normalise import BotIdentity
from channels.slack.socket import Backoff, SocketSession

if TYPE_CHECKING:
    from bot.channel_registry import ChannelContext
    from bot.store import Store

log = structlog.get_logger(__name__)

_EMOJI_NAMES = {
    "👀": "eyes",
    "✅": "white_check_mark",
    "❌": "x",
    "⏳": "hourglass_flowing_sand",
    "👍": "+1",
    "👎": "-1",
    "⚠️": "warning",
    "🛑": "octagonal_sign",
    "♾️": "infinity",
    "🤔": "thinking_face",
    "🔐": "closed_lock_with_key",
}
_EMOJI_NAME = re.compile(r"^:?([a-z0-9_+\-']+):?$")


def emoji_name(emoji: str) -> str | None:
    """Slack's short name for ``emoji`` (a unicode emoji or ``:name:``), if known."""
    if emoji in _EMOJI_NAMES:
        return _EMOJI_NAMES[emoji]
    match = _EMOJI_NAME.match(emoji)
    return match.group(1) if match else None


_SIGNATURE_MAX_AGE_S = 300


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


class SlackChannel:
    """A Slack workspace as a :class:`~bot.channel.Channel`."""

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
        self._cards = CardIndex(store.channel_state if store is not None else None, str(ref))
        self._inbound = SlackInbound(ref=ref, config=config, api=self._api, cards=self._cards)
        self._members = ConversationMembers(self._api)
        self._backoff = Backoff(base_s=config.reconnect_base_s, cap_s=config.reconnect_max_s)
        self._health = ChannelHealth(state=HealthState.STOPPED, detail="not started")
        self._last_edit: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._app: AsyncApp | None = None
        if config.mode == "http":
            if web_app is None:
                raise ConfigError(f"channels.slack.{ref.alias}: HTTP mode needs a web server")
            web_app.router.add_post(config.events_path, self._handle_http)

    @property
    def health(self) -> ChannelHealth:
        return self._health

    def _report(self, state: HealthState, detail: str = "") -> None:
        if state != self._health.state:
            log.info("channel_health", channel=str(self.ref), state=state.value, detail=detail)
        self._health = ChannelHealth(state=state, detail=detail)

    # -- lifecycle -------------------------------------------------------------------------

    async def run(self, host: ChannelHost) -> None:
        """Check the bot token, then receive events until cancelled."""
        self._report(HealthState.STARTING, "checking the bot token")
        try:
            async with self._api.kept_alive():
                await self._run(host)
        except* ChannelAuthError as group:
            error = group.exceptions[0]
            self._report(HealthState.FAILED, f"{error}; check the tokens in the environment")
            raise error from None
        finally:
            self._app = None
            if self._health.state is not HealthState.FAILED:
                self._report(HealthState.STOPPED, "stopped")

    async def _run(self, host: ChannelHost) -> None:
        bot = await self._authenticate()
        app = AsyncApp(
            # Without a name, AsyncApp calls inspect.stack(), which reads the source of
            # every frame: about half a second of start-up.
            name="hatchway",
            client=self._api.client,
            signing_secret=self._creds.signing_secret or "",
            request_verification_enabled=self._config.mode == "http",
            process_before_response=False,
        )
        self._inbound.register(app)
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self._inbound.run(host, bot))
            tasks.create_task(self._serve(app))

    async def _authenticate(self) -> BotIdentity:
        attempt = 0
        while True:
            try:
                return await self._api.auth_test()
            except ChannelAuthError:
                raise
            except ChannelError as exc:
                attempt += 1
                self._report(HealthState.STARTING, f"{exc}; retrying")
                await asyncio.sleep(self._backoff.delay(attempt))

    async def _serve(self, app: AsyncApp) -> None:
        """Receive events until cancelled: HTTP requests through the mounted route, or the
        Socket Mode connection."""
        if self._config.mode == "http":
            self._app = app
            self._report(HealthState.CONNECTED, f"HTTP events at {self._config.events_path}")
            await asyncio.Event().wait()
            return
        if self._creds.app_token is None:
            raise ChannelAuthError("socket mode needs an app-level token")
        session = SocketSession(
            app=app,
            api=self._api,
            app_token=self._creds.app_token,
            report=self._report,
            backoff=self._backoff,
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

    # -- who can see a conversation (bot.approval.reach.MemberLookup) ----------------------

    async def can_see(self, target: DeliveryTarget, user_id: str) -> bool | None:
        """Whether ``user_id`` is a member of the target's conversation
        (``conversations.members``, cached briefly); None when Slack cannot say."""
        return await self._members.can_see(target, user_id)

    # -- outbound ---------------------------------------------------------------------------

    async def send(self, target: DeliveryTarget, text: str) -> Sequence[SentMessage]:
        sent: list[SentMessage] = []
        for chunk in render_chunks(text, self._config.max_message_chars):
            posted = await self._api.post_message(
                channel=target.conversation_id, text=chunk, thread_ts=target.thread_id
            )
            sent.append(SentMessage(target=target, message_id=posted.ts))
        return sent

    async def edit(self, message: SentMessage, text: str) -> None:
        """Replace a message's text (its first chunk); repeating the same text is a no-op."""
        chunks = render_chunks(text, self._config.max_message_chars)
        if not chunks:
            return
        key = (message.target.conversation_id, message.message_id)
        if self._last_edit.get(key) == chunks[0]:
            return
        await self._api.update_message(
            channel=message.target.conversation_id, ts=message.message_id, text=chunks[0]
        )
        self._last_edit[key] = chunks[0]
        if len(self._last_edit) > 512:
            self._last_edit.popitem(last=False)

    async def react(self, target: DeliveryTarget, message_id: str, emoji: str) -> None:
        """React to a message; ``message_id`` is a ``ts`` or an envelope's ``channel:ts``."""
        name = emoji_name(emoji)
        if name is None:
            log.info("slack_unknown_emoji", channel=str(self.ref))
            return
        ts = message_id.rsplit(":", 1)[-1]
        await self._api.add_reaction(channel=target.conversation_id, ts=ts, name=name)

    async def typing(self, target: DeliveryTarget) -> None:
        """Slack offers bots no typing indicator outside assistant threads: nothing to do."""

    async def post_approval_card(self, target: DeliveryTarget, card: ApprovalCard) -> SentMessage:
        reactions = self._config.reactions_for_approval
        posted = await self._api.post_message(
            channel=target.conversation_id,
            text=card_text(card),
            thread_ts=target.thread_id,
            blocks=card_blocks(card, reactions=reactions),
        )
        # A copy posted to a user id lands in the app's DM with them (D…): chat.update and
        # reactions name that channel, not the user.
        where = replace(target, conversation_id=posted.channel)
        if reactions:
            entry = CardEntry(approval_id=card.approval_id, thread_id=target.thread_id)
            await self._cards.remember(where.conversation_id, posted.ts, entry)
        return SentMessage(target=where, message_id=posted.ts)

    async def update_approval_card(self, message: SentMessage, card: ApprovalCard) -> None:
        reactions = self._config.reactions_for_approval
        await self._api.update_message(
            channel=message.target.conversation_id,
            ts=message.message_id,
            text=card_text(card),
            blocks=card_blocks(card, reactions=reactions),
        )
        if reactions and card.state is not CardState.PENDING:
            await self._cards.close(
                message.target.conversation_id, message.message_id, card.approval_id
            )


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
