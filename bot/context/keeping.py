"""Group context kept: the messages of a group conversation not addressed to the bot.

A message is kept for context only when all of these hold (:meth:`GroupContextKeeper.keeps`):
it was written in a group conversation the alias takes messages from (``group_policy`` and
``allowed_conversations``, as for a message addressed to the bot); it is not addressed to the
bot while ``require_mention`` is on (otherwise it would be a turn); the alias keeps group
context there (``context.group_messages`` above 0, the conversation not in
``context.off_in``); it is not another bot's while ``ignore_other_bots``. A sender outside
``allowed_users`` is kept too, marked as such (``member`` false): what is said in an allowed
conversation is context whoever says it, and the model is told who is not an allowed user.
A kept message is never answered, and reaches the model only as data
(:mod:`bot.context.block`). Keeping is one write (:meth:`bot.store.context_lines.ContextLines.
keep`); an edit of a kept message rewrites its line, a deletion drops it.
"""

from __future__ import annotations

import structlog

from bot.config import ChannelCommon
from bot.envelope import ChannelRef, IngressEnvelope
from bot.store import Store
from bot.store.context_lines import ContextLine

log = structlog.get_logger(__name__)


def _member(cfg: ChannelCommon, user_id: str) -> bool:
    return "*" in cfg.allowed_users or user_id in cfg.allowed_users


def _readable(cfg: ChannelCommon, conversation_id: str) -> bool:
    if cfg.group_policy == "disabled":
        return False
    return cfg.group_policy == "open" or conversation_id in cfg.allowed_conversations


def kept_text(envelope: IngressEnvelope) -> str:
    """The message's text, with a mark per attached file (the files are not kept)."""
    files = [f"[{a.kind}: {a.name or 'unnamed'}]" for a in envelope.attachments]
    return " ".join([envelope.text.strip(), *files]).strip()


class GroupContextKeeper:
    """Keeps group messages not addressed to the bot (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def keeps(self, envelope: IngressEnvelope, cfg: ChannelCommon) -> bool:
        """Whether ``envelope`` is kept for context only (and so never becomes a turn)."""
        if envelope.is_direct or envelope.background or envelope.addressed_to_bot:
            return False
        if not cfg.require_mention or not cfg.context.keeps_in(envelope.conversation_id):
            return False
        if envelope.sender.is_bot and cfg.ignore_other_bots:
            return False
        return _readable(cfg, envelope.conversation_id) and bool(kept_text(envelope))

    async def keep(self, envelope: IngressEnvelope, cfg: ChannelCommon) -> None:
        """Keep ``envelope`` (one trip; a redelivery changes nothing, an edit its text)."""
        member = _member(cfg, envelope.sender.id)
        line = ContextLine(
            channel=str(envelope.channel),
            conversation_id=envelope.conversation_id,
            thread_id=envelope.thread_id or "",
            message_id=envelope.message_id,
            sender_id=envelope.sender.id,
            sender_name=envelope.sender.display_name,
            member=member,
            text=kept_text(envelope),
            at=envelope.received_at.timestamp(),
        )
        await self._store.context_lines.keep(
            line, window=cfg.context.group_messages, keep_s=cfg.context.group_minutes * 60.0
        )
        log.debug("context_kept", conversation_id=envelope.conversation_id, member=member)

    async def dropped(self, channel: ChannelRef, message_id: str) -> bool:
        """The message was deleted on its platform: its line goes (whether one was kept)."""
        return await self._store.context_lines.drop(str(channel), message_id)
