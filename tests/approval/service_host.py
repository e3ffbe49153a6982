"""A channel host whose approval clicks and questions go to the real approval service, as the
daemon's host does (:class:`bot.channel_host.AdapterHost`); adapter tests use it to check
what a click does to the platform's card."""

from __future__ import annotations

from bot.approval.service import ApprovalService
from bot.cards import Actor, CardAction, CardReply, CardReplyKind, CardSurface, CardVerb
from bot.channel import ApprovalCard, ClickVerdict
from bot.envelope import ChannelRef
from tests.fakes.channel import FakeSurface
from tests.fakes.recording_host import ApprovalClick, RecordingHost, as_click


class ServiceHost(RecordingHost):
    """Records envelopes and clicks like :class:`RecordingHost`; the service decides."""

    def __init__(self, service: ApprovalService) -> None:
        super().__init__()
        self.service = service

    async def card_action(self, action: CardAction, surface: CardSurface) -> CardReply:
        if action.verb.choice is not None and (
            action.verb is not CardVerb.REPLY or action.reply is not None
        ):
            await super().approval_clicked(as_click(action))
        return await self.service.card_action(action, surface)

    async def approval_clicked(self, click: ApprovalClick) -> ClickVerdict:
        await super().approval_clicked(click)
        action = CardAction(
            channel=click.channel,
            approval_id=click.approval_id,
            verb=CardVerb(click.choice),
            actor=Actor(user_id=click.user_id, roles=click.user_roles),
            reply=click.replacement_text,
            card=click.card,
            full_view=click.full_view,
        )
        return (await self.service.card_action(action, FakeSurface())).verdict

    async def approval_refusal(
        self,
        *,
        channel: ChannelRef,
        approval_id: str,
        user_id: str,
        user_roles: tuple[str, ...] = (),
    ) -> ClickVerdict | None:
        action = CardAction(
            channel=channel,
            approval_id=approval_id,
            verb=CardVerb.REPLY,
            actor=Actor(user_id=user_id, roles=user_roles),
        )
        reply = await self.service.card_action(action, FakeSurface())
        return None if reply.kind is CardReplyKind.OPEN_REPLY_FORM else reply.verdict

    async def approval_card(self, *, channel: ChannelRef, approval_id: str) -> ApprovalCard | None:
        return await self.service.card(channel=channel, approval_id=approval_id)
