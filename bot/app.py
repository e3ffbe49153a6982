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
:data:`~bot.wiring.parts.CLOSE_TIMEOUT_S` (cancelling again any part that swallowed its
cancellation), leave the replicas (the leases it held released at once), close the provider
and the store. How each piece is made lives in :mod:`bot.wiring`; this module says what a
running hatchway is made of and in which order.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import structlog

from bot.agent.bundles import ProviderPool, build_bundles
from bot.agent.runner import AgentRunner
from bot.approval.findings import approval_findings
from bot.approval.reasons import RuntimeReason
from bot.approval.service import ApprovalService
from bot.attachments.ingest import FOLDER as ATTACHMENTS_FOLDER
from bot.attachments.ingest import AttachmentIngest
from bot.attachments.retention import prune_periodically
from bot.channel import Channel, ChannelHealth, HealthState
from bot.channel_host import SOLE_PROCESS, AdapterHost
from bot.channel_registry import ChannelContext
from bot.config import Settings
from bot.context import ConversationContext
from bot.envelope import ChannelRef
from bot.errors import StorageError, StorageUnavailable
from bot.gateway import Gateway
from bot.gateway.access import AccessPolicy
from bot.gateway.parked_config import ENDS_THE_TURN, ParkedConfigCheck
from bot.gateway.resumption import Resumptions, settle_at_start
from bot.outbox import ChannelOutbox
from bot.providers.base import Provider
from bot.providers.factory import build_provider
from bot.schedules.book import ScheduleBook
from bot.schedules.retention import RetentionJob
from bot.schedules.runner import ScheduleRunner
from bot.telemetry.setup import install as start_traces
from bot.telemetry.setup import shutdown as stop_traces
from bot.tools.builtin.scope_changes import announce_scope_changes
from bot.tools.builtin.workspace import workspace_root
from bot.tools.spec import ToolSpec
from bot.transcription.voice import VoiceNotes
from bot.usage.meter import UsageMeter
from bot.wiring.agents import reloaded_bundle, shared_bundle, streaming_agents
from bot.wiring.channels import build_channels, run_channel, with_default_channel
from bot.wiring.metering import metered_gate, metered_provider, tool_hooks
from bot.wiring.parts import stop_parts
from bot.wiring.replicas import join_replicas, liveness_for
from bot.wiring.storage import open_store
from bot.wiring.tools import attachment_workspace, build_mcp, build_tools

if TYPE_CHECKING:
    from aiohttp import web

    from bot.approval.gate import ApprovalGate
    from bot.metrics import Metrics
    from bot.replicas import LeaseKeeper
    from bot.webconsole import Console

log = structlog.get_logger(__name__)

