"""The composition root: settings in, a running bot out.

:class:`App` opens the store, builds the provider, the approval service, the access policy,
the tool catalog, the agent's turn runner (:class:`~bot.agent.runner.AgentRunner`) and the
gateway, creates the configured channel adapters, and supervises their tasks. Adapters run
with an :class:`~bot.channel_host.AdapterHost`: messages to the gateway, approval answers to
the approval service. Tests build an ``App`` with an injected provider and pre-built
channels; ``hatchway run`` and ``hatchway chat`` build one from the config file.

Start-up order: store → the replica's lease keeper joined (PostgreSQL only: several
replicas share the database) → provider → channels (objects only) → approvals → access → tools →
turn runner → gateway → the web console (mounted on the daemon's HTTP application when
``[web] enabled``, :mod:`bot.webconsole`; the App is its ``ConsoleHost``) → tasks (gateway,
channels, the console's) → expire approvals left pending by a previous run → recover
unfinished inbox entries (with several replicas: only the approvals and the entries of
replicas that are gone, :mod:`bot.approval.shared`, :mod:`bot.gateway.handover`). Shutdown
reverses it: drain the gateway, expire pending approvals (this replica's), cancel the
long-running parts (channels, MCP servers, scheduler, gateway) and wait for them at most
:data:`CLOSE_TIMEOUT_S` (cancelling again any part that swallowed its cancellation), leave
the replicas (the leases it held released at once), close the provider and the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import structlog

from bot.agent.bundles import ProviderPool, build_bundles, streams
from bot.agent.runner import AgentRunner
from bot.agent.turn import AgentBundle
from bot.approval.findings import approval_findings
from bot.approval.reasons import RuntimeReason
from bot.approval.service import ApprovalService
from bot.attachments.ingest import FOLDER as ATTACHMENTS_FOLDER
from bot.attachments.ingest import AttachmentIngest
from bot.attachments.retention import prune_periodically
from bot.backoff import Backoff, BackoffPolicy, cancel_requested, sleep_before_retry
from bot.channel import Channel, ChannelHealth, HealthState
from bot.channel_host import SOLE_PROCESS, AdapterHost
from bot.channel_registry import ChannelContext, create_channel
from bot.config import ChannelsConfig, Settings
from bot.envelope import ChannelRef
from bot.errors import ChannelAuthError, StorageUnavailable
from bot.gateway import Gateway
from bot.gateway.access import AccessPolicy
from bot.outbox import ChannelOutbox
from bot.providers.base import Provider
from bot.providers.factory import build_provider
from bot.replicas import LeaseKeeper
from bot.schedules.book import ScheduleBook
from bot.schedules.retention import RetentionJob
from bot.schedules.runner import ScheduleRunner
from bot.schedules.tools import schedule_tools
from bot.store import Store
from bot.store.liveness import Liveness
from bot.telemetry.setup import install as start_traces
from bot.telemetry.setup import shutdown as stop_traces
from bot.tools.builtin import builtin_tools
from bot.tools.builtin.sandbox import Confinement
from bot.tools.builtin.scope_changes import announce_scope_changes
from bot.tools.builtin.workspace import Workspace
from bot.tools.hooks import ToolHooks
from bot.tools.receipt import ReceiptSigner
from bot.tools.services import PipelineServices
from bot.tools.spec import ToolContext, ToolEnvironmentError, ToolSpec
from bot.turn import TurnIdentity
from bot.usage.meter import UsageMeter

if TYPE_CHECKING:
    from aiohttp import web

    from bot.approval.gate import ApprovalGate
    from bot.mcp.catalog import McpCatalog
    from bot.metrics import Metrics
    from bot.webconsole import Console

log = structlog.get_logger(__name__)

# Adapters index the approval cards they post (``card:…`` rows of channel_state) to map a
# reply or reaction back to its approval. A restart expires every pending approval (of the
# replicas gone), so an old entry only serves to answer a late click; a week of them is kept.
CARD_INDEX_KEEP_S = 7 * 24 * 3600.0
#: Restarts of an adapter that crashed (a bug, not a network error: adapters reconnect
#: themselves with their own reconnect_* keys).
CHANNEL_RESTART = BackoffPolicy(initial_s=1.0, max_s=60.0)
#: How long the long-running parts (channels, MCP servers, scheduler, gateway) get to stop
#: once cancelled, after the drain. MCP servers need the most: up to ~6.5 s for one that
#: ignores its closed stdin and SIGTERM (see bot.mcp.connection.STOP_GRACE_S).
CLOSE_TIMEOUT_S = 10.0
#: A part still running this long after its cancellation is cancelled again: a library that
#: caught the cancellation and went on (a reconnect loop of its own) gets another one.
CANCEL_AGAIN_S = 2.0


def with_default_channel(settings: Settings, *, given: bool = False) -> Settings:
    """With no channel configured (and none given), the console is the embedded default:
    it is added to the settings so that access policy and approvals see it too."""
    if given or any(cfg.enabled for _, _, cfg in settings.channels.all()):
        return settings
    channels = ChannelsConfig.embedded_console()
    return settings.model_copy(update={"channels": channels})


def workspace_root(settings: Settings) -> Path:
    """The tools' workspace root: ``tools.workspace.path`` under the state directory."""
    return Path(settings.state_dir) / settings.tools.workspace.path


