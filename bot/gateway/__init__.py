"""The gateway package: from an inbound envelope to a queued turn (see :mod:`.gateway`).

One module per part: :mod:`.admission` (the step chain), :mod:`.retry`, :mod:`.drain`,
:mod:`.access` with :mod:`.pairing`, :mod:`.commands`, :mod:`.dedupe`, :mod:`.sessions`,
:mod:`.recovery` and :mod:`.sending`; the seam to what runs a turn is :mod:`bot.turn`.
"""

from bot.gateway.gateway import Gateway
from bot.gateway.recovery import SHUTDOWN_MESSAGE
from bot.gateway.sending import FAILURE_MESSAGE
from bot.turn import SessionControl, TurnReply, TurnRunner

__all__ = [
    "FAILURE_MESSAGE",
    "SHUTDOWN_MESSAGE",
    "Gateway",
    "SessionControl",
    "TurnReply",
    "TurnRunner",
]
