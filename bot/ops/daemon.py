"""``hatchway run``: the App under supervision — signals, readiness, sd_notify, HTTP, drain.

Lifecycle::

    STATUS=starting → App.start → HTTP server → wait for channels (bounded) → READY=1
      → import the provider SDK and build its client, then the libraries a turn needs
        (in a worker thread) → one full garbage collection, gc.freeze(), collector back on
      ├─ SIGHUP: reload the config file; an invalid file keeps the old config
      └─ SIGTERM/SIGINT: STOPPING=1, STATUS=draining → drain → App.stop → exit 0
            └─ a second SIGTERM/SIGINT while draining cuts the drain short

**When READY is sent.** After ``App.start`` returned (store open, channels created and their
tasks running) the daemon waits up to ``ready_timeout_s`` for every channel to report
``CONNECTED``, and stops waiting early when a channel can never get there (``FAILED``: the
platform refused the credentials; ``STOPPED``). Then it sends ``READY=1`` either way, with a
``STATUS`` of ``ready: N channels`` or ``degraded: …`` naming each channel that is not
connected. A platform outage therefore neither fails the start (systemd would restart the
service in a loop) nor hides: ``/readyz`` stays 503 and the status line says why. The
provider's SDK is imported after READY (:mod:`bot.providers.deferred`): messages that arrive
meanwhile are admitted at once and their turns wait for it.

**Garbage collection at start-up.** ``hatchway run`` starts with Python's cyclic collector
off: start-up only allocates, mostly objects that live as long as the process, and the
collector would walk them a few hundred times for nothing (about a fifth of the CPU before
READY). After warm-up one collection frees start-up's garbage, ``gc.freeze()`` takes the rest
out of later collections, and the collector is switched back on, collecting the youngest
generation every 5,000 net new objects instead of 700 (:data:`YOUNG_GENERATION_THRESHOLD`).

**Drain.** New messages are refused at once; running turns get ``drain_timeout_s`` to finish,
then they are cancelled as interrupted; pending approvals are expired; the database is
closed. A second signal skips the rest of the wait. The watchdog keeps pinging throughout.

**A stop always ends.** After the drain the long-running parts (channels, MCP servers, the
scheduler) are cancelled and get :data:`bot.wiring.parts.CLOSE_TIMEOUT_S` to stop; MCP
servers are shut down by their transport (stdin closed, then SIGTERM, then SIGKILL). If the
process is still alive ``drain_timeout_s`` + :data:`~bot.ops.stop_deadline.CLOSE_BUDGET_S`
after the stop signal, :class:`~bot.ops.stop_deadline.StopDeadline` logs
``stop_deadline_exceeded`` and ends it with status 1.

**Reload.** Only what is read per message changes (see :meth:`bot.app.App.reload`); keys that
need a restart are named in the ``config_reloaded`` event (:func:`restart_only_changes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import os
import signal
from collections.abc import AsyncIterator, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path

import structlog

from bot.app import App
from bot.channel import ChannelHealth, HealthState
from bot.config import ChannelCommon, Settings
from bot.config.settings import demo_model_warning
from bot.errors import HatchwayError
from bot.metrics import MeteredProvider, Metrics
from bot.ops.health import HealthRoutes, add_health_routes
from bot.ops.notify import SystemdNotifier, watchdog_pings
from bot.ops.state import locate
from bot.ops.stop_deadline import CLOSE_BUDGET_S, StopDeadline
from bot.ops.web import HttpServer
from bot.providers.deferred import DeferredProvider
from bot.providers.factory import defer_provider
from bot.providers.summary import describe_chain

log = structlog.get_logger(__name__)

READY_POLL_S = 0.02
# Libraries a turn needs that nothing loads before READY (see bot.tools.schema); imported in a
# worker thread after the provider's SDK, so the first message does not wait for them.
AFTER_READY_IMPORTS = ("jsonschema",)
STATUS_REFRESH_S = 5.0
# Sections that are read once at start: a change is logged and takes effect on restart.
RESTART_ONLY = (
    "providers",
    "storage",
    "server",
    "logging",
    "state_dir",
    "replicas",
    "telemetry",
)
# Within sections that reload: what is read only once. (MCP filter groups and threshold, and
# the scheduler's policy, grace and tick, are applied by App.reload.)
RESTART_ONLY_NESTED = (
    ("agent", "provider"),
    ("agent", "fallback"),
    ("agent", "max_concurrent_turns"),
    ("mcp", "servers"),
    ("schedules", "enabled"),
    ("schedules", "max_jobs_per_conversation"),
    ("web", "enabled"),
)
# ``delivery`` is read by the adapter when it starts, like its platform keys.
_COMMON_FIELDS = frozenset(ChannelCommon.model_fields) - {"delivery"}


@dataclass(frozen=True, slots=True, kw_only=True)
class DaemonOptions:
    """How ``hatchway run`` was asked to behave."""

    config_path: Path | None
    #: ``--state-dir``: the state folder, over ``HATCHWAY_STATE_DIR`` and ``state_dir``
    state_dir: str | None = None
    drain_timeout_s: float = 30.0
    ready_timeout_s: float = 30.0


def restart_only_changes(old: Settings, new: Settings) -> list[str]:
    """Dotted keys that differ between ``old`` and ``new`` but are only read at start."""
    changed = [key for key in RESTART_ONLY if getattr(old, key) != getattr(new, key)]
    changed += [
        f"{section}.{key}"
        for section, key in RESTART_ONLY_NESTED
        if getattr(getattr(old, section), key) != getattr(getattr(new, section), key)
    ]
    before = {(k, a): c for k, a, c in old.channels.all()}
    after = {(k, a): c for k, a, c in new.channels.all()}
    for kind, alias in sorted(before.keys() | after.keys()):
        a, b = before.get((kind, alias)), after.get((kind, alias))
        if a is None or b is None or a.enabled != b.enabled or _platform(a) != _platform(b):
            changed.append(f"channels.{kind}.{alias}")
    return changed


def _platform(config: ChannelCommon) -> dict[str, object]:
    """The adapter's own settings (tokens, URLs, modes): everything but the access fields."""
    return {k: v for k, v in config.model_dump().items() if k not in _COMMON_FIELDS}


