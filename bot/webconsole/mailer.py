"""Sending sign-in links to people's direct messages, away from the request that asked.

The sign-in page answers every request the same way, at once (no enumeration: whether an
id may sign in is not told, not even by how long the answer took). The request only queues
a :class:`SignInAsk`; :meth:`SignInMailer.run`, a task the App owns, then decides with the
settings in force whether the identity may sign in (an approver of some channel alias, or in
``web.admins``), and only then issues a link (:mod:`bot.webconsole.links`) and sends it
through a channel of the identity's platform, to a delivery target whose conversation is the
user id (adapters treat that as the user's DM, as for approvers' card copies).

A send that fails is logged (``web_sign_in_send_failed``, with the platform's words,
scrubbed); the sign-in page says in advance what the usual cause is: a Telegram bot can only
message someone who started it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from bot.approval.card_desk import CHANNEL_FAILURES
from bot.envelope import ChannelRef, DeliveryTarget
from bot.scrub import scrub_text
from bot.webconsole import links
from bot.webconsole.host import ConsoleHost
from bot.webconsole.viewer import Identity, approved_channels, eligible

log = structlog.get_logger(__name__)

#: Asks waiting to be sent; more are dropped (and logged) rather than held in memory.
QUEUE_SIZE = 64
#: How long one message may take to send.
SEND_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class SignInAsk:
    """A browser asked for a sign-in link for ``identity``, preferably sent through the
    channel alias ``via``; the code goes with ``nonce`` (that browser's)."""

    identity: Identity
    via: str
    nonce: str
    origin: str


def message_text(link: links.IssuedLink, identity: Identity, ttl_s: float) -> str:
    minutes = f"{ttl_s / 60:g} minute{'s' if ttl_s != 60 else ''}"
    lines = [
        f"🔑 Someone asked to sign in to the hatchway console as {identity}.",
        f"Open this link within {minutes} to sign in (it works once):",
        link.url,
    ]
    if link.code is not None:
        lines.append(f"Or type this code in the browser that asked: {link.code}")
    lines.append("If it was not you, ignore this message: nothing happens without it.")
    return "\n".join(lines)


class SignInMailer:
    """Queues sign-in asks and sends the links; :meth:`run` is its task."""

    def __init__(self, host: ConsoleHost, clock: Callable[[], float]) -> None:
        self._host = host
        self._clock = clock
        self._queue: asyncio.Queue[SignInAsk] = asyncio.Queue(maxsize=QUEUE_SIZE)

    def ask(self, ask: SignInAsk) -> None:
        try:
            self._queue.put_nowait(ask)
        except asyncio.QueueFull:
            log.warning("web_sign_in_dropped", identity=str(ask.identity), why="queue full")

    async def run(self) -> None:
        while True:
            ask = await self._queue.get()
            await self._send(ask)

    def _channel(self, ask: SignInAsk) -> str | None:
        """The alias to send through: ``via`` when it is of the identity's platform and
        running, else one the identity approves, else any running one of that platform."""
        settings = self._host.settings
        running = set(self._host.channel_health())
        kind = ask.identity.kind
        candidates = [
            f"{k}.{a}" for k, a, config in settings.channels.all() if k == kind and config.enabled
        ]
        candidates = [name for name in candidates if name in running]
        if ask.via in candidates:
            return ask.via
        approved = approved_channels(settings, ask.identity)
        preferred = [name for name in candidates if name in approved]
        chosen = preferred or candidates
        return chosen[0] if chosen else None

    async def _send(self, ask: SignInAsk) -> None:
        settings = self._host.settings
        identity = ask.identity
        if not eligible(settings, identity):
            log.info("web_sign_in_not_sent", identity=str(identity), why="not eligible")
            return
        name = self._channel(ask)
        kind, _, alias = (name or "").partition(".")
        channel = self._host.channel_for(ChannelRef(kind=kind, alias=alias)) if name else None
        if channel is None:
            log.warning(
                "web_sign_in_send_failed",
                identity=str(identity),
                error=f"no running {identity.kind} channel to send it through",
            )
            return
        ttl_s = settings.web.link_ttl_s
        link = await links.issue(
            self._host.store.web,
            identity,
            origin=ask.origin,
            ttl_s=ttl_s,
            now=self._clock(),
            nonce=ask.nonce,
        )
        target = DeliveryTarget(
            channel=ChannelRef(kind=kind, alias=alias), conversation_id=identity.user_id
        )
        try:
            # a platform that does not answer must not hold up the asks queued behind
            async with asyncio.timeout(SEND_TIMEOUT_S):
                await channel.send(target, message_text(link, identity, ttl_s))
        except CHANNEL_FAILURES as exc:
            hint = (
                "a Telegram bot can only message a user who started it: open the bot and "
                "send /start"
                if kind == "telegram"
                else "the user may not accept direct messages from the bot"
            )
            log.warning(
                "web_sign_in_send_failed",
                identity=str(identity),
                channel=name,
                error=scrub_text(str(exc)),
                hint=hint,
            )
            return
        log.info("web_sign_in_sent", identity=str(identity), channel=name)
