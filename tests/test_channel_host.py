"""The host adapters run with: messages to the gateway, approval answers straight to the
approval service."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bot.approval.service import ApprovalService
from bot.channel import ChannelHost, ClickVerdict
from bot.channel_host import AdapterHost
from bot.envelope import IngressEnvelope
from bot.store import Store
from tests.approval.conftest import APPROVER, DISCORD, REQUESTER, make_record, make_settings


class Messages:
    """Records what the host delivers."""

    def __init__(self) -> None:
        self.delivered: list[IngressEnvelope] = []

    async def deliver(self, envelope: IngressEnvelope) -> None:
        self.delivered.append(envelope)


@pytest.mark.parametrize(
    ("user", "roles", "expected"),
    [
        (APPROVER, (), None),
        ("U_OPS", ("ops",), None),
        ("U_MALLORY", (), ClickVerdict.NOT_AUTHORISED),
        (REQUESTER, ("ops",), ClickVerdict.SELF_APPROVAL),
    ],
)
async def test_approval_refusal_is_the_approval_services_answer(
    tmp_path: Path, user: str, roles: tuple[str, ...], expected: ClickVerdict | None
) -> None:
    """The adapters' question goes to the approval service, and deciding it changes nothing."""
    async with await Store.open(tmp_path / "h.db") as store:
        record = make_record(time.time(), timeout_s=300, channel=DISCORD)
        await store.approvals.create(record)
        approvals = make_settings(kind="discord", approver_roles=["ops"])
        messages = Messages()
        host: ChannelHost = AdapterHost(
            messages=messages, approvals=ApprovalService(approvals, store, {}.get)
        )
        verdict = await host.approval_refusal(
            channel=DISCORD, approval_id=record.id, user_id=user, user_roles=roles
        )
        assert verdict is expected
        assert await store.approvals.get(record.id) == record
        assert await store.audit.since() == []
        assert messages.delivered == []
