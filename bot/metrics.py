"""Prometheus metrics of one daemon, in a registry of its own.

Two kinds of source feed :class:`Metrics`:

* **events**, counted as they happen through small hooks: turns by status
  (:meth:`Metrics.turn_finished`, called by the App), model tokens and cost
  (:meth:`Metrics.usage_recorded`, the usage meter's hook), tool calls by outcome
  (:meth:`Metrics.after_tool_call`, the ``after_tool_call`` hook the App registers in its
  agent bundle), approvals by decision and their latency (:class:`MeteredGate`, which the App
  puts around the approval gate), provider latency and errors (:class:`MeteredProvider`,
  which the daemon puts around the provider), configuration reloads (the daemon);
* **live state**, read at scrape time from a :class:`LiveState` (the App): running turns,
  queued messages, channel health; the inbox backlog is refreshed by the ``/metrics``
  handler just before rendering (it needs a database read).

Every metric lives in ``Metrics.registry`` (never the process-global registry), so several
daemons, or tests, can each build their own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from bot import __version__
from bot.approval.gate import ApprovalDecision, ApprovalGate, ApprovalRequest, PolicyResult
from bot.channel import ChannelHealth, HealthState
from bot.errors import ProviderError
from bot.providers.base import CompletionRequest, Provider, ProviderReply, StreamSink
from bot.store.audit import Decision
from bot.store.usage import UsageRecord
from bot.tools.hooks import HookCall
from bot.tools.outcome import OutcomeReason, ToolOutcome

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

APPROVAL_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
PROVIDER_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0)

# A model may invent tool names; those must not become label values. These outcomes name
# a tool that was never looked up (unknown, unparsed, or refused before the lookup) ...
_NAMELESS = frozenset(
    {
        OutcomeReason.UNKNOWN_TOOL,
        OutcomeReason.NO_TOOL_CALL,
        OutcomeReason.MALFORMED_JSON,
        OutcomeReason.BATCH_FULL,
    }
)
# ... and a batch interrupted before preparation names its calls as the model did, so the
# distinct tool labels are capped as well.
MAX_TOOL_LABELS = 200
# A model label is the name the reply gave (a server may add dates or versions): capped too.
# Agent, provider and channel labels are configured names; a user id is never a label.
MAX_MODEL_LABELS = 50
TOKEN_KINDS = ("input", "output", "cache_write", "cache_read")


class LiveState(Protocol):
    """What the scrape-time collector reads; the App implements it."""

    def channel_health(self) -> Mapping[str, ChannelHealth]: ...

    def turn_load(self) -> tuple[int, int]:
        """(running turns, messages queued behind them)."""
        ...


class Metrics:
    """The daemon's metrics. Hooks never raise and never block."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.turns = Counter(
            "hatchway_turns", "Agent turns finished, by status.", ["status"], registry=r
        )
        self.tool_calls = Counter(
            "hatchway_tool_calls",
            "Tool calls finished, by tool, outcome status and reason.",
            ["tool", "outcome", "reason"],
            registry=r,
        )
        self.tokens = Counter(
            "hatchway_tokens",
            "Model tokens used, by agent, provider, model, channel and kind (input is the "
            "prompt read at the full price; cache_write and cache_read the prompt cache's).",
            ["agent", "provider", "model", "channel", "kind"],
            registry=r,
        )
        self.cost = Counter(
            "hatchway_cost",
            "Cost of the model calls whose model has a [pricing] entry, in its currency.",
            ["agent", "provider", "model", "channel"],
            registry=r,
        )
        self.approvals = Counter(
            "hatchway_approvals",
            "Approval requests decided, by verdict.",
            ["decision"],
            registry=r,
        )
        self.approval_latency = Histogram(
            "hatchway_approval_latency_seconds",
            "Time from asking for an approval to its decision.",
            ["decision"],
            buckets=APPROVAL_BUCKETS,
            registry=r,
        )
        self.provider_latency = Histogram(
            "hatchway_provider_request_seconds",
            "LLM provider completion latency (including its retries).",
            ["provider"],
            buckets=PROVIDER_BUCKETS,
            registry=r,
        )
        self.provider_errors = Counter(
            "hatchway_provider_errors",
            "LLM provider calls that failed after retries, by error type.",
            ["provider", "error"],
            registry=r,
        )
        self.replies_undecided = Counter(
            "hatchway_replies_undecided",
            "Replies a crash cut off whose delivery no check could decide, sent again "
            "marked as a possible repeat, by channel kind.",
            ["channel"],
            registry=r,
        )
        self.reloads = Counter(
            "hatchway_config_reloads",
            "Configuration reloads (SIGHUP), by result.",
            ["result"],
            registry=r,
        )
        self.inbox = Gauge(
            "hatchway_inbox_entries",
            "Inbox rows by status (refreshed at scrape).",
            ["status"],
            registry=r,
        )
        self.build = Gauge("hatchway_build_info", "The running version.", ["version"], registry=r)
        self.build.labels(version=__version__).set(1)
        self._live: _LiveCollector | None = None
        self._tool_labels: set[str] = set()
        self._model_labels: set[str] = set()

    # -- live state ---------------------------------------------------------------------

    def track(self, live: LiveState) -> None:
        """Read ``live`` at every scrape from now on (once; a second call replaces it)."""
        if self._live is not None:
            self.registry.unregister(self._live)
        self._live = _LiveCollector(live)
        self.registry.register(self._live)

    def set_inbox_counts(self, counts: Mapping[str, int]) -> None:
        for status in ("received", "processing", "parked", "done", "failed"):
            self.inbox.labels(status=status).set(counts.get(status, 0))

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)

    # -- event hooks --------------------------------------------------------------------

    def turn_finished(self, status: str) -> None:
        self.turns.labels(status=status).inc()

    def reply_undecided(self, channel: str) -> None:
        """The reply ledger's hook: a reply sent again marked (see bot.gateway.ledger)."""
        self.replies_undecided.labels(channel=channel).inc()

    async def after_tool_call(self, call: HookCall, outcome: ToolOutcome) -> None:
        """An ``after_tool_call`` hook (see :mod:`bot.tools.hooks`), registered by the App
        for every call of every turn. The ``tool`` label is ``unknown`` for a name never
        looked up, and ``other`` once :data:`MAX_TOOL_LABELS` names have been seen."""
        tool = "unknown" if outcome.reason in _NAMELESS else self._tool_label(outcome.tool)
        reason = (
            "failed"
            if outcome.failed and outcome.reason is OutcomeReason.NONE
            else (outcome.reason.value)
        )
        self.tool_calls.labels(tool=tool, outcome=outcome.status.value, reason=reason).inc()

    def usage_recorded(self, record: UsageRecord) -> None:
        """The usage meter's hook: one model call's tokens of each kind, and its cost when
        priced. The ``model`` label is ``other`` once :data:`MAX_MODEL_LABELS` names were
        seen."""
        model = record.model
        if model not in self._model_labels:
            if len(self._model_labels) >= MAX_MODEL_LABELS:
                model = "other"
            else:
                self._model_labels.add(model)
        labels = (record.agent, record.provider, model, record.channel)
        usage = record.usage
        counts = (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_write_tokens,
            usage.cache_read_tokens,
        )
        for kind, count in zip(TOKEN_KINDS, counts, strict=True):
            if count:
                self.tokens.labels(*labels, kind).inc(count)
        if record.cost is not None:
            self.cost.labels(*labels).inc(record.cost)

    def _tool_label(self, name: str) -> str:
        if name in self._tool_labels:
            return name
        if len(self._tool_labels) >= MAX_TOOL_LABELS:
            return "other"
        self._tool_labels.add(name)
        return name

    def approval_decided(self, decision: Decision, latency_s: float) -> None:
        self.approvals.labels(decision=decision).inc()
        self.approval_latency.labels(decision=decision).observe(max(latency_s, 0.0))

    def provider_call(self, provider: str, latency_s: float, error: str | None = None) -> None:
        self.provider_latency.labels(provider=provider).observe(max(latency_s, 0.0))
        if error is not None:
            self.provider_errors.labels(provider=provider, error=error).inc()


