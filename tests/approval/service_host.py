"""A channel host whose approval clicks and questions go to the real approval service, as the
daemon's host does (:class:`bot.channel_host.AdapterHost`); adapter tests use it to check
what a click does to the platform's card."""

from __future__ import annotations

from bot.approval.service import ApprovalService
from bot.channel import ApprovalCard, ApprovalClick, ClickVerdict
from bot.envelope import ChannelRef
from tests.fakes.recording_host import RecordingHost


class ServiceHost(RecordingHost):
    """Records envelopes and clicks like :class:`RecordingHost`; the service decides."""

    def __init__(self, service: ApprovalService) -> None:
        super().__init__()
        self.service = service

    async def approval_clicked(self, click: ApprovalClick) -> ClickVerdict:
        await super().approval_clicked(click)
        return await self.service.click(click)

    async def approval_refusal(
        self,
        *,
        channel: ChannelRef,
        approval_id: str,
        user_id: str,
        user_roles: tuple[str, ...] = (),
    ) -> ClickVerdict | None:
        return await self.service.refusal(
            channel=channel, approval_id=approval_id, user_id=user_id, user_roles=user_roles
        )

    async def approval_card(self, *, channel: ChannelRef, approval_id: str) -> ApprovalCard | None:
        return await self.service.card(channel=channel, approval_id=approval_id)
