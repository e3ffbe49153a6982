"""The :class:`~bot.channel.ChannelHost` every adapter runs with.

Messages go to the gateway (``deliver``); approval answers go straight to the approval
service: the host's approval methods *are* the service's, so a click reaches it in one hop
and the gateway never handles approvals.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from bot.channel import ApprovalCard, ApprovalClick, ClickVerdict
from bot.envelope import ChannelRef, IngressEnvelope


class MessageSink(Protocol):
    """Where inbound messages go (:class:`bot.gateway.Gateway`)."""

    async def deliver(self, envelope: IngressEnvelope) -> None: ...

    async def edited(self, envelope: IngressEnvelope) -> None: ...

    async def deleted(self, channel: ChannelRef, message_id: str) -> None: ...


class ApprovalAnswers(Protocol):
    """Where approval answers go (:class:`bot.approval.service.ApprovalService`); the
    contracts are :class:`~bot.channel.ChannelHost`'s ``approval_*`` methods."""

    async def click(self, click: ApprovalClick) -> ClickVerdict: ...

    async def refusal(
        self,
        *,
        channel: ChannelRef,
        approval_id: str,
        user_id: str,
        user_roles: tuple[str, ...] = (),
    ) -> ClickVerdict | None: ...

    async def card(self, *, channel: ChannelRef, approval_id: str) -> ApprovalCard | None: ...


#: Messages in admission at once (:meth:`AdapterHost.deliver`).
ADMITTING = 64


class AdapterHost:
    """Implements :class:`~bot.channel.ChannelHost` by binding each of its methods to the
    one that does the work; ``deliver`` also waits its turn among the messages being
    admitted.

    At most ``admitting`` messages are in admission at once; the others wait at the door,
    in order. Admission ends in an inbox write, and the writes are taken one at a time by
    the store's one connection, so a burst of N messages (a platform catching up, many users
    at once) would otherwise hold N admission chains suspended at once, ~7 KB each, for no
    gain in speed; a message waiting here holds a few hundred bytes."""

    def __init__(
        self, *, messages: MessageSink, approvals: ApprovalAnswers, admitting: int = ADMITTING
    ) -> None:
        self._deliver = messages.deliver
        self._admitting = asyncio.Semaphore(admitting)
        self.edited = messages.edited
        self.deleted = messages.deleted
        self.approval_clicked = approvals.click
        self.approval_refusal = approvals.refusal
        self.approval_card = approvals.card

    async def deliver(self, envelope: IngressEnvelope) -> None:
        """:meth:`MessageSink.deliver` once one of the ``admitting`` places is free."""
        async with self._admitting:
            await self._deliver(envelope)
