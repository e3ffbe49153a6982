"""The identity of a turn: which admitted message it answers, in which session.

The gateway makes one :class:`TurnIdentity` when it admits a message (or re-queues one at
recovery) and everything that names the turn shares that value instead of copying its
fields: the agent's :class:`~bot.agent.turn.TurnState`, the tool handlers'
:class:`~bot.tools.spec.ToolContext` and the hooks' :class:`~bot.tools.hooks.HookCall`.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.envelope import IngressEnvelope
from bot.store import InboxKey


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnIdentity:
    """One admitted message as a turn: ``turn_id`` is new for every run of the message
    (a message re-queued after a restart gets another one), ``session_key`` names the
    history it reads and extends, ``envelope`` is the message itself."""

    turn_id: str
    session_key: str
    envelope: IngressEnvelope

    @property
    def channel(self) -> str:
        """The configured channel the message came from, as events and rows name it
        (``telegram.main``)."""
        return str(self.envelope.channel)

    @property
    def inbox(self) -> InboxKey:
        """The message's inbox entry."""
        return InboxKey(channel=self.channel, message_id=self.envelope.message_id)
