"""``[replicas]``: how processes sharing one PostgreSQL database keep their roles apart.

With a PostgreSQL store several replicas may run with the same configuration
(docs/operations.md, "Several replicas"). A role only one may play at a time (Telegram's
``getUpdates`` poller, a Discord gateway session) is a lease of ``lease_ttl_s`` seconds,
renewed every ``heartbeat_s`` with the replica's own row. A holder stops the role's work once
``lease_ttl_s - max_clock_skew_s`` have passed since the last renewal it sent and saw
succeed, so it has stopped before another replica, whose clock may be up to
``max_clock_skew_s`` ahead, can see the lease expire and take it. With a SQLite store (one
process) none of this runs and the keys are not read.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from bot.config_model import ConfigModel


class ReplicasConfig(ConfigModel):
    """``[replicas]``; see the module docstring."""

    heartbeat_s: float = Field(default=1.0, gt=0)
    lease_ttl_s: float = Field(default=4.0, gt=0)
    max_clock_skew_s: float = Field(default=1.0, ge=0)

    @model_validator(mode="after")
    def _room_for_a_missed_heartbeat(self) -> ReplicasConfig:
        # A holder must be able to miss one heartbeat (a slow round trip) and still renew
        # before it has to stop: the window it may work in is ttl - skew.
        needed = 2 * self.heartbeat_s + self.max_clock_skew_s
        if self.lease_ttl_s < needed:
            raise ValueError(
                f"lease_ttl_s = {self.lease_ttl_s:g} is too short: it must be at least "
                f"2 × heartbeat_s + max_clock_skew_s = {needed:g}, so that a holder can miss "
                "one heartbeat and still renew its lease before it has to stop"
            )
        return self

    @property
    def fence_s(self) -> float:
        """How long after a renewal was sent its holder may go on working: it stops then
        unless a later renewal succeeded."""
        return self.lease_ttl_s - self.max_clock_skew_s
