"""An adapter's health, kept in one place and logged when it changes.

Every adapter holds one :class:`HealthRecord` and sets it (:meth:`HealthRecord.set`);
:attr:`HealthRecord.current` is what its ``health`` property returns. A change of state or
detail is logged once as ``channel_health``; setting the same value again logs nothing.
"""

from __future__ import annotations

import structlog

from bot.channel import ChannelHealth, HealthState
from bot.envelope import ChannelRef

log = structlog.get_logger(__name__)


class HealthRecord:
    """The current :class:`~bot.channel.ChannelHealth` of one channel."""

    def __init__(
        self, ref: ChannelRef, state: HealthState = HealthState.STARTING, detail: str = ""
    ) -> None:
        self._channel = str(ref)
        self.current = ChannelHealth(state=state, detail=detail)

    @property
    def state(self) -> HealthState:
        return self.current.state

    def set(self, state: HealthState, detail: str = "") -> None:
        if (state, detail) != (self.current.state, self.current.detail):
            log.info("channel_health", channel=self._channel, state=state.value, detail=detail)
        self.current = ChannelHealth(state=state, detail=detail)
