"""An answer for one person alone: in place where only they see it, else in their DM.

``/usage`` and ``/why`` answer this way. In a direct message, or where the platform shows the
answer to its sender alone (``IngressEnvelope.private_reply``: a Slack slash command, a
Discord application command), the answer goes in place; anywhere else it goes to the
sender's direct message with the bot, and the conversation is told only that it went there
(or, when the platform refused the direct message — a Telegram user who never started the
bot, closed Discord DMs — how to ask privately). Nothing of the answer is said in a group.
"""

from __future__ import annotations

import structlog

from bot.envelope import DeliveryTarget, IngressEnvelope
from bot.errors import ChannelError
from bot.gateway.sending import ChannelLookup, Replies

log = structlog.get_logger(__name__)

_SEND_FAILURES = (ChannelError, OSError, TimeoutError)


async def answer_privately(
    replies: Replies,
    channel_for: ChannelLookup,
    envelope: IngressEnvelope,
    text: str,
    *,
    sent: str,
    not_sent: str,
) -> bool:
    """Send ``text`` to ``envelope``'s sender alone (see the module doc); ``sent`` or
    ``not_sent`` is what the conversation is told otherwise. True when the text was sent."""
    if envelope.is_direct or envelope.private_reply:
        await replies.send(envelope, text)
        return True
    dm = DeliveryTarget(channel=envelope.channel, conversation_id=envelope.sender.id)
    channel = channel_for(envelope.channel)
    delivered = False
    if channel is not None:
        try:
            await channel.send(dm, text)
            delivered = True
        except _SEND_FAILURES as exc:
            log.warning("private_answer_dm_failed", user_id=envelope.sender.id, error=str(exc))
    await replies.send(envelope, sent if delivered else not_sent)
    return delivered
