"""Turn facts: who and where the turn of a tool batch is.

Every value the pipeline produces about a call — hook calls, approval requests, observer
events, ``tool_calls`` rows — is stamped with these facts. They are fixed for the turn and
shared by all its batches; nothing in them depends on a single call.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.envelope import IngressEnvelope
from bot.tools.spec import ToolContext


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnFacts:
    """Who and where this turn is."""

    turn_id: str
    session_key: str
    envelope: IngressEnvelope
    context: ToolContext

    @property
    def channel(self) -> str:
        """The configured channel as events and rows name it (``telegram.main``)."""
        return str(self.envelope.channel)
