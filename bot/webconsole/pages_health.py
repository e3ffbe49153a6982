"""The Channels and health page: a readable summary first (decisions today and the median
wait, requests pending now, errors in the last hour, each channel's state), then each
channel's connection and last error, the provider
chain of each agent (and, above all, the warning ``/readyz`` gives when the embedded demo model
answers a team), the turn queue and the inbox, and the figures ``/metrics`` exports.

Everything is read from the running bot at the request, never from the HTTP endpoints:
channel health from :meth:`ConsoleHost.channel_health`, the queue from
:meth:`ConsoleHost.turn_load`, the chain from the settings (:mod:`bot.providers.summary`: no
credentials, no query string), and the figures from the daemon's Prometheus registry
(:attr:`bot.metrics.Metrics.registry`), the same collectors ``/metrics`` renders (histogram
buckets left out: their count and sum are shown). The inbox gauge is refreshed first, as the
``/metrics`` handler does.

The raw figures (what ``/metrics`` exports) are one link away, on ``/channels/metrics``.

An approver sees their own channels: other channels' health rows, and figures labelled with
another channel, are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aiohttp import web

from bot.config import Settings
from bot.config.settings import demo_model_warning
from bot.metrics import Metrics
from bot.providers.summary import ProviderSummary, summarise
from bot.store.console_summary import summary
from bot.webconsole import display, times
from bot.webconsole.pages import Access, PageRequest, Pages
from bot.webconsole.viewer import Viewer

PATH = "/channels"
METRICS_PATH = f"{PATH}/metrics"
#: Sample name endings left out: every bucket of a histogram, and the creation times
#: prometheus_client adds to counters.
_LEFT_OUT = ("_bucket", "_created")


@dataclass(frozen=True, slots=True, kw_only=True)
class Figure:
    name: str
    labels: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainView:
    agent: str
    providers: tuple[ProviderSummary, ...]


def chains(settings: Settings) -> list[ChainView]:
    """Each agent's provider chain as configured: its provider, then its fallbacks."""
    views = []
    for name in settings.agent_names():
        agent = settings.agent_for(name)
        names = dict.fromkeys([agent.provider, *agent.fallback])
        views.append(
            ChainView(
                agent=name,
                providers=tuple(
                    summarise(n, settings.providers[n]) for n in names if n in settings.providers
                ),
            )
        )
    return views


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:.4g}"


def figures(metrics: Metrics, viewer: Viewer) -> list[Figure]:
    """The registry's samples a viewer may see, in the registry's order."""
    shown = []
    for family in metrics.registry.collect():
        for sample in family.samples:
            if sample.name.endswith(_LEFT_OUT):
                continue
            channel = sample.labels.get("channel")
            if channel is not None and not viewer.may_read(channel):
                continue
            labels = ", ".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            shown.append(
                Figure(
                    name=sample.name,
                    labels=display.text(labels, 300),
                    value=_number(float(sample.value)),
                )
            )
    return shown


def register(pages: Pages) -> None:
    pages.add("GET", PATH, health_page, access=Access.SIGNED_IN, nav="Channels and health")
    pages.add("GET", METRICS_PATH, metrics_page, access=Access.SIGNED_IN)


def _median(values: tuple[float, ...]) -> float | None:
    if not values:
        return None
    middle = len(values) // 2
    if len(values) % 2:
        return values[middle]
    return (values[middle - 1] + values[middle]) / 2


def _start_of_day(fmt: times.TimeFormat) -> float:
    """Midnight of today in the console's zone."""
    now = datetime.fromtimestamp(fmt.now, fmt.zone)
    return now.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


async def metrics_page(page: PageRequest) -> web.StreamResponse:
    metrics = page.host.metrics
    if metrics is not None:
        metrics.set_inbox_counts(dict(await page.host.store.inbox.counts()))
    context: dict[str, Any] = {
        "figures": figures(metrics, page.viewer) if metrics is not None else None,
        "path": PATH,
    }
    return page.render("metrics.html", context)


async def health_page(page: PageRequest) -> web.StreamResponse:
    host, viewer = page.host, page.viewer
    health = host.channel_health()
    channels: list[dict[str, object]] = [
        {
            "name": name,
            "state": state.state.value,
            "detail": display.text(state.detail, 500),
        }
        for name, state in sorted(health.items())
        if viewer.may_read(name)
    ]
    running, queued = host.turn_load()
    inbox = dict(await host.store.inbox.counts())
    metrics = host.metrics
    if metrics is not None:
        metrics.set_inbox_counts(inbox)
    fmt = times.current()
    found = await summary(
        host.store.db,
        since=_start_of_day(fmt),
        errors_since=fmt.now - 3600,
        channels=display.reach(viewer),
    )
    median = _median(found.waits_ms)
    for row in channels:
        name = str(row["name"])
        row["failed_turns"] = found.failed_turns.get(name, 0)
        row["failed_calls"] = found.failed_calls.get(name, 0)
    context: dict[str, Any] = {
        "summary": {
            "decisions": found.decisions,
            "median_wait": display.duration(median / 1000) if median is not None else "—",
            "pending": found.pending,
            "failed_turns": sum(found.failed_turns.values()),
            "failed_calls": sum(found.failed_calls.values()),
            "channels_up": sum(1 for c in channels if c["state"] == "connected"),
            "channels": len(channels),
            "zone": fmt.zone_name,
        },
        "metrics_path": METRICS_PATH,
        "channels": channels,
        "running": running,
        "queued": queued,
        "inbox": {status: inbox.get(status, 0) for status in ("received", "processing", "failed")},
        "chains": chains(host.settings),
        "warnings": [w for w in [demo_model_warning(host.settings)] if w is not None],
    }
    return page.render("health.html", context)