def provider_fields(settings: Settings) -> dict[str, object]:
    """The ``daemon_ready`` fields naming the provider in use: its name, kind, model,
    endpoint and tool mode, and the fallbacks (each in a few words) when there are any."""
    chain = describe_chain(settings)
    if not chain:
        return {}
    primary = chain[0]
    fields: dict[str, object] = {
        "provider": primary.name,
        "provider_kind": primary.kind,
        "model": primary.model,
        "endpoint": primary.endpoint,
        "tool_mode": primary.tool_mode,
    }
    if len(chain) > 1:
        fields["fallback"] = [summary.text() for summary in chain[1:]]
    return fields


def status_line(health: Mapping[str, ChannelHealth]) -> str:
    """``ready: N channels`` when all are connected, else ``degraded: …`` naming the rest."""
    down = {n: h for n, h in sorted(health.items()) if h.state is not HealthState.CONNECTED}
    total = len(health)
    if not down:
        return f"ready: {total} channel{'s' if total != 1 else ''}"
    parts = [
        f"{n} {h.state.value}" + (f" ({h.detail})" if h.detail else "") for n, h in down.items()
    ]
    return f"degraded: {total - len(down)}/{total} channels connected; " + "; ".join(parts)


def warnings_of(settings: Settings) -> list[str]:
    """What works but is probably not what the operator wants (logged at start, listed by
    ``/readyz``, shown on the console's health page): the demo model answering a team."""
    warning = demo_model_warning(settings)
    return [] if warning is None else [warning]


