"""Admission step: ``/grants``, for members, after the command limits.

``/grants`` lists the grants that apply in this conversation (this conversation's, this
channel alias's and the global ones, live only): number, tool, size, where, who made it and
when it ends, the same rows ``hatchway grants list`` and the console show. An approver of
the channel alias revokes one with ``/grants revoke N`` (N: a number the list shows); anyone
else, a grant that does not apply here, or one no longer live gets a clear line and nothing
changes. The answer goes to the conversation (a grant is not one person's); a platform that
answers a command privately (a Slack slash command, a Discord application command) keeps
doing so. Counted by the command limits like every member command
(:mod:`bot.gateway.command_limits`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog

from bot.approval.grants import scopes_for, size_of
from bot.chat_commands import command_of
from bot.config import Settings
from bot.envelope import IngressEnvelope
from bot.gateway.admission import Admit, Arrival
from bot.gateway.sending import Replies
from bot.progress import when_utc
from bot.store import Store
from bot.store.grants import GrantRecord
from bot.visible_text import visible

log = structlog.get_logger(__name__)

#: The most grants one answer lists (the newest; ``hatchway grants list`` has them all).
SHOWN = 20
NONE_HERE = "No grants apply here: every tool that needs approval asks."
USAGE = "Use {prefix}grants to list them, {prefix}grants revoke N to revoke grant #N."
NOT_APPROVER = "Only an approver of this channel can revoke a grant."
NOT_HERE = "Grant #{n} does not apply in this conversation, or is no longer live."


def grant_row(grant: GrantRecord) -> str:
    """One grant as chat, the CLI and the console describe it."""
    where = {"conversation": "this conversation", "channel": "this channel"}.get(
        grant.scope, "everywhere"
    )
    until = "until revoked" if grant.expires_at is None else f"until {when_utc(grant.expires_at)}"
    return (
        f"#{grant.id} {visible(grant.tool)}: {visible(size_of(grant))}, {where}, "
        f"by {visible(grant.granted_by)}, {until}"
    )


class GrantCommands:
    """``/grants`` and ``/grants revoke N`` (see the module doc)."""

    #: what this step acts on; any other message passes it by (admission.compose)
    commands = frozenset({"grants"})

    def __init__(
        self,
        *,
        store: Store,
        replies: Replies,
        settings: Callable[[], Settings],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._replies = replies
        self._settings = settings
        self._clock = clock

    async def __call__(self, arrival: Arrival, call_next: Admit) -> None:
        if command_of(arrival.envelope.text) != "grants":
            await call_next(arrival)
            return
        envelope = arrival.envelope
        words = envelope.text.split()[1:]
        if not words:
            text = await self._listing(envelope)
        elif len(words) == 2 and words[0].lower() == "revoke" and words[1].lstrip("#").isdigit():
            text = await self._revoke(envelope, int(words[1].lstrip("#")))
        else:
            text = USAGE.format(prefix=envelope.capabilities.command_prefix)
        log.info("command_answered", command="grants", user_id=envelope.sender.id)
        await self._replies.send(envelope, text)

    async def _here(self, envelope: IngressEnvelope) -> list[GrantRecord]:
        wanted = set(scopes_for(envelope))
        grants = await self._store.grants.list(now=self._clock())
        return [g for g in grants if (g.scope, g.scope_key) in wanted]

    async def _listing(self, envelope: IngressEnvelope) -> str:
        grants = await self._here(envelope)
        if not grants:
            return NONE_HERE
        shown = grants[-SHOWN:]
        lines = ["Grants that apply here:", *(f"• {grant_row(g)}" for g in shown)]
        if len(grants) > len(shown):
            lines.append(f"… and {len(grants) - len(shown)} older (hatchway grants list).")
        if self._is_approver(envelope):
            prefix = envelope.capabilities.command_prefix
            lines.append(f"Revoke one with {prefix}grants revoke N.")
        return "\n".join(lines)

    async def _revoke(self, envelope: IngressEnvelope, grant_id: int) -> str:
        if not self._is_approver(envelope):
            return NOT_APPROVER
        if grant_id not in {g.id for g in await self._here(envelope)}:
            return NOT_HERE.format(n=grant_id)
        if not await self._store.grants.revoke(grant_id, self._clock()):
            return NOT_HERE.format(n=grant_id)
        log.info("grant_revoked", grant_id=grant_id, user_id=envelope.sender.id, route="chat")
        return f"Grant #{grant_id} revoked: its tool asks again from its next call."

    def _is_approver(self, envelope: IngressEnvelope) -> bool:
        ref = envelope.channel
        cfg = self._settings().channels.get(ref.kind, ref.alias)
        return cfg is not None and cfg.is_approver(envelope.sender)
