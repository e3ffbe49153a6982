"""Delivery defaults for ``channel_aware`` tools.

Missing ``channel`` / ``to`` / ``thread`` arguments are filled from the envelope's reply
target; what the model set explicitly is never overwritten. For a background (scheduled)
envelope the reply target is the originating conversation, so a missing delivery announces
back there. Only keys the tool's schema declares are filled.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.envelope import IngressEnvelope
from bot.tools.spec import ToolSpec


def delivery_defaults(envelope: IngressEnvelope) -> dict[str, str]:
    target = envelope.reply_target
    values = {"channel": str(target.channel), "to": target.conversation_id}
    if target.thread_id is not None:
        values["thread"] = target.thread_id
    return values


def with_delivery_defaults(
    spec: ToolSpec, arguments: Mapping[str, object], envelope: IngressEnvelope
) -> Mapping[str, object]:
    """``arguments`` with missing delivery fields filled (unchanged for other tools)."""
    if not spec.channel_aware:
        return arguments
    declared = spec.parameters.get("properties")
    if not isinstance(declared, Mapping):
        return arguments
    missing = {
        key: value
        for key, value in delivery_defaults(envelope).items()
        if key in declared and arguments.get(key) in (None, "")
    }
    if not missing:
        return arguments
    return {**arguments, **missing}
