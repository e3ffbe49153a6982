"""Fixtures for approval tests: a real SQLite store, settings, the fake channel, and an ask
running while a test clicks on its card; for the parking tests (test_parking_*.py), a card
whose turn has parked on a running daemon (:func:`parked_card`), the waits on what the
daemon then does by itself, and the check that nothing of a turn ran
(:func:`assert_nothing_ran`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import pytest

from bot.app import App
from bot.approval.gate import ApprovalDecision, ApprovalRequest
from bot.approval.service import ApprovalService
from bot.channel import Channel, ClickVerdict
from bot.config import Settings, parse_settings
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.store import InboxKey, InboxStatus, Store
from bot.store.approvals import ApprovalRecord, ApprovalStatus
from bot.store.parked import ParkState
from bot.turn import TurnIdentity
from tests.approval.file_daemon import Daemons
from tests.fakes.channel import FakeChannel, PostedCard, clicked
from tests.fakes.replica_apps import Replicas, message
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


@pytest.fixture
async def daemons(tmp_path: Path) -> AsyncIterator[Daemons]:
    """Daemons started one at a time on one ``hatchway.toml`` and its SQLite file
    (:mod:`tests.approval.file_daemon`)."""
    started = Daemons(tmp_path)
    try:
        yield started
    finally:
        await started.aclose()


# -- parked turns on running daemons -------------------------------------------------------

#: How long a parking test waits for what a daemon does by itself.
WAIT_S = 60.0
#: The turn parks by itself once its card has waited 0.2 s (``approval.wait_in_turn_s``).
PARK_SOON: dict[str, Any] = {"approval": {"timeout_s": 60.0, "wait_in_turn_s": 0.2}}
#: The inbox entry of :func:`parked_card`'s default message.
KEY = InboxKey(channel=str(SLACK), message_id="1")


class Running(Protocol):
    """A started daemon: a replica (:class:`tests.fakes.replica_apps.Replica`) or one on a
    configuration file (:class:`tests.approval.file_daemon.Daemon`)."""

    @property
    def app(self) -> App: ...

    @property
    def channel(self) -> FakeChannel: ...

    async def deliver(self, envelope: IngressEnvelope) -> None: ...


class Runs(Protocol):
    """What the daemons of a test ran (:class:`~tests.fakes.replica_apps.Replicas`,
    :class:`~tests.approval.file_daemon.Daemons`)."""

    @property
    def log(self) -> list[tuple[str, str]]: ...

    @property
    def deployed(self) -> list[tuple[str, Mapping[str, object]]]: ...


async def parked_card(
    running: Running,
    text: str = "m1 deploy please",
    message_id: str = "1",
    *,
    conversation: str = "C1",
    state: ParkState = ParkState.PARKED,
) -> PostedCard:
    """``running`` gets the message (``deploy`` asks for a card), posts the card, and the
    turn's parked row reaches ``state`` (the daemon must park soon: :data:`PARK_SOON`)."""
    await running.deliver(message(text, message_id, conversation=conversation))
    card = await asyncio.wait_for(running.channel.next_card(), WAIT_S)
    await until_state(running.app.store, card.card.approval_id, state)
    return card


async def until_state(store: Store, approval_id: str, state: ParkState = ParkState.PARKED) -> None:
    async with asyncio.timeout(WAIT_S):
        while True:
            row = await store.parked.row(approval_id)
            if row is not None and row.state is state:
                return
            await asyncio.sleep(0.05)


async def until_closed(store: Store, approval_id: str) -> tuple[ApprovalStatus, str | None]:
    """The card is decided and the parked turn is over (its row gone)."""
    async with asyncio.timeout(WAIT_S):
        while True:
            record = await store.approvals.get(approval_id)
            assert record is not None
            gone = await store.parked.row(approval_id) is None
            if record.status is not ApprovalStatus.PENDING and gone:
                return record.status, record.reason
            await asyncio.sleep(0.05)


async def until_inbox(store: Store, *statuses: InboxStatus, key: InboxKey = KEY) -> InboxStatus:
    """Until the entry of ``key`` has one of ``statuses``; which."""
    async with asyncio.timeout(WAIT_S):
        while True:
            entry = await store.inbox.get(key)
            if entry is not None and entry.status in statuses:
                return entry.status
            await asyncio.sleep(0.05)


async def until_done(store: Store, approval_id: str, key: InboxKey = KEY) -> None:
    """The resumption is over: its inbox entry is done and the parked row gone."""
    await until_inbox(store, InboxStatus.DONE, key=key)
    await until_closed(store, approval_id)


def answers(*running: Running) -> list[str]:
    """The answers the model gave (``done: …``, the replica tests' model), on every channel
    of ``running``."""
    return [t for r in running for t in r.channel.texts if t.startswith("done:")]


async def assert_nothing_ran(
    runs: Runs,
    on: Running | None = None,
    card: PostedCard | None = None,
    *,
    answered: bool = False,
) -> None:
    """Nothing of the parked turn ran: no ``deploy``, no model call but the one on ``a`` that
    asked for it (a resumption's adds none to the log), no answer on ``on`` unless
    ``answered`` (the model was told why the call did not run); and a late click on ``card``
    on ``on`` is not accepted and runs nothing either."""
    assert runs.deployed == []
    assert runs.log == [("a", "m1")]
    if on is not None and not answered:
        assert answers(on) == []
    if on is not None and card is not None:
        verdict = await clicked(on.app.approvals, on.channel.click(card, APPROVER))
        assert verdict is not ClickVerdict.ACCEPTED
        assert runs.deployed == []
