"""The discord.py client hatchway runs: intents, configurable endpoints, event routing.

:class:`GatewayClient` is a ``discord.Client`` that hands the few gateway events the adapter
needs to the part that handles each (the adapter, its inbound part, its card surface) and can
talk to a configurable REST base and gateway URL (for an egress proxy, or a loopback fake in
tests). Its ``tree`` holds the chat commands (:mod:`channels.discord.commands`), whose
invocations go to the inbound part too.
:class:`Connection` is where the adapter's parts find the running client and host.

Why endpoints are rewritten per client instead of setting ``discord.http.Route.BASE`` and
``DiscordWebSocket.DEFAULT_GATEWAY``: those are class attributes shared by every client in the
process, so two channels (or a test and the next one) would leak endpoints into each other.
Instead this client's ``HTTPClient`` rewrites each route URL and gateway URL it is about to use,
and :func:`endpoint_scope` installs a webhook adapter doing the same for interaction callbacks
in the context of the task that runs the gateway (discord.py answers interactions through its
webhook adapter, which it takes from a context variable).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import aiohttp
import discord
import structlog
import yarl
from discord.http import HTTPClient, Route
from discord.webhook.async_ import AsyncWebhookAdapter, async_context

from bot.channel import ChannelHost
from channels.discord.commands import command_tree

log = structlog.get_logger(__name__)

#: Every message the bot sends pings nobody: the client's default, and passed explicitly where
#: a message shows values from a request (cards, full views).
NO_MENTIONS = discord.AllowedMentions.none()


class GatewayListener(Protocol):
    """What the adapter handles of the gateway session itself; called from discord.py's
    event tasks."""

    async def gateway_connected(self) -> None: ...

    async def gateway_ready(self) -> None: ...

    async def gateway_resumed(self) -> None: ...

    async def gateway_disconnected(self) -> None: ...


class MessageEvents(Protocol):
    """What the adapter's inbound part handles (:mod:`channels.discord.inbound`)."""

    async def message_created(self, message: discord.Message) -> None: ...

    async def message_edited(self, payload: discord.RawMessageUpdateEvent) -> None: ...

    async def message_deleted(self, payload: discord.RawMessageDeleteEvent) -> None: ...

    async def messages_deleted(self, payload: discord.RawBulkMessageDeleteEvent) -> None: ...

    async def command_invoked(
        self, interaction: discord.Interaction[discord.Client], name: str
    ) -> None: ...


class CardEvents(Protocol):
    """What the adapter's card surface handles (:mod:`channels.discord.card_surface`)."""

    async def interaction(self, interaction: discord.Interaction) -> None: ...

    async def reaction(self, payload: discord.RawReactionActionEvent) -> None: ...


def gateway_intents(*, reactions: bool) -> discord.Intents:
    """The intents hatchway asks for. ``message_content`` is privileged: it must be enabled
    for the application in the Developer Portal, or the gateway closes with code 4014."""
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.dm_messages = True
    intents.message_content = True
    if reactions:
        intents.guild_reactions = True
        intents.dm_reactions = True
    return intents


def rebase_api_url(url: str, api_base: str | None) -> str:
    """``url`` built on discord.py's REST base, moved onto ``api_base`` (unchanged if None)."""
    if api_base is None or not url.startswith(Route.BASE):
        return url
    return api_base.rstrip("/") + url[len(Route.BASE) :]


def rebase_gateway_url(url: str, gateway_url: str | None) -> str:
    """Any gateway URL (initial or resume) moved onto ``gateway_url``, keeping its query."""
    if gateway_url is None:
        return url
    return str(yarl.URL(gateway_url).with_query(yarl.URL(url).query))


class _RebasingHTTPClient(HTTPClient):
    """discord.py's HTTP client with this channel's endpoints (installed per instance)."""

    hatchway_api_base: str | None = None
    hatchway_gateway_url: str | None = None
    #: the gateway socket opened last: discord.py keeps it as ``client.ws`` only once its
    #: handshake (HELLO, IDENTIFY or RESUME) is through, so a session stopped before then
    #: would leave it open (:meth:`GatewayClient.close_gateway` closes it)
    hatchway_socket: aiohttp.ClientWebSocketResponse | None = None

    async def request(self, route: Route, **kwargs: Any) -> Any:
        route.url = rebase_api_url(route.url, self.hatchway_api_base)
        return await super().request(route, **kwargs)

    async def ws_connect(self, url: str, *, compress: int = 0) -> aiohttp.ClientWebSocketResponse:
        rebased = rebase_gateway_url(url, self.hatchway_gateway_url)
        socket = await super().ws_connect(rebased, compress=compress)
        self.hatchway_socket = socket
        return socket


class _RebasingWebhookAdapter(AsyncWebhookAdapter):
    """The webhook adapter (interaction callbacks, follow-ups) with this channel's REST base."""

    def __init__(self, api_base: str) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # discord.py leaves it unannotated
        self._api_base = api_base

    async def request(self, route: Route, *args: Any, **kwargs: Any) -> Any:
        route.url = rebase_api_url(route.url, self._api_base)
        return await super().request(route, *args, **kwargs)


