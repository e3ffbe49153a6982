"""The seam between the gateway and what runs a turn (:class:`bot.agent.runner.AgentRunner`).

The gateway calls its :data:`TurnRunner` once per admitted message, one at a time per
session, with the :class:`SessionControl` through which ``/stop`` and shutdown cut the turn
short, and sends the :class:`TurnReply` it returns. The runner never sends, queues or
touches another session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.turn_identity import TurnIdentity


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnReply:
    """What a turn leaves for the gateway: the text to send back (None: nothing), and, for a
    turn cut short by the daemon stopping, ``interrupted`` (``"shutdown"``), which the inbox
    entry records as its error instead of marking it done."""

    text: str | None
    interrupted: str = ""


@dataclass(slots=True)
class SessionControl:
    """Per-session handle a running turn exposes to ``/stop`` and shutdown: the runner
    registers what cancels the turn, the gateway calls :meth:`cancel` with the reason."""

    cancel_callbacks: list[Callable[[str], None]] = field(default_factory=list)

    def on_cancel(self, callback: Callable[[str], None]) -> None:
        self.cancel_callbacks.append(callback)

    def cancel(self, reason: str) -> bool:
        """Cancel the running turn; False when nothing registered to be cancelled."""
        if not self.cancel_callbacks:
            return False
        for callback in self.cancel_callbacks:
            callback(reason)
        return True


TurnRunner = Callable[[TurnIdentity, SessionControl], Awaitable[TurnReply]]
"""Runs one turn and returns its :class:`TurnReply`.

The runner marks the turn's inbox entry (:attr:`TurnIdentity.inbox`) ``processing`` in the
same transaction as the turn's first record (:func:`bot.agent.loop.run_turn` does it with
the user message): an entry still ``received`` after a crash left no trace and is run again
by recovery (:func:`bot.gateway.recovery.recover`); a ``processing`` one was cut off and its
sender is told. The gateway marks the entry ``done`` after sending the reply, or ``failed``
(with the interruption's reason as its error)."""
