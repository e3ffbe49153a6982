"""Building blocks for pipeline tests: envelopes, specs, a recording progress sink, and a
harness that runs batches through a real :class:`ToolPipeline` over a real SQLite store."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.agent.turn import CancelToken
from bot.approval.gate import ApprovalGate
from bot.config import AgentConfig
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.observe import LoggingObserver, ToolCallFinished, ToolCallStarted
from bot.providers.base import ToolCallRequest
from bot.store import Store
from bot.tools.batch import BatchReport
from bot.tools.execution import RetryPolicy
from bot.tools.file_locks import PathLocks
from bot.tools.hooks import ToolHooks
from bot.tools.pipeline import ToolPipeline
from bot.tools.receipt import ReceiptSigner
from bot.tools.registry import ToolRegistry, ToolScope
from bot.tools.scheduler import ToolScheduler
from bot.tools.services import PipelineServices
from bot.tools.spec import ToolContext, ToolHandler, ToolResult, ToolSpec
from bot.turn import TurnIdentity
from tests.tools.gates import PolicyGate

CHANNEL = ChannelRef(kind="console", alias="main")
_turns = itertools.count(1)


def make_envelope(
    text: str = "hello",
    *,
    capabilities: Capabilities | None = None,
    background: bool = False,
    thread_id: str | None = "t1",
) -> IngressEnvelope:
    return IngressEnvelope(
        channel=CHANNEL,
        message_id="m1",
        conversation_id="c1",
        sender=Sender(id="u1", display_name="User"),
        text=text,
        reply_target=DeliveryTarget(channel=CHANNEL, conversation_id="c1", thread_id=thread_id),
        capabilities=capabilities or Capabilities(terminal_prompt=True),
        background=background,
    )


def make_context(
    envelope: IngressEnvelope | None = None,
    *,
    session_key: str | None = None,
    turn_id: str = "turn-0",
    workspace: str | None = None,
) -> ToolContext:
    """A handler's context in a turn answering ``envelope`` (by default :func:`make_envelope`);
    the session key defaults to the envelope's conversation."""
    envelope = envelope or make_envelope()
    return ToolContext(
        turn=TurnIdentity(
            turn_id=turn_id,
            session_key=session_key or f"{envelope.channel}:{envelope.conversation_id}",
            envelope=envelope,
        ),
        workspace=workspace,
    )


OBJECT_SCHEMA: Mapping[str, object] = {"type": "object"}


def text_schema(*names: str, required: Sequence[str] = ()) -> Mapping[str, object]:
    return {
        "type": "object",
        "properties": {n: {"type": "string"} for n in names},
        "required": list(required),
        "additionalProperties": False,
    }


def spec(
    name: str,
    handler: ToolHandler | None,
    *,
    parameters: Mapping[str, object] | None = None,
    **policy: Any,
) -> ToolSpec:
    policy.setdefault("requires_approval", False)
    return ToolSpec(
        name=name,
        description=f"{name} for tests",
        parameters=parameters if parameters is not None else OBJECT_SCHEMA,
        handler=handler,
        **policy,
    )


def returning(text: str) -> ToolHandler:
    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        return text

    return handler


@dataclass
class Recorder:
    """A handler that records its calls (arguments) and answers via ``answer``."""

    answer: Callable[[Mapping[str, object]], Awaitable[ToolResult]] | None = None
    calls: list[dict[str, object]] = field(default_factory=list)

    async def __call__(self, arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        self.calls.append(dict(arguments))
        if self.answer is None:
            return "ok"
        return await self.answer(arguments)


class RecordingProgress:
    """A progress sink that records what it was told."""

    def __init__(self, *, wants_stream: bool = False) -> None:
        self.events: list[tuple[str, str]] = []
        self.streamed: list[str] = []
        self._wants_stream = wants_stream

    @property
    def wants_stream(self) -> bool:
        return self._wants_stream

    async def tool_started(self, *, call_id: str, tool: str, hint: str) -> None:
        self.events.append(("started", tool))

    async def tool_finished(
        self, *, call_id: str, tool: str, ok: bool, duration_s: float, reason: str = ""
    ) -> None:
        self.events.append(("finished" if ok else "failed", tool))

    async def waiting_for_approval(self, *, tool: str) -> None:
        self.events.append(("waiting", tool))

    async def ran_under_grant(self, *, call_id: str, line: str) -> None:
        self.events.append(("grant", line))

    async def approval_resolved(self, *, tool: str, approved: bool) -> None:
        self.events.append(("resolved", tool))

    async def stream_text(self, delta: str) -> None:
        self.streamed.append(delta)

    async def aclose(self) -> None:
        return None


class RecordingObserver(LoggingObserver):
    """Logs like the default observer and keeps every event, in order."""

    def __init__(self) -> None:
        self.started: list[ToolCallStarted] = []
        self.finished: list[ToolCallFinished] = []

    def tool_started(self, event: ToolCallStarted) -> None:
        super().tool_started(event)
        self.started.append(event)

    def tool_finished(self, event: ToolCallFinished) -> None:
        super().tool_finished(event)
        self.finished.append(event)


FAST_RETRY = RetryPolicy()


class Harness:
    """One turn's pipeline over ``specs``; :meth:`run` runs one batch."""

    def __init__(
        self,
        store: Store,
        specs: Sequence[ToolSpec],
        *,
        gate: ApprovalGate | None = None,
        settings: AgentConfig | None = None,
        hooks: ToolHooks | None = None,
        envelope: IngressEnvelope | None = None,
        scope: ToolScope | None = None,
        scheduler: ToolScheduler | None = None,
        locks: PathLocks | None = None,
        signer: ReceiptSigner | None = None,
        retry: RetryPolicy | None = None,
        workspace: str | None = None,
        session_key: str = "console.main:c1",
        observer: RecordingObserver | None = None,
    ) -> None:
        self.store = store
        self.gate = gate or PolicyGate()
        self.settings = settings or AgentConfig()
        self.envelope = envelope or make_envelope()
        self.observer = observer or RecordingObserver()
        self.progress = RecordingProgress()
        self.cancel = CancelToken()
        self.turn_id = f"turn-{next(_turns)}"
        self.session_key = session_key
        registry = ToolRegistry(specs)
        if scope is not None:
            registry = registry.scoped(scope)
        self.services = PipelineServices(
            store=store,
            gate=self.gate,
            settings=self.settings,
            hooks=hooks or ToolHooks(),
            observer=self.observer,
            scheduler=scheduler or ToolScheduler(),
            locks=locks or PathLocks(),
            signer=signer,
            retry=retry or FAST_RETRY,
        )
        self.pipeline = ToolPipeline(
            services=self.services,
            executor=registry.executor(),
            context=make_context(
                self.envelope, session_key=session_key, turn_id=self.turn_id, workspace=workspace
            ),
            progress=self.progress,
            cancel=self.cancel,
        )

    async def run(self, *calls: ToolCallRequest, text: str = "") -> BatchReport:
        return await self.pipeline.run_batch(text, calls)

    def run_task(self, *calls: ToolCallRequest) -> asyncio.Task[BatchReport]:
        return asyncio.create_task(self.run(*calls))
