"""What the console reads of the running bot: the :class:`ConsoleHost` protocol.

:class:`bot.app.App` is the host (it mounts the console on the daemon's HTTP application);
the console never imports it. Everything is read at each request, so a reload (SIGHUP) is
seen at the next one: approvers and admins, channel states, queue depth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from bot.channel import Channel, ChannelHealth
from bot.config import Settings
from bot.envelope import ChannelRef
from bot.store import Store
from bot.tools.spec import ToolSpec

if TYPE_CHECKING:
    from bot.approval.service import ApprovalService
    from bot.metrics import Metrics


class ConsoleHost(Protocol):
    """The running bot, as the console's pages see it. Must not be written through, except
    by the approval service's and the store's own methods."""

    @property
    def settings(self) -> Settings:
        """The settings in force now (replaced by a reload)."""
        ...

    @property
    def store(self) -> Store: ...

    @property
    def approvals(self) -> ApprovalService: ...

    @property
    def metrics(self) -> Metrics | None:
        """The daemon's metrics (None in a process that keeps none)."""
        ...

    def channel_for(self, ref: ChannelRef) -> Channel | None: ...

    def channel_health(self) -> Mapping[str, ChannelHealth]:
        """Each running channel's health, by ``kind.alias``."""
        ...

    def turn_load(self) -> tuple[int, int]:
        """(running turns, messages queued behind them)."""
        ...

    def tool_specs(self) -> Sequence[ToolSpec]:
        """The tools a turn could call now, MCP servers' included (the *Explain* page)."""
        ...
