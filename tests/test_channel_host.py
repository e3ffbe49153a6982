"""The host adapters run with: messages to the gateway, approval answers straight to the
approval service."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from bot.approval.service import ApprovalService
from bot.cards import Actor, CardAction, CardVerb
from bot.channel import Channel, ChannelHost, ClickVerdict
from bot.channel_host import AdapterHost
from bot.config.replicas import ReplicasConfig
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.errors import StorageUnavailable
from bot.replicas import LeaseKeeper
from bot.store import Store
from tests.approval.conftest import APPROVER, DISCORD, REQUESTER, make_record, make_settings
from tests.fakes.channel import FakeSurface


class Messages:
    """Records what the host delivers."""

    def __init__(self) -> None:
        self.delivered: list[IngressEnvelope] = []
        self.edits: list[IngressEnvelope] = []
        self.deletions: list[tuple[ChannelRef, str]] = []

    async def deliver(self, envelope: IngressEnvelope) -> None:
        self.delivered.append(envelope)

    async def edited(self, envelope: IngressEnvelope) -> None:
        self.edits.append(envelope)

    async def deleted(self, channel: ChannelRef, message_id: str) -> None:
        self.deletions.append((channel, message_id))


@pytest.mark.parametrize(
    ("user", "roles", "expected"),
    [
        (APPROVER, (), None),
        ("U_OPS", ("ops",), None),
        ("U_MALLORY", (), ClickVerdict.NOT_AUTHORISED),
        (REQUESTER, ("ops",), ClickVerdict.SELF_APPROVAL),
    ],
)
async def test_card_actions_are_the_approval_services_to_answer(
    tmp_path: Path, user: str, roles: tuple[str, ...], expected: ClickVerdict | None
) -> None:
    """A press asking for the reply form goes to the approval service, which answers on
    the surface and decides nothing."""
    async with await Store.open(tmp_path / "h.db") as store:
        record = make_record(time.time(), timeout_s=300, channel=DISCORD)
        await store.approvals.create(record)
        approvals = make_settings(kind="discord", approver_roles=["ops"])
        messages = Messages()
        host: ChannelHost = AdapterHost(
            messages=messages, approvals=ApprovalService(approvals, store, {}.get)
        )
        press = CardAction(
            channel=DISCORD,
            approval_id=record.id,
            verb=CardVerb.REPLY,
            actor=Actor(user_id=user, roles=roles),
        )
        surface = FakeSurface()
        reply = await host.card_action(press, surface)
        assert reply.verdict is (expected or ClickVerdict.ACCEPTED)
        assert surface.reply_forms == ([] if expected else [record.id])
        assert await store.approvals.get(record.id) == record
        assert await store.audit.since() == []
        assert messages.delivered == []


async def test_messages_edits_and_deletions_go_to_the_gateway(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
        messages = Messages()
        host: ChannelHost = AdapterHost(
            messages=messages,
            approvals=ApprovalService(make_settings(kind="discord"), store, {}.get),
        )
        edited = IngressEnvelope(
            channel=DISCORD,
            message_id="m1",
            conversation_id="c1",
            sender=Sender(id="u1"),
            text="edited",
            reply_target=DeliveryTarget(channel=DISCORD, conversation_id="c1"),
        )
        await host.edited(edited)
        await host.deleted(DISCORD, "m2")
        assert messages.edits == [edited]
        assert messages.deletions == [(DISCORD, "m2")]


class SlowMessages(Messages):
    """A sink whose ``deliver`` waits until released, counting how many wait at once."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = 0
        self.most_inside = 0
        self.release = asyncio.Event()

    async def deliver(self, envelope: IngressEnvelope) -> None:
        self.inside += 1
        self.most_inside = max(self.most_inside, self.inside)
        try:
            await self.release.wait()
            self.delivered.append(envelope)
        finally:
            self.inside -= 1


def no_channel(ref: ChannelRef) -> Channel | None:
    return None


def message(n: int) -> IngressEnvelope:
    return IngressEnvelope(
        channel=DISCORD,
        message_id=f"m{n}",
        conversation_id=f"c{n}",
        sender=Sender(id="u1"),
        text=f"message {n}",
        reply_target=DeliveryTarget(channel=DISCORD, conversation_id=f"c{n}"),
    )


async def test_a_burst_waits_at_the_door_in_order(tmp_path: Path) -> None:
    """At most ``admitting`` messages are in admission at once; the rest follow in the
    order they came, and each ``deliver`` returns only once its message went in."""
    async with await Store.open(tmp_path / "h.db") as store:
        messages = SlowMessages()
        host = AdapterHost(
            messages=messages,
            approvals=ApprovalService(make_settings(kind="discord"), store, no_channel),
            admitting=3,
        )
        burst = [asyncio.create_task(host.deliver(message(n))) for n in range(10)]
        for _ in range(20):
            await asyncio.sleep(0)
        assert messages.inside == 3
        assert not any(task.done() for task in burst)
        messages.release.set()
        await asyncio.gather(*burst)
        assert messages.most_inside == 3
        assert [e.message_id for e in messages.delivered] == [f"m{n}" for n in range(10)]


async def test_a_replica_that_takes_no_work_refuses_messages_and_leads_by_kind_alias_role(
    tmp_path: Path,
) -> None:
    """With a lease keeper: a role is the lease ``<kind>.<alias>.<role>``; once the replica
    takes no work, a message or an edit is refused with StorageUnavailable before it
    reaches the gateway (the platform keeps the event)."""
    async with await Store.open(tmp_path / "h.db") as store:
        keeper = LeaseKeeper(store.replicas, ReplicasConfig())
        await keeper.join()
        messages = Messages()
        host = AdapterHost(
            messages=messages,
            approvals=ApprovalService(make_settings(), store, no_channel),
            replica=keeper,
        )
        ran: list[str] = []

        async def work() -> None:
            ran.append(keeper.held()[0])

        await host.lead(ChannelRef(kind="telegram", alias="main"), "poll", work)
        assert ran == ["telegram.main.poll"]
        await host.deliver(message(1))
        await keeper.leave()
        with pytest.raises(StorageUnavailable, match="this replica is stopping"):
            await host.deliver(message(2))
        with pytest.raises(StorageUnavailable):
            await host.edited(message(1))
        assert [e.text for e in messages.delivered] == [message(1).text]
        assert messages.edits == []
