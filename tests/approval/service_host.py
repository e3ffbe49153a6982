"""A channel host whose approval clicks go to the real approval service, as the gateway's
do; adapter tests use it to check what a click does to the platform's card."""

from __future__ import annotations

from bot.approval.service import ApprovalService
from bot.channel import ApprovalClick, ClickVerdict
from tests.fakes.recording_host import RecordingHost


class ServiceHost(RecordingHost):
    """Records envelopes and clicks like :class:`RecordingHost`; the service decides."""

    def __init__(self, service: ApprovalService) -> None:
        super().__init__()
        self.service = service

    async def approval_clicked(self, click: ApprovalClick) -> ClickVerdict:
        await super().approval_clicked(click)
        return await self.service.click(click)
