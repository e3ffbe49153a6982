"""Who this process is among the replicas of its database.

Each start is a new replica: its id joins the host name and process id (what an operator
recognises in ``replicas`` rows and log lines) with a random part, so a process restarted
with the same pid on the same host is still a new holder and never inherits the leases of
the one before it.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from dataclasses import dataclass

from bot.store.replicas import CAPABILITIES, ReplicaRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaIdentity:
    """This process as the ``replicas`` table knows it."""

    id: str
    host: str
    pid: int
    started_at: float
    #: What this release can do (the row's ``capabilities``).
    capabilities: frozenset[str] = CAPABILITIES

    @classmethod
    def of_this_process(cls, *, now: float | None = None) -> ReplicaIdentity:
        host = socket.gethostname() or "localhost"
        pid = os.getpid()
        return cls(
            id=f"{host}:{pid}:{secrets.token_hex(4)}",
            host=host,
            pid=pid,
            started_at=time.time() if now is None else now,
        )

    def record(self, *, heartbeat_at: float) -> ReplicaRecord:
        """The row of this replica with its heartbeat at ``heartbeat_at``."""
        return ReplicaRecord(
            id=self.id,
            host=self.host,
            pid=self.pid,
            started_at=self.started_at,
            heartbeat_at=heartbeat_at,
            capabilities=self.capabilities,
        )