class _LiveCollector(Collector):
    def __init__(self, live: LiveState) -> None:
        self._live = live

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())

    def collect(self) -> Iterator[GaugeMetricFamily]:
        running, queued = self._live.turn_load()
        yield GaugeMetricFamily("hatchway_turns_running", "Agent turns running now.", running)
        yield GaugeMetricFamily(
            "hatchway_queue_depth", "Messages waiting behind a running turn.", queued
        )
        up = GaugeMetricFamily(
            "hatchway_channel_up", "1 when the channel is connected, else 0.", labels=["channel"]
        )
        state = GaugeMetricFamily(
            "hatchway_channel_state",
            "The channel's health state (1 for the current one).",
            labels=["channel", "state"],
        )
        for name, health in sorted(self._live.channel_health().items()):
            up.add_metric([name], 1.0 if health.state is HealthState.CONNECTED else 0.0)
            for candidate in HealthState:
                state.add_metric([name, candidate.value], float(health.state is candidate))
        yield up
        yield state


class MeteredProvider:
    """A :class:`~bot.providers.base.Provider` that times every completion."""

    def __init__(self, inner: Provider, metrics: Metrics) -> None:
        self.inner = inner
        self.name = inner.name
        self._metrics = metrics

    async def complete(
        self, request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply:
        started = time.monotonic()
        try:
            reply = await self.inner.complete(request, stream=stream)
        except ProviderError as exc:
            self._metrics.provider_call(self.name, time.monotonic() - started, type(exc).__name__)
            raise
        self._metrics.provider_call(self.name, time.monotonic() - started)
        return reply

    async def aclose(self) -> None:
        await self.inner.aclose()


class MeteredGate:
    """An :class:`~bot.approval.gate.ApprovalGate` that counts decisions and their latency."""

    def __init__(self, inner: ApprovalGate, metrics: Metrics) -> None:
        self.inner = inner
        self._metrics = metrics

    async def assess(self, request: ApprovalRequest) -> PolicyResult:
        return await self.inner.assess(request)

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        started = time.monotonic()
        decision = await self.inner.ask(request)
        self._metrics.approval_decided(decision.verdict, time.monotonic() - started)
        return decision
