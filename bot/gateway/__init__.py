"""The gateway package: from an inbound envelope to a queued turn (see :mod:`.gateway`).

One module per part: :mod:`.admission` (the step chain), :mod:`.retry`, :mod:`.drain`,
:mod:`.access` with :mod:`.pairing`, :mod:`.commands`, :mod:`.dedupe`, :mod:`.sessions`,
:mod:`.recovery`, :mod:`.sending`, and :mod:`.runner` (the seam to what runs a turn).
"""

from bot.gateway.gateway import Gateway
from bot.gateway.recovery import SHUTDOWN_MESSAGE
from bot.gateway.runner import SessionControl, TurnReply, TurnRunner
from bot.gateway.sending import FAILURE_MESSAGE

__all__ = [
    "FAILURE_MESSAGE",
    "SHUTDOWN_MESSAGE",
    "Gateway",
    "SessionControl",
    "TurnReply",
    "TurnRunner",
]
