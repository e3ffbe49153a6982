"""The sending half of the ``Channel`` protocol, as every platform adapter forwards it.

Each adapter keeps what it sends in its own ``outbound`` module (text, edits, reactions,
typing, approval cards) and is a :class:`SendsThrough`: the protocol's six sending methods
are that module's, so they are written once here instead of once per platform.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.channel import ApprovalCard, ChannelSending, SentMessage
from bot.envelope import DeliveryTarget


class SendsThrough:
    """Base of an adapter whose sending methods are its ``_outbound`` module's."""

    _outbound: ChannelSending

    async def send(
        self, target: DeliveryTarget, text: str, *, key: str = ""
    ) -> Sequence[SentMessage]:
        return await self._outbound.send(target, text, key=key)

    async def edit(self, message: SentMessage, text: str) -> None:
        await self._outbound.edit(message, text)

    async def react(self, target: DeliveryTarget, message_id: str, emoji: str) -> None:
        await self._outbound.react(target, message_id, emoji)

    async def typing(self, target: DeliveryTarget) -> None:
        await self._outbound.typing(target)

    async def post_approval_card(self, target: DeliveryTarget, card: ApprovalCard) -> SentMessage:
        return await self._outbound.post_approval_card(target, card)

    async def update_approval_card(self, message: SentMessage, card: ApprovalCard) -> None:
        await self._outbound.update_approval_card(message, card)
