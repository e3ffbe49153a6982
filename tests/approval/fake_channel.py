"""A fake chat channel with an approval backchannel: a real ``Channel`` that records what it
was asked to post and lets a test click as any user."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from bot.channel import (
    ApprovalCard,
    ApprovalChoice,
    ApprovalClick,
    ChannelHealth,
    ChannelHost,
    HealthState,
    SentMessage,
)
from bot.envelope import ChannelRef, DeliveryTarget
from bot.errors import ChannelError


@dataclass(frozen=True, slots=True, kw_only=True)
class PostedCard:
    target: DeliveryTarget
    message_id: str
    card: ApprovalCard


class FakeBackchannel:
    """Records cards, card edits and sent text; ``cards_posted`` fires on every new card."""

    def __init__(self, ref: ChannelRef) -> None:
        self.ref = ref
        self.posted: list[PostedCard] = []
        self.edits: list[tuple[str, ApprovalCard]] = []
        self.sent: list[tuple[DeliveryTarget, str]] = []
        self.card_posted = asyncio.Event()
        self._ids = itertools.count(1)
        #: users whose DM refuses cards (never started the bot, closed their DMs)
        self.closed_dms: set[str] = set()

    @property
    def health(self) -> ChannelHealth:
        return ChannelHealth(state=HealthState.CONNECTED)

    async def run(self, host: ChannelHost) -> None:
        await asyncio.Event().wait()

    async def send(self, target: DeliveryTarget, text: str) -> Sequence[SentMessage]:
        self.sent.append((target, text))
        return [SentMessage(target=target, message_id=f"m{next(self._ids)}")]

    async def edit(self, message: SentMessage, text: str) -> None:
        return None

    async def react(self, target: DeliveryTarget, message_id: str, emoji: str) -> None:
        return None

    async def typing(self, target: DeliveryTarget) -> None:
        return None

    async def post_approval_card(self, target: DeliveryTarget, card: ApprovalCard) -> SentMessage:
        if target.conversation_id in self.closed_dms:
            raise ChannelError(f"cannot message {target.conversation_id}")
        message_id = f"card{next(self._ids)}"
        self.posted.append(PostedCard(target=target, message_id=message_id, card=card))
        self.card_posted.set()
        return SentMessage(target=target, message_id=message_id)

    async def update_approval_card(self, message: SentMessage, card: ApprovalCard) -> None:
        self.edits.append((message.message_id, card))

    async def next_card(self) -> PostedCard:
        """Wait for a card posted after the last call."""
        await self.card_posted.wait()
        self.card_posted.clear()
        return self.posted[-1]

    def click(
        self,
        card: PostedCard,
        user_id: str,
        choice: ApprovalChoice = ApprovalChoice.APPROVE,
        *,
        roles: tuple[str, ...] = (),
        replacement_text: str | None = None,
        on: str | None = None,
        full_view: bool = False,
    ) -> ApprovalClick:
        """A click on ``card``, as if on the copy posted as message ``on`` (default: the
        posted message itself)."""
        message = SentMessage(target=card.target, message_id=on or card.message_id)
        return ApprovalClick(
            channel=self.ref,
            approval_id=card.card.approval_id,
            choice=choice,
            user_id=user_id,
            user_roles=roles,
            replacement_text=replacement_text,
            card=message,
            full_view=full_view,
        )


class FakeTerminal(FakeBackchannel):
    """A console-like channel that answers prompts from a script (``None`` = EOF)."""

    def __init__(self, ref: ChannelRef, answers: Sequence[str | None]) -> None:
        super().__init__(ref)
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def ask_line(self, prompt: str) -> str | None:
        self.prompts.append(prompt)
        if not self.answers:
            await asyncio.Event().wait()  # nobody types: only a timeout ends this
        return self.answers.pop(0)


class MemberBackchannel(FakeBackchannel):
    """A fake backchannel that knows who is in which conversation
    (:class:`bot.approval.reach.MemberLookup`); ``None`` answers for unknown conversations."""

    def __init__(self, ref: ChannelRef, members: dict[str, set[str]]) -> None:
        super().__init__(ref)
        self.members = members
        self.asked: list[tuple[str, str]] = []

    async def can_see(self, target: DeliveryTarget, user_id: str) -> bool | None:
        self.asked.append((target.conversation_id, user_id))
        present = self.members.get(target.conversation_id)
        return None if present is None else user_id in present
