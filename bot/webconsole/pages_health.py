"""The Channels and health page: each channel's connection and last error, the provider
chain of each agent (and, above all, the warning ``/readyz`` gives when the embedded demo model
answers a team), the turn queue and the inbox, and the figures ``/metrics`` exports.

Everything is read from the running bot at the request, never from the HTTP endpoints:
channel health from :meth:`ConsoleHost.channel_health`, the queue from
:meth:`ConsoleHost.turn_load`, the chain from the settings (:mod:`bot.providers.summary`: no
credentials, no query string), and the figures from the daemon's Prometheus registry
(:attr:`bot.metrics.Metrics.registry`), the same collectors ``/metrics`` renders (histogram
buckets left out: their count and sum are shown). The inbox gauge is refreshed first, as the
``/metrics`` handler does.

An approver sees their own channels: other channels' health rows, and figures labelled with
another channel, are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from bot.config import Settings
from bot.config.settings import demo_model_warning
from bot.metrics import Metrics
from bot.providers.summary import ProviderSummary, summarise
from bot.webconsole import display
from bot.webconsole.pages import Access, PageRequest, Pages
from bot.webconsole.viewer import Viewer

PATH = "/channels"
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


async def health_page(page: PageRequest) -> web.StreamResponse:
    host, viewer = page.host, page.viewer
    health = host.channel_health()
    channels = [
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
    context: dict[str, Any] = {
        "channels": channels,
        "running": running,
        "queued": queued,
        "inbox": {status: inbox.get(status, 0) for status in ("received", "processing", "failed")},
        "chains": chains(host.settings),
        "warnings": [w for w in [demo_model_warning(host.settings)] if w is not None],
        "figures": figures(metrics, viewer) if metrics is not None else None,
    }
    return page.render("health.html", context)
