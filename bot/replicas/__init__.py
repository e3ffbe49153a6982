"""Several replicas over one database: who this process is, and the roles it holds.

With a PostgreSQL store, several processes ("replicas") may run with the same configuration
(docs/operations.md, "Several replicas"). :class:`~bot.replicas.keeper.LeaseKeeper` keeps
this process's row in ``replicas`` fresh, holds the leases of the roles only one replica may
play at a time (a Telegram alias's ``getUpdates`` poller, a Discord alias's gateway
session), stops a role's work before its lease can pass to another replica, and says when
the replica has lost its database and must take no work. Adapters never see it: they ask
their host (:meth:`bot.channel.ChannelHost.lead`), which the App wires to the keeper, or,
with a SQLite store (one process), to :data:`bot.channel_host.SOLE_PROCESS`, which grants
every role at once and writes nothing.
"""

from __future__ import annotations

from bot.replicas.identity import ReplicaIdentity
from bot.replicas.keeper import LeaseKeeper
from bot.replicas.tenure import Tenure

__all__ = ["LeaseKeeper", "ReplicaIdentity", "Tenure"]
