"""The outbox over live channels: how tools (``send_message``, ``send_file``) and scheduled
jobs post.

A target is allowed when its channel is configured and running and:

* a **direct message** goes only to a user on the channel's ``allowed_users`` (or to anyone
  with ``"*"``), whatever ``group_policy`` says;
* a **group conversation** passes ``group_policy``: ``open`` any, ``allowlist`` only
  ``allowed_conversations``, ``disabled`` none;
* a conversation whose id does not tell which it is (every Discord channel id; an id of no
  known shape) must be listed (``allowed_conversations`` or ``allowed_users``), or be
  allowed either way: ``group_policy = "open"`` with ``allowed_users = ["*"]``.

Which is which is read from the id the model names, as each platform shapes it
(:func:`conversation_kind`): Telegram private chats have positive ids (the user's id) and
groups negative ones; Slack DM channels start with ``D`` and a user id (``U``/``W``) posts
into the DM with that user, while channels start with ``C`` or ``G``. A Slack ``D…`` id does
not name its user, so it is allowed only with ``"*"``: name the user (``U…``) instead. Paired
users are not on ``allowed_users`` and get no DMs through the outbox: the outbox answers
from configuration alone. The console's one conversation is the local terminal.

Files go through the target channel's ``files`` (:class:`~bot.channel.FileSending`), under
the same rules; a channel without them posts no files (:meth:`ChannelOutbox.upload_limit` says so
before anything is read).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.channel import Channel
from bot.config import ChannelCommon, Settings
from bot.envelope import ChannelRef, DeliveryTarget


class ConversationKind(enum.StrEnum):
    DIRECT = "direct"
    GROUP = "group"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    """What a target's id says about it: its kind and, for a direct message whose id names
    its user, that user's id."""

    kind: ConversationKind
    user: str | None = None


_UNKNOWN = Conversation(kind=ConversationKind.UNKNOWN)
_GROUP = Conversation(kind=ConversationKind.GROUP)
_TELEGRAM_CHAT = re.compile(r"-?[0-9]+")
_TELEGRAM_PUBLIC = re.compile(r"@[A-Za-z0-9_]{4,}")  # a public channel or supergroup
_SLACK_ID = re.compile(r"[A-Z][A-Z0-9]{2,}")


def conversation_kind(kind: str, conversation_id: str) -> Conversation:
    """Direct, group or unknown, from a ``kind`` platform's conversation id."""
    if kind == "telegram":
        if _TELEGRAM_PUBLIC.fullmatch(conversation_id):
            return _GROUP
        if not _TELEGRAM_CHAT.fullmatch(conversation_id):
            return _UNKNOWN
        chat = int(conversation_id)
        if chat > 0:
            return Conversation(kind=ConversationKind.DIRECT, user=str(chat))
        return _GROUP if chat < 0 else _UNKNOWN
    if kind == "slack" and _SLACK_ID.fullmatch(conversation_id):
        prefix = conversation_id[0]
        if prefix == "D":
            return Conversation(kind=ConversationKind.DIRECT)
        if prefix in "UW":
            return Conversation(kind=ConversationKind.DIRECT, user=conversation_id)
        if prefix in "CG":
            return _GROUP
    return _UNKNOWN


def may_post(config: ChannelCommon, kind: str, conversation_id: str) -> bool:
    """Whether the outbox may post to ``conversation_id`` on a ``kind`` channel configured
    by ``config`` (the rules of the module docstring)."""
    everyone = "*" in config.allowed_users
    conversation = conversation_kind(kind, conversation_id)
    if conversation.kind is ConversationKind.DIRECT:
        return everyone or (
            conversation.user is not None and conversation.user in config.allowed_users
        )
    policy = config.group_policy
    if conversation.kind is ConversationKind.GROUP:
        return policy == "open" or (
            policy == "allowlist" and conversation_id in config.allowed_conversations
        )
    # unknown: a direct message needs an allowed user, a group its policy
    if conversation_id in config.allowed_users:
        return True
    if policy == "disabled":
        return False
    return conversation_id in config.allowed_conversations or (policy == "open" and everyone)


class ChannelOutbox:
    """Implements :class:`bot.tools.builtin.messaging.Outbox` and
    :class:`bot.tools.builtin.file_sending.FileOutbox` over the daemon's channels."""

    def __init__(
        self,
        settings: Callable[[], Settings],
        channel_for: Callable[[ChannelRef], Channel | None],
    ) -> None:
        self._settings = settings
        self._channel_for = channel_for

    def allows(self, target: DeliveryTarget) -> bool:
        if self._channel_for(target.channel) is None:
            return False
        if target.channel.kind == "console":
            return True
        config = self._settings().channels.get(target.channel.kind, target.channel.alias)
        if config is None:
            return False
        return may_post(config, target.channel.kind, target.conversation_id)

    async def send(self, target: DeliveryTarget, text: str) -> None:
        channel = self._channel_for(target.channel)
        if channel is None:
            raise LookupError(f"channel {target.channel} is not running")
        await channel.send(target, text)

    def upload_limit(self, target: DeliveryTarget) -> int | None:
        """The largest file ``target``'s channel takes there; None when the channel posts
        no files or is not running."""
        channel = self._channel_for(target.channel)
        if channel is None or channel.files is None:
            return None
        return channel.files.upload_limit(target)

    async def send_file(
        self, target: DeliveryTarget, path: Path, *, name: str, caption: str = ""
    ) -> None:
        channel = self._channel_for(target.channel)
        if channel is None:
            raise LookupError(f"channel {target.channel} is not running")
        if channel.files is None:
            raise LookupError(f"channel {target.channel} posts no files")
        await channel.files.send_file(target, path, name=name, caption=caption)