@contextmanager
def endpoint_scope(api_base: str | None) -> Iterator[None]:
    """Within the calling task (and tasks it starts), answer interactions via ``api_base``."""
    if api_base is None:
        yield
        return
    token: contextvars.Token[AsyncWebhookAdapter] = async_context.set(
        _RebasingWebhookAdapter(api_base)
    )
    try:
        yield
    finally:
        async_context.reset(token)


#: The interactions answers on approval cards arrive as (the command tree takes the others).
_CARD_INTERACTIONS = (discord.InteractionType.component, discord.InteractionType.modal_submit)

#: How long a send or a reply check made as the adapter starts waits for the login.
LOGIN_WAIT_S = 15.0


class Connection:
    """The running client and the host, while the adapter's ``run`` lives (None otherwise).
    Only ``run`` sets them; the adapter's inbound and outbound parts read them.
    ``login_settled`` is set once the client has logged in (REST works from then on, before
    the gateway), or the run has ended; a run clears it when it starts."""

    __slots__ = ("client", "host", "login_settled")

    def __init__(self) -> None:
        self.client: GatewayClient | None = None
        self.host: ChannelHost | None = None
        self.login_settled = asyncio.Event()

    def connected(self) -> GatewayClient | None:
        """The client once it has logged in and knows its own user, else None."""
        client = self.client
        return client if client is not None and client.user is not None else None

    async def logged_in(self, wait_s: float) -> GatewayClient | None:
        """The client, waiting up to ``wait_s`` for its login (what start-up recovery sends
        or asks goes out as the adapter starts); None when it did not log in by then or
        its run ended without it."""
        if self.connected() is None:
            try:
                async with asyncio.timeout(wait_s):
                    await self.login_settled.wait()
            except TimeoutError:
                pass
        return self.connected()


class GatewayClient(discord.Client):
    """A ``discord.Client`` whose events go straight to the part that handles them: the
    session's own to the adapter (:class:`GatewayListener`), messages and application
    commands to its inbound part (:class:`MessageEvents`), answers on cards to its card
    surface (:class:`CardEvents`)."""

    def __init__(
        self,
        listener: GatewayListener,
        messages: MessageEvents,
        cards: CardEvents,
        *,
        intents: discord.Intents,
        api_base_url: str | None,
        gateway_url: str | None,
        guild_ready_timeout: float,
    ) -> None:
        super().__init__(
            intents=intents,
            guild_ready_timeout=guild_ready_timeout,
            chunk_guilds_at_startup=False,
            allowed_mentions=NO_MENTIONS,
        )
        self.cards = cards
        self.tree = command_tree(self, messages.command_invoked)
        # discord.py dispatches the gateway event "x" to the client's attribute "on_x" (what
        # Client.event sets), so each event is bound to its handler here, not restated.
        # on_connect comes with the gateway's READY (the session is established; messages are
        # dispatched from then on); on_ready waits guild_ready_timeout longer.
        self.on_connect = listener.gateway_connected
        self.on_ready = listener.gateway_ready
        self.on_resumed = listener.gateway_resumed
        self.on_disconnect = listener.gateway_disconnected
        self.on_message = messages.message_created
        # Raw events: dispatched whether or not the message is in discord.py's cache.
        self.on_raw_message_edit = messages.message_edited
        self.on_raw_message_delete = messages.message_deleted
        self.on_raw_bulk_message_delete = messages.messages_deleted
        self.on_raw_reaction_add = cards.reaction
        http = self.http
        if type(http) is HTTPClient:
            # Same object, narrower class: only this client's requests are rebased.
            http.__class__ = _RebasingHTTPClient
        if isinstance(http, _RebasingHTTPClient):
            http.hatchway_api_base = api_base_url
            http.hatchway_gateway_url = gateway_url

    async def close(self) -> None:
        # discord.py's close() leaves its guild wait (``_delay_ready``) running, which would
        # then dispatch "ready" into the closed client. Private attribute: recheck on upgrade.
        ready_wait = self._connection._ready_task
        if ready_wait is not None:
            ready_wait.cancel()
        await super().close()

    async def close_gateway(self) -> None:
        """Close the gateway session alone (another replica takes the gateway over), with
        code 1000 so that Discord ends it rather than keeping it for a resume; REST goes on.
        A later :meth:`connect` identifies anew. The socket opened last is closed too when
        discord.py has not made it ``self.ws`` yet (the session was stopped during its
        handshake): else it would stay open beside the next holder's."""
        ready_wait = self._connection._ready_task  # as in close(): no "ready" afterwards
        if ready_wait is not None:
            ready_wait.cancel()
        ws = self.ws
        if ws is not None and not ws.socket.closed:
            await ws.close(code=1000)
        http = self.http
        socket = http.hatchway_socket if isinstance(http, _RebasingHTTPClient) else None
        if socket is not None and not socket.closed:
            await socket.close(code=1000)

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        # Button presses and modal submissions are read from their custom_id alone
        # (channels.discord.card_surface): no view or modal is kept in memory.
        if interaction.type in _CARD_INTERACTIONS:
            await self.cards.interaction(interaction)

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        log.exception("discord_event_failed", event=event_method)