# Adapters index the approval cards they post (``card:…`` rows of channel_state) to map a
# reply or reaction back to its approval. A restart expires every pending approval (of the
# replicas gone), so an old entry only serves to answer a late click; a week of them is kept.
CARD_INDEX_KEEP_S = 7 * 24 * 3600.0


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
        turn_finished: Callable[[str], None] | None = None,
    ) -> None:
        self.settings = with_default_channel(settings, given=bool(channels))
        #: told each turn's status value besides the metrics (``hatchway chat``'s exit status)
        self._turn_finished = turn_finished
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
            self.store = await open_store(settings)
        except BaseException:
            await self._stop_traces()
            raise
        try:
            self.keeper = await join_replicas(self.store, settings, self._clock)
            liveness = liveness_for(self.keeper, self.store, settings, self._clock)
            self.provider = self._given_provider or build_provider(settings)
            self.channels = build_channels(
                settings,
                ChannelContext(store=self.store, web_app=self._web_app),
                self._given_channels,
            )
            self.approvals = ApprovalService(
                settings, self.store, self.channel_for, liveness=liveness
            )
            for finding in await approval_findings(settings):
                log.warning(
                    "approval_config_warning",
                    channel=finding.channel,
                    problem=finding.problem,
                    fix=finding.fix,
                )
            self.access = AccessPolicy(settings.channels, self.store)
            self.mcp = build_mcp(settings)
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
            self._shared_bundle = shared_bundle(
                settings,
                provider=self.provider,
                store=self.store,
                gate=self._gate(),
                hooks=tool_hooks(self.metrics),
                tools=self.tools,
                dynamic=self.mcp,
                usage=self.usage,
                replica_id=None if liveness is None else liveness.replica_id,
            )
            self._providers = ProviderPool(settings, given=self.provider, wrap=self._metered)
            self.attachments = AttachmentIngest(
                store=self.store,
                config=lambda: self.settings.attachments,
                folder=Path(settings.state_dir) / ATTACHMENTS_FOLDER,
                workspace_for=lambda turn: attachment_workspace(self.settings, turn),
            )
            self.context = ConversationContext(store=self.store, settings=lambda: self.settings)
            self.agent = AgentRunner(
                bundles=build_bundles(settings, self._shared_bundle, self._providers),
                channel_for=self.channel_for,
                streams=streaming_agents(settings),
                turn_finished=self._turn_hook(),
                excluded_for=self._channel_excluded_tools,
                attachments=self.attachments,
                context=self.context,
                voice=VoiceNotes(store=self.store, settings=lambda: self.settings),
            )
            self.gateway = Gateway(
                settings=settings,
                store=self.store,
                access=self.access,
                run_turn=self.agent,
                channel_for=self.channel_for,
                approvals=self._gate(),
                replica=liveness,
                context=self.context,
                reply_undecided=None if self.metrics is None else self.metrics.reply_undecided,
                tools=self.tool_specs,
                close_parked=self.approvals.close_parked,
            )
            self.resumptions = Resumptions(
                store=self.store,
                enqueue=self.gateway.resume,
                expire_due=self.approvals.expire_parked_due,
                show_outcome=self.approvals.show_outcome,
                owner=None if liveness is None else liveness.replica_id,
                live=None if liveness is None else liveness.live_replicas,
                expire_changed=lambda: self._expire_parked_changed(at_start=False),
                owns=None if liveness is None else self.gateway.owns,
            )
            self.approvals.on_unwaited(self.resumptions.nudge)
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
        try:
            await asyncio.sleep(0)  # let the gateway's task group open before recovery
            # parked turns keep their cards open across the restart (bot.gateway.resumption)
            await settle_at_start(
                self.store,
                owner=None if liveness is None else liveness.replica_id,
                live=None if liveness is None else frozenset(await liveness.live_replicas()),
                owns=None if liveness is None else self.gateway.owns,
            )
            # a parked turn whose tool, agent or channel was removed while stopped expires
            await self._expire_parked_changed(at_start=True)
            await self.approvals.expire_pending(RuntimeReason.RESTART)
            pruned = await self.store.channel_state.prune("card:", older_than_s=CARD_INDEX_KEEP_S)
            if pruned:
                log.info("card_index_pruned", rows=pruned)
            await self.gateway.recover(now=self._clock())
        except BaseException:
            # The parts run already (a channel may have started a turn): a start cut short
            # here, by a failure or a cancellation (Ctrl-C while ``hatchway chat`` starts),
            # stops them and closes the store as a stop would; the caller stops only an app
            # whose start returned.
            await self.stop(drain_timeout_s=0.0)
            raise
        log.info("app_started", channels=sorted(self.channels))

    def _turn_hook(self) -> Callable[[str], None] | None:
        """What is told each finished turn's status: the metrics, the caller's hook, both."""
        hooks = [
            hook
            for hook in (
                None if self.metrics is None else self.metrics.turn_finished,
                self._turn_finished,
            )
            if hook is not None
        ]
        if len(hooks) <= 1:
            return hooks[0] if hooks else None

        def both(status: str) -> None:
            for hook in hooks:
                hook(status)

        return both

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
        """The approval service, metered when metrics are kept (the daemon)."""
        return metered_gate(self.approvals, self.metrics)

    def _metered(self, provider: Provider) -> Provider:
        """An agent's provider chain, timed like the default one when metrics are kept."""
        return metered_provider(provider, self.metrics)

    def _build_tools(self, settings: Settings) -> list[ToolSpec]:
        if self._given_tools is not None:
            return self._given_tools
        return build_tools(
            settings,
            store=self.store,
            outbox=ChannelOutbox(lambda: self.settings, self.channel_for),
            book=self.schedule_book,
            clock=self._clock,
            config_file=self._config_file,
        )

    def _channel_excluded_tools(self, ref: ChannelRef) -> Sequence[str]:
        """The tools the channel's configuration hides (read at each turn: a reload applies
        to the next turn)."""
        config = self.settings.channels.get(ref.kind, ref.alias)
        return () if config is None else config.excluded_tools

    async def _expire_parked_changed(self, *, at_start: bool) -> int:
        """Expire the cards of the parked turns that no longer fit the configuration in
        force (:mod:`bot.gateway.parked_config`)."""
        check = ParkedConfigCheck(
            settings=lambda: self.settings,
            bundles=lambda: self.agent.bundles,
            is_member=self.access.is_member,
        )
        return await self.approvals.expire_parked_changed(
            functools.partial(check.reason, at_start=at_start), ends=ENDS_THE_TURN
        )

    def channel_for(self, ref: ChannelRef) -> Channel | None:
        return self.channels.get(str(ref))

    async def _supervise(self) -> None:
        async with asyncio.TaskGroup() as group:

            def start(name: str, coro: Coroutine[object, object, None]) -> None:
                self._parts[name] = group.create_task(coro, name=name)

            if self.keeper is not None:
                start("replicas", self.keeper.run())
                start("approvals", self.approvals.watch())
            start("approval_reminders", self.approvals.remind())
            start("parked_turns", self.resumptions.run())
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
                start(f"channel:{name}", run_channel(name, channel, self.host))

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

    def tool_specs(self) -> list[ToolSpec]:
        """The tools a turn could call now: the built-in ones, then the MCP servers' (the
        console's *Explain* page and ``/why`` judge calls of any of them)."""
        specs = list(self.tools)
        names = {spec.name for spec in specs}
        dynamic = self.mcp.specs() if self.mcp is not None else ()
        return specs + [spec for spec in dynamic if spec.name not in names]

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
        shared = reloaded_bundle(self._shared_bundle, settings, tools)
        bundles = build_bundles(settings, shared, self._providers)
        self.settings = settings
        self.tools = tools
        self._shared_bundle = shared
        self.agent.update(bundles, streams=streaming_agents(settings))
        self.access.update_settings(settings.channels)
        self.approvals.update_settings(settings)
        self.gateway.update_settings(settings)
        if self.mcp is not None:
            self.mcp.update_settings(settings.mcp)
        self.scheduler.update_settings(settings.schedules)
        self.usage.update(settings)
        # a parked turn's card that needs a tool, agent or channel now gone expires, naming it
        self.resumptions.reloaded()

    async def drain(self, timeout_s: float) -> bool:
        """Stop taking messages and let running turns finish (:meth:`Gateway.drain`).
        Pending approvals expire first (reason ``shutdown``): a turn waiting on one ends at
        once instead of holding the drain. True when every turn finished on its own."""
        await self._close_approvals()
        return await self.gateway.drain(timeout_s)

    async def _close_approvals(self) -> None:
        """Expire the pending approvals (:meth:`drain`). A database that cannot be read
        then does not stop the stop: the rows stay pending, and the next start expires them
        (reason ``restart``)."""
        try:
            await self.approvals.close()
        except StorageError as exc:
            log.warning("approvals_not_expired_at_stop", error=str(exc))

    async def stop(self, *, drain_timeout_s: float = 30.0) -> None:
        if self._stopped:
            return
        self._stopped = True
        drained = await self.drain(drain_timeout_s)
        log.info("app_stopping", drained=drained)
        await self._close_approvals()
        try:
            if self._runner is not None:
                await stop_parts(self._runner, self._parts)
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