def _streams(settings: Settings) -> frozenset[str]:
    """The agents whose primary provider streams its answers."""
    return frozenset(name for name in settings.agent_names() if streams(settings, name))


class App:
    """A running hatchway: use ``async with App(settings) as app`` or start()/stop()."""

    def __init__(
        self,
        settings: Settings,
        *,
        provider: Provider | None = None,
        channels: Mapping[str, Channel] | None = None,
        tools: list[ToolSpec] | None = None,
        web_app: web.Application | None = None,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.time,
        config_file: Path | None = None,
        span_exporter: object | None = None,
    ) -> None:
        self.settings = with_default_channel(settings, given=bool(channels))
        #: where spans go when ``[telemetry]`` is on, instead of OTLP (tests, the bench)
        self._span_exporter = span_exporter
        self._tracing = False
        self._config_file = config_file  # hidden from shell's sandbox with the state
        self._clock = clock  # wall clock of the scheduler (tests control it)
        self.metrics = metrics
        self._given_provider = provider
        self._given_channels = dict(channels or {})
        self._given_tools = tools
        self._web_app = web_app
        self.channels: dict[str, Channel] = {}
        self._runner: asyncio.Task[None] | None = None
        self._parts: dict[str, asyncio.Task[None]] = {}
        self._channel_done: dict[str, asyncio.Event] = {}
        self._stopped = False
        self.console: Console | None = None
        #: this process among the replicas of a shared database (None with SQLite)
        self.keeper: LeaseKeeper | None = None

    # -- lifecycle --------------------------------------------------------------------

    async def start(self) -> None:
        settings = self.settings
        # first: a missing package of the otel extra stops the start before anything opens
        self._tracing = start_traces(settings.telemetry, exporter=self._span_exporter)
        try:
            self.store = await Store.open_configured(settings)
        except BaseException:
            await self._stop_traces()
            raise
        try:
            self.keeper = await self._join_replicas(settings)
            liveness = self._liveness(settings)
            self.provider = self._given_provider or build_provider(settings)
            self._build_channels()
            self.approvals = ApprovalService(
                settings, self.store, self.channel_for, liveness=liveness
            )
            for finding in approval_findings(settings):
                log.warning(
                    "approval_config_warning",
                    channel=finding.channel,
                    problem=finding.problem,
                    fix=finding.fix,
                )
            self.access = AccessPolicy(settings.channels, self.store)
            self.mcp = self._build_mcp(settings)
            self.schedule_book = ScheduleBook(
                self.store.schedules,
                max_per_conversation=settings.schedules.max_jobs_per_conversation,
            )
            self.tools = self._build_tools(settings)
            if self._given_tools is None:
                await announce_scope_changes(
                    settings.tools, workspace=workspace_root(settings), notes=self.store.memory
                )
            self.usage = UsageMeter(
                settings,
                self.store,
                on_record=None if self.metrics is None else self.metrics.usage_recorded,
            )
            self._shared_bundle = AgentBundle(
                provider=self.provider,
                services=PipelineServices(
                    settings=settings.agent,
                    store=self.store,
                    gate=self._gate(),
                    hooks=ToolHooks()
                    if self.metrics is None
                    else ToolHooks(after=(self.metrics.after_tool_call,)),
                    signer=ReceiptSigner.from_settings(settings.agent),
                ),
                tools=self.tools,
                dynamic=self.mcp,
                usage=self.usage,
            )
            self._providers = ProviderPool(settings, given=self.provider, wrap=self._metered)
            self.attachments = AttachmentIngest(
                store=self.store,
                config=lambda: self.settings.attachments,
                folder=Path(settings.state_dir) / ATTACHMENTS_FOLDER,
                workspace_for=self._attachment_workspace,
            )
            self.agent = AgentRunner(
                bundles=build_bundles(settings, self._shared_bundle, self._providers),
                channel_for=self.channel_for,
                streams=_streams(settings),
                turn_finished=None if self.metrics is None else self.metrics.turn_finished,
                excluded_for=self._channel_excluded_tools,
                attachments=self.attachments,
            )
            self.gateway = Gateway(
                settings=settings,
                store=self.store,
                access=self.access,
                run_turn=self.agent,
                channel_for=self.channel_for,
                approvals=self._gate(),
                replica=liveness,
            )
            self.host = AdapterHost(
                messages=self.gateway,
                approvals=self.approvals,
                replica=SOLE_PROCESS if self.keeper is None else self.keeper,
            )
            self.console = self._mount_console(settings)
            self.scheduler = ScheduleRunner(
                book=self.schedule_book,
                deliver=self.gateway.deliver,
                settings=settings.schedules,
                clock=self._clock,
                replica_id=None if liveness is None else liveness.replica_id,
            )
        except BaseException:
            if self.keeper is not None:
                await self.keeper.leave()
            await self.store.aclose()
            await self._stop_traces()
            raise
        self._runner = asyncio.create_task(self._supervise(), name="hatchway-app")
        await asyncio.sleep(0)  # let the gateway's task group open before recovery
        await self.approvals.expire_pending(RuntimeReason.RESTART)
        pruned = await self.store.channel_state.prune("card:", older_than_s=CARD_INDEX_KEEP_S)
        if pruned:
            log.info("card_index_pruned", rows=pruned)
        await self.gateway.recover(now=self._clock())
        log.info("app_started", channels=sorted(self.channels))

    async def _join_replicas(self, settings: Settings) -> LeaseKeeper | None:
        """The lease keeper, joined, when several replicas may share the database
        (PostgreSQL, ``[storage] url``); None with SQLite: one process, nothing of it runs
        (roles are this process's at once, and nothing is written for them)."""
        if not settings.storage.url:
            return None
        keeper = LeaseKeeper(self.store.replicas, settings.replicas, clock=self._clock)
        await keeper.join()
        return keeper

    def _liveness(self, settings: Settings) -> Liveness | None:
        """Which replicas are alive, for the parts that settle what a gone one left (its
        sessions, its pending approvals); None with SQLite. A replica counts as gone once
        its heartbeat is older than the lease TTL plus the clock skew allowed, so a live
        one whose clock is behind is never taken for gone."""
        if self.keeper is None:
            return None
        replicas = settings.replicas
        return Liveness(
            self.store.replicas,
            replica_id=self.keeper.replica_id,
            ttl_s=replicas.lease_ttl_s + replicas.max_clock_skew_s,
            clock=self._clock,
            outage=self.keeper.last_outage,
        )

    def _mount_console(self, settings: Settings) -> Console | None:
        """The web console on the daemon's HTTP application when ``[web]`` enables it (its
        routes make the daemon listen, see bot.ops.daemon); nothing where there is no HTTP
        application (``hatchway chat``). Its templates are loaded only then."""
        if self._web_app is None or not settings.web.enabled:
            return None
        from bot.webconsole import Console

        console = Console(self, clock=self._clock)
        console.mount(self._web_app)
        return console

    def _gate(self) -> ApprovalGate:
        """The approval service, metered when metrics are kept (the daemon). ``bot.metrics``
        loads the Prometheus client, which ``hatchway chat`` does not need."""
        if self.metrics is None:
            return self.approvals
        from bot.metrics import MeteredGate

        return MeteredGate(self.approvals, self.metrics)

    def _metered(self, provider: Provider) -> Provider:
        """An agent's provider chain, timed like the default one when metrics are kept."""
        if self.metrics is None:
            return provider
        from bot.metrics import MeteredProvider

        return MeteredProvider(provider, self.metrics)

    def _build_tools(self, settings: Settings) -> list[ToolSpec]:
        if self._given_tools is not None:
            return self._given_tools
        outbox = ChannelOutbox(lambda: self.settings, self.channel_for)
        tools = builtin_tools(
            settings.tools,
            store=self.store,
            outbox=outbox,
            workspace=workspace_root(settings),
            confinement=Confinement.of(settings, config_file=self._config_file),
        )
        if settings.schedules.enabled:
            tools += schedule_tools(self.schedule_book, allows=outbox.allows, clock=self._clock)
        return tools

    @staticmethod
    def _build_mcp(settings: Settings) -> McpCatalog | None:
        """The MCP catalog, only when a server is configured: the MCP SDK takes about a
        second to import, which a bot without MCP servers should not pay at start-up."""
        if not any(server.enabled for server in settings.mcp.servers.values()):
            return None
        from bot.mcp.catalog import McpCatalog

        return McpCatalog(settings.mcp)

    def _build_channels(self) -> None:
        context = ChannelContext(store=self.store, web_app=self._web_app)
        configured = [
            (kind, alias, cfg) for kind, alias, cfg in self.settings.channels.all() if cfg.enabled
        ]
        for kind, alias, cfg in configured:
            name = f"{kind}.{alias}"
            if name in self._given_channels:
                continue
            self.channels[name] = create_channel(kind, alias, cfg, context)
        self.channels.update(self._given_channels)

    def _channel_excluded_tools(self, ref: ChannelRef) -> Sequence[str]:
        """The tools the channel's configuration hides (read at each turn: a reload applies
        to the next turn)."""
        config = self.settings.channels.get(ref.kind, ref.alias)
        return () if config is None else config.excluded_tools

    def channel_for(self, ref: ChannelRef) -> Channel | None:
        return self.channels.get(str(ref))

    def _attachment_workspace(self, turn: TurnIdentity) -> Path | None:
        """The folder of ``turn``'s workspace that its file tools see (its
        ``tools.workspace.scope`` folder), where the files its message came with are
        saved; None when it cannot be made."""
        config = self.settings.tools.workspace
        root = workspace_root(self.settings)
        workspace = Workspace(
            root=root, allow_sensitive_files=config.allow_sensitive_files, scope=config.scope
        )
        try:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            return workspace.for_call(ToolContext(turn=turn)).real_root()
        except (OSError, ToolEnvironmentError) as exc:
            log.warning("attachment_workspace_unavailable", error=str(exc))
            return None

    async def _supervise(self) -> None:
        async with asyncio.TaskGroup() as group:

            def start(name: str, coro: Coroutine[object, object, None]) -> None:
                self._parts[name] = group.create_task(coro, name=name)

            if self.keeper is not None:
                start("replicas", self.keeper.run())
                start("approvals", self.approvals.watch())
            start("gateway", self.gateway.run())
            start(
                "retention",
                RetentionJob(store=self.store, config=lambda: self.settings.retention).run(),
            )
            start("usage", self.usage.run())
            start(
                "attachments",
                prune_periodically(
                    self.store,
                    config=lambda: self.settings.attachments,
                    folder=self.attachments.folder,
                    clock=self._clock,
                ),
            )
            if self.mcp is not None:
                start("mcp", self.mcp.run())
            if self.console is not None:
                start("web-console", self.console.run())
            if self.settings.schedules.enabled:
                start("schedules", self.scheduler.run())
            for name, channel in self.channels.items():
                self._channel_done[name] = asyncio.Event()
                start(f"channel:{name}", self._run_channel(name, channel))

    async def _run_channel(self, name: str, channel: Channel) -> None:
        """Run one adapter; restart it with jittered backoff when it fails, except on an
        authentication error, which stops it for good (health says why)."""
        backoff = Backoff(CHANNEL_RESTART)
        try:
            while True:
                try:
                    await channel.run(self.host)
                    log.info("channel_finished", channel=name)
                    return
                except ChannelAuthError as exc:
                    log.error("channel_auth_failed", channel=name, error=str(exc))
                    return
                except Exception as exc:
                    if cancel_requested():
                        # the stop, turned into an error by the platform library
                        raise asyncio.CancelledError from exc
                    # Boundary: an adapter crash is logged and the adapter restarted.
                    log.exception("channel_crashed", channel=name, error=type(exc).__name__)
                    await sleep_before_retry(backoff.next_delay())
        finally:
            self._channel_done[name].set()

    async def wait_channel_done(self, name: str) -> None:
        """Wait until the named channel's ``run`` has returned (e.g. console end of input)."""
        await self._channel_done[name].wait()

    def ready(self) -> bool:
        """True when every channel reports CONNECTED."""
        return all(c.health.state is HealthState.CONNECTED for c in self.channels.values())

    # -- operations (daemon, health, metrics) -------------------------------------------

    def channel_health(self) -> dict[str, ChannelHealth]:
        """Each running channel's health, by ``kind.alias``."""
        return {name: channel.health for name, channel in self.channels.items()}

    def turn_load(self) -> tuple[int, int]:
        """(running turns, messages queued behind them)."""
        return self.gateway.active_turns, self.gateway.queue_depth()

    async def check_database(self) -> None:
        """Return when the database accepts a write transaction; StorageError otherwise.
        With several replicas the heartbeat is such a write, every ``heartbeat_s``: the
        keeper's account of it answers (StorageUnavailable while heartbeats fail or none
        succeeded lately), with no trip of its own that a silent database would hold."""
        if self.keeper is not None:
            if (refusal := self.keeper.refusal()) is not None:
                raise StorageUnavailable(refusal)
            return
        await self.store.check_writable()

    async def inbox_counts(self) -> Mapping[str, int]:
        return await self.store.inbox.counts()

    def reload(self, settings: Settings) -> None:
        """Apply a reloaded configuration to every message admitted from now on: access
        (allow-lists, DM/group policy), approvers and approval policy, every agent's
        bundle (profiles, routes, prompt files as read again by the loading) and tool
        settings. Everything new is built first, then swapped in with no ``await`` in
        between, so no message sees half of it; a build error (``HatchwayError``) leaves the
        old configuration in place. Channels, ``[providers]``, storage and the HTTP server
        keep their start-up settings (see :func:`bot.ops.daemon.restart_only_changes`); an
        agent whose chain is new gets it built now."""
        settings = with_default_channel(settings, given=bool(self._given_channels))
        tools = self._build_tools(settings)
        current = self._shared_bundle
        shared = dataclasses.replace(
            current,
            services=dataclasses.replace(
                current.services,
                settings=settings.agent,
                signer=ReceiptSigner.from_settings(settings.agent),
            ),
            tools=tools,
        )
        bundles = build_bundles(settings, shared, self._providers)
        self.settings = settings
        self.tools = tools
        self._shared_bundle = shared
        self.agent.update(bundles, streams=_streams(settings))
        self.access.update_settings(settings.channels)
        self.approvals.update_settings(settings)
        self.gateway.update_settings(settings)
        if self.mcp is not None:
            self.mcp.update_settings(settings.mcp)
        self.scheduler.update_settings(settings.schedules)
        self.usage.update(settings)

    async def drain(self, timeout_s: float) -> bool:
        """Stop taking messages and let running turns finish (:meth:`Gateway.drain`).
        Pending approvals expire first (reason ``shutdown``): a turn waiting on one ends at
        once instead of holding the drain. True when every turn finished on its own."""
        await self.approvals.close()
        return await self.gateway.drain(timeout_s)

    async def stop(self, *, drain_timeout_s: float = 30.0) -> None:
        if self._stopped:
            return
        self._stopped = True
        drained = await self.drain(drain_timeout_s)
        log.info("app_stopping", drained=drained)
        await self.approvals.close()
        try:
            if self._runner is not None:
                await self._stop_parts(self._runner)
        finally:
            if self.keeper is not None:
                # the roles it held are free for the other replicas at once, its row gone
                await self.keeper.leave()
            # nothing uses either any more, and neither uses the other: closed side by side,
            # each even when the other fails (the first error is raised)
            closed = await asyncio.gather(
                self.provider.aclose(),
                self._providers.aclose(),
                self.store.aclose(),
                return_exceptions=True,
            )
            await self._stop_traces()
            log.info("app_stopped")
            for outcome in closed:
                if isinstance(outcome, BaseException):
                    raise outcome

    async def _stop_traces(self) -> None:
        """Export the spans still batched (on a thread: a collector that does not answer
        holds the stop for its export timeout, never the loop) and turn traces off."""
        if self._tracing:
            self._tracing = False
            await asyncio.to_thread(stop_traces)

    async def _stop_parts(self, runner: asyncio.Task[None]) -> None:
        """Cancel the long-running parts and wait for them, at most CLOSE_TIMEOUT_S; a part
        still running is cancelled again every CANCEL_AGAIN_S, and one left at the end is
        named in ``app_stop_incomplete`` (the daemon's stop deadline ends the process)."""
        runner.cancel()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CLOSE_TIMEOUT_S
        while not runner.done() and (left := deadline - loop.time()) > 0:
            await asyncio.wait({runner}, timeout=min(CANCEL_AGAIN_S, left))
            for task in self._parts.values():
                if not task.done() and loop.time() < deadline:
                    task.cancel()
        if not runner.done():
            running = sorted(name for name, task in self._parts.items() if not task.done())
            log.error("app_stop_incomplete", running=running, waited_s=CLOSE_TIMEOUT_S)
            return
        with contextlib.suppress(asyncio.CancelledError):
            runner.result()

    async def __aenter__(self) -> App:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
