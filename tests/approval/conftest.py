"""Fixtures for approval tests: a real SQLite store, settings, the fake channel, and an ask
running while a test clicks on its card."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.approval.gate import ApprovalDecision, ApprovalRequest
from bot.approval.service import ApprovalService
from bot.channel import Channel
from bot.config import Settings, parse_settings
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.store import Store
from bot.store.approvals import ApprovalRecord, ApprovalStatus
from bot.turn import TurnIdentity
from tests.fakes.channel import FakeChannel, PostedCard
from tests.fakes.replica_apps import Replicas
from tests.sqlite_template import copy_migrated

SLACK = ChannelRef(kind="slack", alias="team")
#: For approver_roles, which Slack does not have.
DISCORD = ChannelRef(kind="discord", alias="team")
APPROVER = "U_ADMIN"
REQUESTER = "U_ALICE"


def make_settings(
    policy: Mapping[str, Any] | None = None, *, kind: str = "slack", **channel: Any
) -> Settings:
    team: dict[str, Any] = {"allowed_users": ["*"], "approvers": [APPROVER]}
    team.update(channel)
    data: dict[str, Any] = {
        "approval": {"timeout_s": 60.0, **(policy or {})},  # never reached unless a test says so
        "channels": {kind: {"team": team}},
    }
    return parse_settings(data, environ={}, require_provider=False)


def make_envelope(
    *,
    conversation: str = "C1",
    sender: str = REQUESTER,
    backchannel: bool = True,
    terminal: bool = False,
    background: bool = False,
    channel: ChannelRef = SLACK,
    is_group: bool = True,
) -> IngressEnvelope:
    return IngressEnvelope(
        channel=channel,
        message_id="msg-1",
        conversation_id=conversation,
        sender=Sender(id=sender, display_name="Alice"),
        text="please do it",
        reply_target=DeliveryTarget(channel=channel, conversation_id=conversation, thread_id="T1"),
        thread_id="T1",
        is_group=is_group,
        addressed_to_bot=True,
        capabilities=Capabilities(approval_backchannel=backchannel, terminal_prompt=terminal),
        background=background,
    )


def make_request(
    tool: str = "shell",
    arguments: Mapping[str, object] | None = None,
    *,
    requires_approval: bool = True,
    envelope: IngressEnvelope | None = None,
    call_id: str = "call-1",
) -> ApprovalRequest:
    return ApprovalRequest(
        tool=tool,
        arguments=dict(arguments if arguments is not None else {"command": "ls -la"}),
        call_id=call_id,
        turn=TurnIdentity(
            turn_id="turn-1", session_key="slack.team:C1:T1", envelope=envelope or make_envelope()
        ),
        requires_approval=requires_approval,
    )


def make_record(now: float, timeout_s: float = 5.0, channel: ChannelRef = SLACK) -> ApprovalRecord:
    """The pending row :func:`make_request` leaves while its card waits, asked at ``now``."""
    request = make_request()
    return ApprovalRecord(
        id="apr-1",
        channel=str(channel),
        conversation_id="C1",
        thread_id="T1",
        session_key=request.turn.session_key,
        requester=REQUESTER,
        requester_name="Alice",
        tool=request.tool,
        fingerprint=request.fingerprint,
        summary=("command: ls -la",),
        ask_reason="it has side effects",
        created_at=now,
        expires_at=now + timeout_s,
    )


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "hatchway.db"


@pytest.fixture
async def store(db_path: Path, migrated_sqlite: Path) -> AsyncIterator[Store]:
    async with await Store.open(copy_migrated(migrated_sqlite, db_path)) as opened:
        yield opened


@pytest.fixture
def channel() -> FakeChannel:
    return FakeChannel(SLACK)


def service_for(
    settings: Settings, store: Store, *channels: Channel, poll_interval_s: float = 0.02
) -> ApprovalService:
    by_ref = {c.ref: c for c in channels}
    return ApprovalService(settings, store, by_ref.get, poll_interval_s=poll_interval_s)


class ManualClock:
    """The approval service's clock, moved only by the test: a request expires when the
    test says so, never because a loaded machine was slow to click."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def pass_deadline(self, settings: Settings) -> None:
        self.now += settings.approval.timeout_s


def clocked_service(
    settings: Settings, store: Store, channel: Channel
) -> tuple[ApprovalService, ManualClock]:
    """A service (as :func:`service_for`) on a :class:`ManualClock`."""
    clock = ManualClock()
    service = ApprovalService(
        settings, store, {channel.ref: channel}.get, clock, poll_interval_s=0.02
    )
    return service, clock


Asking = tuple[PostedCard, asyncio.Task[ApprovalDecision]]


@asynccontextmanager
async def asking(
    service: ApprovalService,
    store: Store,
    channel: FakeChannel,
    request: ApprovalRequest | None = None,
) -> AsyncIterator[Asking]:
    """``service.ask(request)`` (default :func:`make_request`) runs while the block does, which
    starts once the ask posted its cards and waits for an answer; yields the first card and
    the ask, done after the block."""
    async with asyncio.TaskGroup() as group:
        task = group.create_task(service.ask(request or make_request()))
        posted = await channel.next_card()
        await until_waiting(store, posted.card.approval_id)
        yield posted, task


async def until_waiting(store: Store, approval_id: str) -> None:
    """Until the asking side stored where its cards are (it does so after the posts return,
    and then only waits): a restart or a click from now on finds every copy."""
    async with asyncio.timeout(10):
        # the row is the only signal there is
        while not (row := await store.approvals.get(approval_id)) or not row.card_refs:  # noqa: ASYNC110
            await asyncio.sleep(0.01)


@pytest.fixture
async def replicas(pg_url: str, tmp_path: Path) -> AsyncIterator[Replicas]:
    """Replicas in one process over one PostgreSQL database (:mod:`tests.fakes.replica_apps`)."""
    started = Replicas(pg_url, tmp_path)
    try:
        yield started
    finally:
        await started.aclose()


async def status_of(store: Store, approval_id: str) -> tuple[ApprovalStatus, str | None]:
    """The row's status and reason (it must exist)."""
    record = await store.approvals.get(approval_id)
    assert record is not None
    return record.status, record.reason
