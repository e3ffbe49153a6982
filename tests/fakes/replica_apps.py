"""Replicas in one process: Apps over one real PostgreSQL database (``tests/pg.py``), each
with a state directory and an in-process channel of its own (the same ``slack.team``: two
connections to one platform, which spreads messages over them), for the tests of sessions,
approvals and schedules across replicas.

:class:`ReplicaModel` is the model of every replica: it answers ``answer <tag>`` to a message
whose text starts with its tag (``m1 …``), asks for the ``deploy`` tool when the text says
``deploy`` (then answers with the tool's result), and holds a tagged message's turn until the
test lets it go. Every call is logged as ``(replica, tag)`` in one list shared by the
replicas, so a test reads who ran which turn, in which order. :meth:`Replicas.crash` stands for
a kill -9: the replica's database connections are closed first (nothing it still tries to
write gets through), its channel refuses to send, then its tasks end without a stop; its
heartbeat stops, so the others take it for gone once its lease TTL has passed.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.app import App
from bot.config import Settings, parse_settings
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.errors import StorageUnavailable
from bot.providers.base import CompletionRequest, ProviderReply, StreamSink, ToolCallRequest
from bot.tools.parking import RESUMED_HEAD
from tests.fakes.channel import FakeChannel
from tests.fakes.recording_tool import deploy_tool

SLACK = ChannelRef(kind="slack", alias="team")
APPROVER = "U_ADMIN"
REQUESTER = "U_ALICE"
CONVERSATION = "C1"
#: Short leases, so that a test that kills a replica (:meth:`Replicas.crash`) sees it taken
#: for gone soon (``lease_ttl_s + max_clock_skew_s`` after its last heartbeat), with room for
#: a loaded machine: the fence was 0.7 s, and at a load of 22-30 a heartbeat took longer (a
#: delivery was refused with "no answer within 0.7s"). A stall longer than the fence
#: (``lease_ttl_s - max_clock_skew_s``) still makes a replica refuse work for a moment, which
#: :meth:`Replica.deliver` rides out as the platform does, by delivering again.
QUICK_REPLICAS = {"heartbeat_s": 0.1, "lease_ttl_s": 3.0, "max_clock_skew_s": 0.5}

#: How long a refused delivery is tried again (Replica.deliver).
REDELIVERY_S = 60.0

_TAG = re.compile(r"\b(m\d+)\b")


def replica_settings(
    pg_url: str, state_dir: Path, *, extra: Mapping[str, Any] | None = None
) -> Settings:
    """One replica's settings: the shared database, its own state directory."""
    data: dict[str, Any] = {
        "state_dir": str(state_dir),
        "storage": {"url": pg_url},
        "replicas": dict(QUICK_REPLICAS),
        "agent": {"turn_timeout_s": 60.0, "parallel_tools": False},
        "approval": {"timeout_s": 60.0},
        "channels": {"slack": {"team": {"allowed_users": ["*"], "approvers": [APPROVER]}}},
    }
    data.update(extra or {})
    return parse_settings(data, environ={}, require_provider=False)


def message(
    text: str, message_id: str, *, conversation: str = CONVERSATION, sender: str = REQUESTER
) -> IngressEnvelope:
    """A message in a group conversation of ``slack.team`` where cards can be answered."""
    return IngressEnvelope(
        channel=SLACK,
        message_id=message_id,
        conversation_id=conversation,
        sender=Sender(id=sender, display_name="Alice"),
        text=text,
        reply_target=DeliveryTarget(channel=SLACK, conversation_id=conversation),
        is_group=True,
        addressed_to_bot=True,
        capabilities=Capabilities(approval_backchannel=True),
    )


