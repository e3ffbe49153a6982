"""``[rate_limits]``: how many messages a sender, and a conversation, may send a minute.

Each limit is a token bucket (:mod:`bot.gateway.ratelimit`): it holds up to ``burst``
messages and refills at ``messages_per_minute``; a message that finds it empty is refused,
recorded, and its sender told once per minute when to try again. ``per_user`` counts each
sender of a channel alias, ``per_conversation`` each conversation (all its threads and
senders together). ``messages_per_minute = 0`` (the default) turns a limit off. Scheduled
runs are never limited; approvers of the channel (``approvers``) are not either when
``exempt_approvers`` is set. See docs/configuration.md.
"""

from __future__ import annotations

import math

from pydantic import Field, model_validator

from bot.config_model import ConfigModel


class RateLimit(ConfigModel):
    """One token bucket: ``messages_per_minute`` (0: no limit) refills it, ``burst`` is how
    many it holds (unset: one minute's worth, at least one)."""

    messages_per_minute: float = Field(default=0.0, ge=0, le=100_000)
    burst: int | None = Field(default=None, ge=1, le=100_000)

    @model_validator(mode="after")
    def _burst_needs_a_rate(self) -> RateLimit:
        if self.burst is not None and self.messages_per_minute == 0:
            raise ValueError("burst is set but messages_per_minute is 0 (no limit)")
        return self

    @property
    def active(self) -> bool:
        return self.messages_per_minute > 0

    @property
    def capacity(self) -> float:
        """How many messages the full bucket holds."""
        if self.burst is not None:
            return float(self.burst)
        return float(max(1, math.ceil(self.messages_per_minute)))

    @property
    def per_second(self) -> float:
        return self.messages_per_minute / 60.0


class RateLimitsConfig(ConfigModel):
    """``[rate_limits]``: ``per_user`` and ``per_conversation`` buckets (both off by default),
    and whether the channel's approvers skip them."""

    per_user: RateLimit = Field(default_factory=RateLimit)
    per_conversation: RateLimit = Field(default_factory=RateLimit)
    exempt_approvers: bool = False

    @property
    def active(self) -> bool:
        return self.per_user.active or self.per_conversation.active
