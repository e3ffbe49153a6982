"""The :class:`~bot.channel.ChannelHost` every adapter runs with.

Messages go to the gateway (``deliver``); answers on approval cards go straight to the
approval service: the host's ``card_action`` *is* the service's
(:meth:`bot.approval.card_flow.CardFlow.answer`), so a click reaches it in one hop and the
gateway never handles approvals. Roles only one process may play (``lead``) and
whether this process takes work at all are its :class:`Replica`'s: :data:`SOLE_PROCESS` with
a SQLite store, the lease keeper (:mod:`bot.replicas`) with several replicas.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from bot.cards import (
    CardAction,
    CardReply,
    CardSurface,
)
from bot.envelope import ChannelRef, IngressEnvelope
from bot.errors import StorageUnavailable

Work = Callable[[], Awaitable[None]]
Standby = Callable[[str], None]


class MessageSink(Protocol):
    """Where inbound messages go (:class:`bot.gateway.Gateway`)."""

    async def deliver(self, envelope: IngressEnvelope) -> None: ...

    async def edited(self, envelope: IngressEnvelope) -> None: ...

    async def deleted(self, channel: ChannelRef, message_id: str) -> None: ...


class ApprovalAnswers(Protocol):
    """Where approval answers go (:class:`bot.approval.service.ApprovalService`); the
    contract is :meth:`bot.cards.CardAnswers.card_action`'s."""

    async def card_action(self, action: CardAction, surface: CardSurface) -> CardReply: ...


class Replica(Protocol):
    """This process among the processes sharing its database
    (:class:`bot.replicas.keeper.LeaseKeeper`)."""

    async def lead(self, name: str, work: Work, *, standby: Standby | None = None) -> None:
        """Run ``work()`` while this process holds the role ``name`` (the contract is
        :meth:`bot.channel.ChannelHost.lead`'s)."""
        ...

    def refusal(self) -> str | None:
        """Why this process takes no new messages now (it lost its database), or None."""
        ...


class SoleProcess:
    """The :class:`Replica` of a process alone on its database (SQLite): every role is its
    own at once, for ever, with no task and nothing written; it always takes work."""

    async def lead(self, name: str, work: Work, *, standby: Standby | None = None) -> None:
        await work()

    def refusal(self) -> str | None:
        return None


SOLE_PROCESS = SoleProcess()

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
    gain in speed; a message waiting here holds a few hundred bytes.

    A message that arrives while the ``replica`` takes no work (it lost its database) is
    refused with :class:`~bot.errors.StorageUnavailable` before it is admitted: the
    adapter then leaves the platform's event unconfirmed, to come again."""

    def __init__(
        self,
        *,
        messages: MessageSink,
        approvals: ApprovalAnswers,
        admitting: int = ADMITTING,
        replica: Replica = SOLE_PROCESS,
    ) -> None:
        self._deliver = messages.deliver
        self._edited = messages.edited
        self._admitting = asyncio.Semaphore(admitting)
        self._replica = replica
        self.deleted = messages.deleted
        self.card_action = approvals.card_action

    async def deliver(self, envelope: IngressEnvelope) -> None:
        """:meth:`MessageSink.deliver` once one of the ``admitting`` places is free."""
        self._check_taking_work()
        async with self._admitting:
            await self._deliver(envelope)

    async def edited(self, envelope: IngressEnvelope) -> None:
        self._check_taking_work()
        await self._edited(envelope)

    async def lead(
        self, channel: ChannelRef, role: str, work: Work, *, standby: Standby | None = None
    ) -> None:
        """The role ``role`` of ``channel`` is the replica's role ``<kind>.<alias>.<role>``."""
        await self._replica.lead(f"{channel}.{role}", work, standby=standby)

    def _check_taking_work(self) -> None:
        refusal = self._replica.refusal()
        if refusal is not None:
            raise StorageUnavailable(refusal)