class Daemon:
    """One run of the daemon; :meth:`run` returns the process exit code."""

    def __init__(
        self,
        settings: Settings,
        options: DaemonOptions,
        *,
        notifier: SystemdNotifier,
        metrics: Metrics | None = None,
        deadline: StopDeadline | None = None,
    ) -> None:
        self.settings = settings
        self.options = options
        self.notifier = notifier
        self.deadline = deadline
        self.metrics = metrics or Metrics()
        self.server = HttpServer(settings.server)
        self._signals: asyncio.Queue[signal.Signals] = asyncio.Queue()

    async def run(self) -> int:
        self._install_signal_handlers()
        self.notifier.status("starting")
        try:
            async with _owned(watchdog_pings(self.notifier), "watchdog"):
                return await self._lifecycle()
        finally:
            self._remove_signal_handlers()
            self.notifier.close()

    async def _lifecycle(self) -> int:
        deferred = defer_provider(self.settings)
        provider = MeteredProvider(deferred, self.metrics)
        app = App(
            self.settings,
            provider=provider,
            web_app=self.server.app,
            metrics=self.metrics,
            config_file=self.options.config_path,
        )
        routes = HealthRoutes(app, self.metrics, warnings=lambda: warnings_of(app.settings))
        for warning in warnings_of(self.settings):
            log.warning("daemon_warning", warning=warning)
        add_health_routes(self.server.app, routes)
        own_routes = len(self.server.app.router.routes())
        await app.start()
        try:
            await self._serve_http(own_routes)
            self.metrics.track(app)
            await self._wait_for_channels(app)
            status = status_line(app.channel_health())
            self.notifier.ready(status)
            log.info("daemon_ready", status=status, **provider_fields(self.settings))
            async with (
                _owned(self._refresh_status(app, status), "status"),
                _owned(_warm_up(deferred), "provider-warm"),
            ):
                await self._handle_signals_until_stop(app)
            if self.deadline is not None:
                self.deadline.arm()
            routes.draining = True
            await self._drain(app)
        finally:
            await app.stop(drain_timeout_s=0)
            await self.server.aclose()
        self.notifier.status("stopped")
        log.info("daemon_stopped")
        return 0

    async def _serve_http(self, own_routes: int) -> None:
        """Listen when ``[server]`` is enabled or the App added routes: an adapter's
        (webhooks) or the web console's (``[web] enabled``)."""
        adapter_routes = len(self.server.app.router.routes()) > own_routes
        if self.settings.server.enabled or adapter_routes:
            await self.server.start()

    async def _wait_for_channels(self, app: App) -> None:
        """Until every channel is connected, one can never be, a signal arrives, or
        ``ready_timeout_s`` passes."""
        try:
            async with asyncio.timeout(self.options.ready_timeout_s):
                while self._signals.empty():
                    states = [h.state for h in app.channel_health().values()]
                    if all(s is HealthState.CONNECTED for s in states):
                        return
                    if any(s in (HealthState.FAILED, HealthState.STOPPED) for s in states):
                        return
                    await asyncio.sleep(READY_POLL_S)
        except TimeoutError:
            log.warning("channels_not_ready", status=status_line(app.channel_health()))

    async def _refresh_status(self, app: App, status: str) -> None:
        """Keep systemd's STATUS line in step with channel health."""
        while True:
            await asyncio.sleep(STATUS_REFRESH_S)
            current = status_line(app.channel_health())
            if current != status:
                status = current
                self.notifier.status(status)
                log.info("daemon_status", status=status)

    async def _handle_signals_until_stop(self, app: App) -> None:
        while True:
            received = await self._signals.get()
            if received is signal.SIGHUP:
                await self._reload(app)
                continue
            log.info("shutdown_requested", signal=received.name)
            return

    async def _reload(self, app: App) -> None:
        self.notifier.reloading()
        path = self.options.config_path
        try:
            settings, _ = await asyncio.to_thread(locate, path, self.options.state_dir)
            restart_needed = restart_only_changes(app.settings, settings)
            app.reload(settings)
        except HatchwayError as exc:
            self.metrics.reloads.labels(result="failed").inc()
            log.error("config_reload_failed", path=str(path), error=str(exc))
        else:
            self.metrics.reloads.labels(result="applied").inc()
            log.info("config_reloaded", path=str(path), needs_restart=restart_needed)
        self.notifier.reloaded(status_line(app.channel_health()))

    async def _drain(self, app: App) -> None:
        running, queued = app.turn_load()
        self.notifier.stopping(f"draining: {running} running turns")
        log.info(
            "drain_started", running=running, queued=queued, timeout_s=self.options.drain_timeout_s
        )
        drain = asyncio.create_task(app.drain(self.options.drain_timeout_s))
        async with _owned(self._next_stop_signal(), "second-signal") as second:
            try:
                await asyncio.wait({drain, second}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not drain.done():
                    drain.cancel()
                    # asyncio.wait, not a suppressed await: a cancellation of this task while
                    # it waits must propagate, not be taken for the drain's
                    await asyncio.wait({drain})
                    log.info("drain_shortened")
        if not drain.cancelled():
            log.info("drain_finished", all_turns_finished=drain.result())

    async def _next_stop_signal(self) -> None:
        while (await self._signals.get()) is signal.SIGHUP:
            log.info("reload_ignored_while_draining")

    def _install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self._signals.put_nowait, sig)

    def _remove_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.remove_signal_handler(sig)


