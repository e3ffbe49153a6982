"""The metered wrappers of the approval gate, the providers and the tool hooks, when the
daemon keeps metrics.

``bot.metrics`` loads the Prometheus client, which ``hatchway chat`` (no metrics) does not
need: it is imported only where metrics are given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.providers.base import Provider
from bot.tools.hooks import ToolHooks

if TYPE_CHECKING:
    from bot.approval.gate import ApprovalGate
    from bot.metrics import Metrics


def metered_gate(gate: ApprovalGate, metrics: Metrics | None) -> ApprovalGate:
    """The approval gate, metered when metrics are kept (the daemon)."""
    if metrics is None:
        return gate
    from bot.metrics import MeteredGate

    return MeteredGate(gate, metrics)


def metered_provider(provider: Provider, metrics: Metrics | None) -> Provider:
    """An agent's provider chain, timed like the default one when metrics are kept."""
    if metrics is None:
        return provider
    from bot.metrics import MeteredProvider

    return MeteredProvider(provider, metrics)


def tool_hooks(metrics: Metrics | None) -> ToolHooks:
    """The pipeline's hooks: each tool call counted when metrics are kept."""
    return ToolHooks() if metrics is None else ToolHooks(after=(metrics.after_tool_call,))