@dataclass
class ReplicaModel:
    """The model of one replica (module docstring); ``log`` is shared by all of them."""

    replica: str
    log: list[tuple[str, str]]
    holds: dict[str, asyncio.Event] = field(default_factory=dict)
    reached: dict[str, asyncio.Event] = field(default_factory=dict)
    name: str = "replica-model"

    async def complete(
        self, request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply:
        last = request.messages[-1]
        if last.role == "tool":
            return ProviderReply(text=f"done: {last.content}", finish_reason="stop")
        if last.content.startswith(RESUMED_HEAD):
            # a parked turn's real results (bot.tools.parking): "- call ID (tool): result"
            result = last.content.splitlines()[-1].split("): ", 1)[-1]
            return ProviderReply(text=f"done: {result}", finish_reason="stop")
        users = [m for m in request.messages if m.role == "user"]
        found = _TAG.search(users[-1].content) if users else None
        tag = found.group(1) if found else "?"
        self.log.append((self.replica, tag))
        self.reached.setdefault(tag, asyncio.Event()).set()
        if tag in self.holds:
            await self.holds[tag].wait()
        if "deploy" in users[-1].content:
            call = ToolCallRequest(id=f"call-{tag}", name="deploy", arguments='{"version": "2"}')
            return ProviderReply(text="", tool_calls=(call,), finish_reason="tool_calls")
        return ProviderReply(text=f"answer {tag}", finish_reason="stop")

    async def aclose(self) -> None:
        return None


@dataclass
class Replica:
    name: str
    app: App
    channel: FakeChannel
    model: ReplicaModel

    async def deliver(self, envelope: IngressEnvelope) -> None:
        """The message reaches this replica's connection to the platform. A replica whose
        heartbeat is late refuses it (StorageUnavailable) and the platform delivers it again,
        as Slack redelivers an event that was not acknowledged: here once the replica takes
        work again (within :data:`REDELIVERY_S`)."""
        host = self.channel.host
        assert host is not None
        async with asyncio.timeout(REDELIVERY_S):
            while True:
                try:
                    await host.deliver(envelope)
                    return
                except StorageUnavailable as exc:
                    if self.app.keeper is None or "cannot reach its database" not in str(exc):
                        raise
                    while self.app.keeper.refusal() is not None:  # noqa: ASYNC110
                        await asyncio.sleep(0.05)


class Replicas:
    """Apps over one database; each started one is stopped (or was crashed) at the end."""

    def __init__(self, pg_url: str, root: Path) -> None:
        self._url = pg_url
        self._root = root
        self.log: list[tuple[str, str]] = []
        #: arguments of every deploy that ran, by the replica it ran on
        self.deployed: list[tuple[str, Mapping[str, object]]] = []
        self._running: list[Replica] = []

    async def start(
        self,
        name: str,
        *,
        holds: Mapping[str, asyncio.Event] | None = None,
        extra: Mapping[str, Any] | None = None,
        clock: Any = None,
        retry_safe: bool = False,
    ) -> Replica:
        model = ReplicaModel(replica=name, log=self.log, holds=dict(holds or {}))
        channel = FakeChannel(SLACK)
        ran: list[Mapping[str, object]] = _Recorded(name, self.deployed)
        options: dict[str, Any] = {} if clock is None else {"clock": clock}
        app = App(
            replica_settings(self._url, self._root / name, extra=extra),
            provider=model,
            channels={str(SLACK): channel},
            tools=[deploy_tool(ran, retry_safe=retry_safe)],
            **options,
        )
        await app.start()
        async with asyncio.timeout(30):
            await channel.running.wait()
        replica = Replica(name=name, app=app, channel=channel, model=model)
        self._running.append(replica)
        return replica

    async def stop(self, replica: Replica, *, drain_timeout_s: float = 5.0) -> None:
        """A clean stop: running turns get ``drain_timeout_s`` to end (a test that lets a
        held turn end during the stop gives it as long as its own waits)."""
        self._running.remove(replica)
        await replica.app.stop(drain_timeout_s=drain_timeout_s)

    async def crash(self, replica: Replica) -> None:
        """As a kill -9 (module docstring)."""
        self._running.remove(replica)
        replica.channel.down = True
        app = replica.app
        await app.store.aclose()
        runner = app._runner
        if runner is not None:
            runner.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(runner, 30)
        app._stopped = True

    async def aclose(self) -> None:
        for replica in list(self._running):
            await self.stop(replica)


class _Recorded(list[Mapping[str, object]]):
    """The list the deploy tool appends to, which also notes the replica it ran on."""

    def __init__(self, replica: str, into: list[tuple[str, Mapping[str, object]]]) -> None:
        super().__init__()
        self._replica = replica
        self._into = into

    def append(self, item: Mapping[str, object]) -> None:
        super().append(item)
        self._into.append((self._replica, item))