@contextlib.asynccontextmanager
async def _owned(coro: Coroutine[None, None, None], name: str) -> AsyncIterator[asyncio.Task[None]]:
    """Run ``coro`` as a task for the duration of the block; cancel and await it after."""
    task = asyncio.create_task(coro, name=name)
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.wait({task})  # a cancellation of the caller propagates from here
        if not task.cancelled():
            task.result()  # the task's own error, if it failed


def _import_all(modules: tuple[str, ...]) -> None:
    """Import ``modules`` (run in a worker thread, off the event loop)."""
    for name in modules:
        importlib.import_module(name)


async def _warm_up(provider: DeferredProvider) -> None:
    """After READY: build the provider, import what a turn needs, settle the collector.

    One full collection frees start-up's garbage; ``gc.freeze()`` moves what is left
    (modules, settings, SDK types) out of the collector's way, so a full collection in the
    middle of a turn does not walk it again (a ~150 ms pause seen in long benchmarks); then
    the collector, off since ``hatchway run`` began, is switched back on, even if this task
    is cancelled (a stop during warm-up)."""
    try:
        await provider.warm()
        await asyncio.to_thread(_import_all, AFTER_READY_IMPORTS)
        settle_memory()
    finally:
        gc.enable()


#: The youngest generation's threshold once start-up is over (Python's default: 700). The
#: collector runs when the tracked objects allocated, less those freed, pass it: a burst of
#: conversations, each holding its tasks, coroutines and futures until its reply, passed 700
#: over a hundred times per 1,000 turns, each collection walking the turns in flight, about
#: a tenth of the event loop's CPU (docs/performance.md). Objects that die young are freed by
#: their reference counts, not by the collector; what this delays is only the freeing of
#: reference cycles, at most this many objects' worth.
YOUNG_GENERATION_THRESHOLD = 5_000


def settle_memory() -> None:
    """One full collection, then ``gc.freeze()``: what start-up left alive (modules,
    settings, SDK types, caches) is kept out of every later collection; and from then on the
    youngest generation is collected every :data:`YOUNG_GENERATION_THRESHOLD` objects. The
    daemon calls it once warm-up is done; ``bench/throughput.py`` calls it after its warm-up
    round to measure the same steady state."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, older, oldest)


async def run_daemon(options: DaemonOptions) -> int:
    """Load the config, set up logging and sd_notify, and run until stopped."""
    from bot.ops.logs import configure_logging

    settings, location = locate(options.config_path, options.state_dir)
    configure_logging(settings.logging.level, settings.logging.format)
    log.info("state_location", folder=str(location.folder), source=location.origin())
    notifier = SystemdNotifier.from_environ(os.environ, unset=True)
    # the whole process's last resort, never disarmed: it also covers the event loop's
    # teardown after Daemon.run returns
    deadline = StopDeadline(options.drain_timeout_s + CLOSE_BUDGET_S)
    return await Daemon(settings, options, notifier=notifier, deadline=deadline).run()
