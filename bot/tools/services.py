"""Pipeline services: what every turn's :class:`~bot.tools.pipeline.ToolPipeline` of an agent
is given, as opposed to what it decides.

They are built once per agent by the composition root (:mod:`bot.app`) and carried by the
agent's :class:`~bot.agent.turn.AgentBundle` as its ``services``, which every turn hands to
its pipeline as they are (the scheduler and the path locks are built once per process,
shared by every turn); a turn never changes them. Keeping them here leaves the pipeline
module to the one thing only it does: ordering the stages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.approval.gate import ApprovalGate
from bot.config import AgentConfig
from bot.observe import LoggingObserver, ToolObserver
from bot.store import Store
from bot.tools.execution import RetryPolicy
from bot.tools.file_locks import PathLocks
from bot.tools.hooks import ToolHooks
from bot.tools.receipt import ReceiptSigner
from bot.tools.scheduler import ToolScheduler


@dataclass(frozen=True, slots=True, kw_only=True)
class PipelineServices:
    """What the pipeline uses that is stable per agent (scheduler and locks are shared by
    every turn of the process)."""

    store: Store
    gate: ApprovalGate
    settings: AgentConfig
    hooks: ToolHooks = field(default_factory=ToolHooks)
    observer: ToolObserver = field(default_factory=LoggingObserver)
    scheduler: ToolScheduler = field(default_factory=ToolScheduler)
    locks: PathLocks = field(default_factory=PathLocks)
    signer: ReceiptSigner | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    #: The replica a parked turn's row names (None: one process).
    replica_id: str | None = None
