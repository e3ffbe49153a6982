"""The agents' shared bundle: what every agent's turns use in common, built at start and
built again from reloaded settings.

The pipeline's settings and its receipt signer both come from ``[agent]``, so a reload
replaces them together; the store, the approval gate, the hooks, the MCP catalog and the
usage meter stay those of the start (their scheduler and path locks are the process's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from bot.agent.bundles import streams
from bot.agent.turn import AgentBundle, DynamicTools
from bot.approval.gate import ApprovalGate
from bot.config import Settings
from bot.providers.base import Provider
from bot.store import Store
from bot.tools.hooks import ToolHooks
from bot.tools.receipt import ReceiptSigner
from bot.tools.services import PipelineServices
from bot.tools.spec import ToolSpec
from bot.usage.meter import UsageMeter


def streaming_agents(settings: Settings) -> frozenset[str]:
    """The agents whose primary provider streams its answers."""
    return frozenset(name for name in settings.agent_names() if streams(settings, name))


def shared_bundle(
    settings: Settings,
    *,
    provider: Provider,
    store: Store,
    gate: ApprovalGate,
    hooks: ToolHooks,
    tools: Sequence[ToolSpec],
    dynamic: DynamicTools | None,
    usage: UsageMeter,
    replica_id: str | None = None,
) -> AgentBundle:
    """The bundle every agent's own is built from (:func:`bot.agent.bundles.build_bundles`)."""
    return AgentBundle(
        provider=provider,
        services=PipelineServices(
            settings=settings.agent,
            store=store,
            gate=gate,
            hooks=hooks,
            signer=ReceiptSigner.from_settings(settings.agent),
            replica_id=replica_id,
        ),
        tools=tools,
        dynamic=dynamic,
        usage=usage,
    )


def reloaded_bundle(
    current: AgentBundle, settings: Settings, tools: Sequence[ToolSpec]
) -> AgentBundle:
    """``current`` with the reloaded ``[agent]`` settings, its signer and ``tools``."""
    return dataclasses.replace(
        current,
        services=dataclasses.replace(
            current.services,
            settings=settings.agent,
            signer=ReceiptSigner.from_settings(settings.agent),
        ),
        tools=tools,
    )
