"""Sending what the gateway says (refusals, command answers, failures) and a turn's reply
to a message's reply target."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import structlog

from bot import telemetry
from bot.channel import Channel, DeliveryCheck, SentMessage
from bot.crashpoints import crash_point
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope

log = structlog.get_logger(__name__)

FAILURE_MESSAGE = "⚠️ Something went wrong while answering; the error was logged. Please try again."

ChannelLookup = Callable[[ChannelRef], Channel | None]
"""The running channel of a ``kind.alias`` (None: not configured or not running)."""


class Replies:
    """Sends text to an envelope's reply target. Never raises for a platform failure."""

    def __init__(self, channel_for: ChannelLookup) -> None:
        self._channel_for = channel_for

    async def deliver(
        self, target: DeliveryTarget, text: str, *, key: str
    ) -> Sequence[SentMessage] | None:
        """Send a reply the outbox ledger recorded, named ``key`` on the platform: the
        messages posted, or None when it could not be sent (logged)."""
        channel = self._channel_for(target.channel)
        if channel is None:
            log.warning("reply_dropped_no_channel", channel=str(target.channel))
            return None
        try:
            with telemetry.send(target.channel.kind, "reply") as span:
                sent = await channel.send(target, text, key=key)
                span.sent(len(sent))
        except Exception:
            # Boundary: a platform failure on send is logged; the turn's history is kept.
            log.exception("reply_send_failed")
            return None
        crash_point("after_send")
        return sent

    def check(self, target: DeliveryTarget) -> DeliveryCheck | None:
        """The target channel's :class:`~bot.channel.DeliveryCheck`, when it has one."""
        channel = self._channel_for(target.channel)
        return channel.delivery if channel is not None else None

    async def send(self, envelope: IngressEnvelope, text: str) -> None:
        """Send to the envelope's reply target: nothing at all for a silent scheduled job
        (``announce`` false), and through the reply target's channel, since a scheduled job
        may announce to another channel."""
        if not envelope.announce:
            return
        target_channel = envelope.reply_target.channel
        channel = self._channel_for(target_channel)
        if channel is None:
            log.warning("reply_dropped_no_channel", channel=str(target_channel))
            return
        try:
            with telemetry.send(target_channel.kind, "message") as span:
                span.sent(len(await channel.send(envelope.reply_target, text)))
        except Exception:
            # Boundary: a platform failure on send is logged; the turn's history is kept.
            log.exception("reply_send_failed")
