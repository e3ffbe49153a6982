"""Whether a parked turn still fits the configuration in force (docs/approvals.md, "Parking
and resumption"): its channel, the requester's access to it, its agent and the tool its
card asks for. A turn that no longer fits has its card expired with a reason naming what
changed, and nothing of it runs; a reload checks every parked turn
(``… removed by reload``), and so does a start (``… removed while stopped``: the file was
edited while the daemon was down).

MCP tools are judged by their server (``server__tool``): a server still configured may
not have listed its tools yet at a start, so its tools count as present.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Protocol

from bot.approval.reasons import RuntimeReason
from bot.config import Settings
from bot.envelope import IngressEnvelope
from bot.store.parked import ParkRecord
from bot.tools.spec import ToolSpec


class AgentTools(Protocol):
    """What an agent's bundle offers (:class:`bot.agent.turn.AgentBundle`): its built-in
    tools, and its MCP catalog if any."""

    @property
    def tools(self) -> Sequence[ToolSpec]: ...

    @property
    def dynamic(self) -> object | None: ...


class Change(enum.Enum):
    CHANNEL = "channel"
    ACCESS = "access"
    AGENT = "agent"
    TOOL = "tool"


_BY_RELOAD = {
    Change.CHANNEL: RuntimeReason.CHANNEL_REMOVED,
    Change.ACCESS: RuntimeReason.ACCESS_REMOVED,
    Change.AGENT: RuntimeReason.AGENT_REMOVED,
    Change.TOOL: RuntimeReason.TOOL_REMOVED,
}
_WHILE_STOPPED = {
    Change.CHANNEL: RuntimeReason.CHANNEL_GONE,
    Change.ACCESS: RuntimeReason.ACCESS_GONE,
    Change.AGENT: RuntimeReason.AGENT_GONE,
    Change.TOOL: RuntimeReason.TOOL_GONE,
}
#: The reasons after which the turn does not resume at all (its conversation is not one
#: the bot answers any more): the entry fails with the reason.
ENDS_THE_TURN = frozenset(
    {
        RuntimeReason.CHANNEL_REMOVED,
        RuntimeReason.ACCESS_REMOVED,
        RuntimeReason.CHANNEL_GONE,
        RuntimeReason.ACCESS_GONE,
    }
)


def reason_for(change: Change, *, at_start: bool) -> RuntimeReason:
    return (_WHILE_STOPPED if at_start else _BY_RELOAD)[change]


class ParkedConfigCheck:
    """Judges parked turns against the configuration in force, read at each call (a reload
    swaps what the callables return)."""

    def __init__(
        self,
        *,
        settings: Callable[[], Settings],
        bundles: Callable[[], Mapping[str, AgentTools]],
        is_member: Callable[[IngressEnvelope], Awaitable[bool]],
    ) -> None:
        self._settings = settings
        self._bundles = bundles
        self._is_member = is_member

    async def change(self, record: ParkRecord) -> Change | None:
        """What no longer fits ``record`` (the first of channel, access, agent, tool), or
        None."""
        settings = self._settings()
        envelope = record.envelope
        ref = envelope.channel
        config = settings.channels.get(ref.kind, ref.alias)
        if config is None or not config.enabled:
            return Change.CHANNEL
        if envelope.is_direct:
            if config.dm_policy == "disabled":
                return Change.ACCESS
        elif config.group_policy == "disabled" or (
            config.group_policy == "allowlist"
            and envelope.conversation_id not in config.allowed_conversations
        ):
            return Change.ACCESS
        if not await self._is_member(envelope):
            return Change.ACCESS
        bundle = self._bundles().get(record.agent)
        if bundle is None:
            return Change.AGENT
        tool = record.calls[record.waiting].name
        if tool in config.excluded_tools or not _offers(bundle, tool, settings.mcp.servers.keys()):
            return Change.TOOL
        return None

    async def reason(self, record: ParkRecord, *, at_start: bool) -> RuntimeReason | None:
        change = await self.change(record)
        return None if change is None else reason_for(change, at_start=at_start)


def _offers(bundle: AgentTools, tool: str, servers: Collection[str]) -> bool:
    if any(spec.name == tool for spec in bundle.tools):
        return True
    server, sep, _ = tool.partition("__")
    return bool(sep) and server in servers and bundle.dynamic is not None
