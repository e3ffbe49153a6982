"""Liveness, readiness and metrics over HTTP: ``/healthz``, ``/readyz``, ``/metrics``.

* ``/healthz`` — 200 while the event loop answers (the process is alive).
* ``/readyz`` — 200 only when every configured channel reports ``CONNECTED`` (a channel on
  standby while another replica holds its single-consumer role does), the database accepts
  a write transaction (with several replicas: the replica's heartbeat, itself a write,
  succeeds, :meth:`bot.replicas.LeaseKeeper.refusal`), and the daemon is not draining; otherwise
  503. Both answers carry a JSON body naming each check, so ``curl`` shows what is not ready,
  and a ``warnings`` list: what works but is probably not what the operator wants (the
  embedded demo model answering a team, :func:`bot.config.settings.demo_model_warning`).
  A warning never makes the daemon unready: it lasts as long as the configuration, and an
  unready daemon would be restarted or taken out of a load balancer for good.
* ``/metrics`` — the Prometheus text of :class:`bot.metrics.Metrics`.

The routes read a :class:`ReadinessSource` (the App) at request time; they are added to the
daemon's aiohttp application by :func:`add_health_routes`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from aiohttp import web

from bot.channel import ChannelHealth, HealthState
from bot.errors import StorageError
from bot.metrics import CONTENT_TYPE, Metrics

DB_CHECK_TIMEOUT_S = 3.0


class ReadinessSource(Protocol):
    """What readiness is judged from."""

    def channel_health(self) -> Mapping[str, ChannelHealth]: ...

    async def check_database(self) -> None:
        """Return when the database accepts a write; raise StorageError otherwise."""
        ...

    async def inbox_counts(self) -> Mapping[str, int]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Readiness:
    """The verdict of one readiness check; ``problems`` name what is not ready."""

    ready: bool
    channels: Mapping[str, str]
    database: str
    problems: tuple[str, ...]
    #: shown, never counted against ``ready``
    warnings: tuple[str, ...] = ()

    def as_json(self) -> dict[str, object]:
        return {
            "ready": self.ready,
            "channels": dict(self.channels),
            "database": self.database,
            "problems": list(self.problems),
            "warnings": list(self.warnings),
        }


async def assess_readiness(
    source: ReadinessSource, *, draining: bool = False, warnings: Sequence[str] = ()
) -> Readiness:
    """Check channels, the database and the draining flag; ``warnings`` are passed on."""
    problems: list[str] = []
    channels: dict[str, str] = {}
    for name, health in sorted(source.channel_health().items()):
        channels[name] = health.state.value
        if health.state is not HealthState.CONNECTED:
            detail = f": {health.detail}" if health.detail else ""
            problems.append(f"channel {name} is {health.state.value}{detail}")
    database = "writable"
    try:
        async with asyncio.timeout(DB_CHECK_TIMEOUT_S):
            await source.check_database()
    except TimeoutError:
        database = "timeout"
        problems.append(f"database did not accept a write within {DB_CHECK_TIMEOUT_S:g}s")
    except StorageError as exc:
        database = "not writable"
        problems.append(f"database: {exc}")
    if draining:
        problems.append("daemon is draining (shutting down)")
    return Readiness(
        ready=not problems,
        channels=channels,
        database=database,
        problems=tuple(problems),
        warnings=tuple(warnings),
    )


def no_warnings() -> Sequence[str]:
    return ()


class HealthRoutes:
    """The three handlers. ``draining`` is flipped by the daemon when shutdown starts;
    ``warnings`` is asked at each ``/readyz`` (the settings in force may have been reloaded)."""

    def __init__(
        self,
        source: ReadinessSource,
        metrics: Metrics,
        *,
        warnings: Callable[[], Sequence[str]] = no_warnings,
    ) -> None:
        self._source = source
        self._metrics = metrics
        self._warnings = warnings
        self.draining = False

    async def healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"alive": True})

    async def readyz(self, request: web.Request) -> web.Response:
        verdict = await assess_readiness(
            self._source, draining=self.draining, warnings=self._warnings()
        )
        return web.json_response(verdict.as_json(), status=200 if verdict.ready else 503)

    async def metrics(self, request: web.Request) -> web.Response:
        # While the database closes, the other metrics are still worth serving.
        with contextlib.suppress(StorageError):
            self._metrics.set_inbox_counts(await self._source.inbox_counts())
        return web.Response(body=self._metrics.render(), headers={"Content-Type": CONTENT_TYPE})


def add_health_routes(app: web.Application, routes: HealthRoutes) -> None:
    """Mount the handlers; call before the application starts serving."""
    app.router.add_get("/healthz", routes.healthz)
    app.router.add_get("/readyz", routes.readyz)
    app.router.add_get("/metrics", routes.metrics)
