"""Grant scopes: which conversation, channel or "everywhere" an "always" decision covers.

A grant is keyed by tool and scope. The conversation key is ``kind.alias:conversation_id``
(threads of a conversation share it), the channel key is ``kind.alias``, and the global key
is empty. A request matches grants of all three scopes that contain it; a grant of one
conversation never matches another conversation.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.channel_config import GrantScope
from bot.envelope import ChannelRef, IngressEnvelope
from bot.store import Store
from bot.store.grants import GrantRecord, NewGrant


def scope_key(scope: GrantScope, channel: ChannelRef | str, conversation_id: str) -> str:
    if scope == "conversation":
        return f"{channel}:{conversation_id}"
    if scope == "channel":
        return str(channel)
    return ""


def scopes_for(envelope: IngressEnvelope) -> list[tuple[str, str]]:
    """Every (scope, key) pair whose grants apply to a request from ``envelope``."""
    scopes: tuple[GrantScope, ...] = ("conversation", "channel", "global")
    return [(s, scope_key(s, envelope.channel, envelope.conversation_id)) for s in scopes]


def new_grant(
    *,
    tool: str,
    scope: GrantScope,
    channel: ChannelRef | str,
    conversation_id: str,
    granted_by: str,
    now: float,
    ttl_s: float | None,
    size: str | None = None,
    arguments_hash: str | None = None,
) -> NewGrant:
    return NewGrant(
        tool=tool,
        scope=scope,
        scope_key=scope_key(scope, channel, conversation_id),
        granted_by=granted_by,
        created_at=now,
        expires_at=None if ttl_s is None else now + ttl_s,
        size=size,
        arguments_hash=arguments_hash,
    )


class GrantBook:
    """Looks up active grants for a request."""

    def __init__(self, store: Store, clock: Callable[[], float]) -> None:
        self._store = store
        self._clock = clock

    async def find(
        self, tool: str, envelope: IngressEnvelope, fingerprint: str | None = None
    ) -> GrantRecord | None:
        """The grant that lets ``tool`` run for ``envelope``'s request; an exact-arguments
        grant only for the call whose ``fingerprint`` it keeps."""
        return await self._store.grants.find_active(
            tool, scopes_for(envelope), self._clock(), arguments_hash=fingerprint
        )


#: The size an "Always" answer's grant keeps (the alias's ``grant_scope`` and ``grant_ttl_s``).
ALWAYS_SIZE = "always"


def size_of(grant: GrantRecord) -> str:
    """What a grant's size reads as: the choice its approver picked, ``always``, or, for a
    grant made before sizes were kept (migration 0026), that it is an "always" grant of
    unrecorded size."""
    if grant.size is None:
        return "always (size not recorded)"
    return grant.size
