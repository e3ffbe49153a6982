"""Handover: each session's turns on one replica at a time, in inbox order.

Only where several replicas share one database (PostgreSQL); one process on SQLite keeps
its in-memory queues and never builds this. Its rules, each with its module:

* :mod:`~bot.gateway.handover.claims`: one owner per session; any replica admits; the owner
  claims what waits, and takes each entry once more just before its turn
  (:class:`Handover`, the one object the gateway builds).
* :mod:`~bot.gateway.handover.settlement`: taking a session over settles first what gone
  replicas left; a replica settles what it left itself.
* :mod:`~bot.gateway.handover.sweep`: the sweep makes up for lost notifications and takes
  over the sessions of gone owners; idle owner rows go.
* :mod:`~bot.gateway.handover.relay`: a handed-over ``/stop`` is acknowledged.
* :mod:`~bot.gateway.handover.ownership`: what a replica knows of who owns what, and the
  per-session lock.
"""

from bot.gateway.handover.claims import Handover
from bot.gateway.handover.ownership import HANDOVER, REMEMBERED_OWNERS
from bot.gateway.handover.relay import ACK_S, COMMAND_SENDS, REMEMBERED_COMMANDS, Command
from bot.gateway.handover.settlement import RecoverEntries
from bot.gateway.handover.sweep import PRUNE_IDLE_S, PRUNE_S, SWEEP_S

__all__ = [
    "ACK_S",
    "COMMAND_SENDS",
    "HANDOVER",
    "PRUNE_IDLE_S",
    "PRUNE_S",
    "REMEMBERED_COMMANDS",
    "REMEMBERED_OWNERS",
    "SWEEP_S",
    "Command",
    "Handover",
    "RecoverEntries",
]
