"""Who can see a Telegram chat: the adapter's answer to
:class:`bot.approval.reach.MemberLookup`.

A private chat's id is its user's id, so it is seen by that user alone (no call). In a group
``getChatMember`` says: the owner, administrators, members and restricted users who are still
members (``is_member``) see it; users who left or were banned do not. A forum topic is seen
by whoever sees its group. Telegram's "user not found" / "member not found" /
"participant id invalid" mean the user is not in the chat, and "chat not found" that the bot
is not, so nobody would see a card there: all False. Any other failure (network, rate limit,
the bot removed from the chat, a slow or unreadable answer) is None: Telegram cannot tell,
and nothing is raised.
"""

from __future__ import annotations

import asyncio

import structlog
from telegram import Bot, ChatMember, ChatMemberRestricted
from telegram.error import BadRequest, TelegramError

from bot.envelope import ChannelRef, DeliveryTarget

log = structlog.get_logger(__name__)

#: Statuses of users who see the chat (a restricted user only while ``is_member``).
_SEE = frozenset({ChatMember.OWNER, ChatMember.ADMINISTRATOR, ChatMember.MEMBER})
#: What Telegram's "Bad Request" says when the user, or the bot, is not in the chat.
_NOT_THERE = ("user not found", "member not found", "participant_id_invalid", "chat not found")


class ConversationMembers:
    """``getChatMember`` per question; see the module docstring."""

    def __init__(self, *, ref: ChannelRef, bot: Bot, lookup_timeout_s: float = 5.0) -> None:
        self._ref = ref
        self._bot = bot
        self._timeout = lookup_timeout_s

    async def can_see(self, target: DeliveryTarget, user_id: str) -> bool | None:
        """True or False as Telegram says; None when it cannot tell."""
        try:
            chat_id, user = int(target.conversation_id), int(user_id)
        except ValueError:
            return False  # not a Telegram id: nobody Telegram knows
        if chat_id > 0:  # a private chat: its id is the user's
            return user == chat_id
        try:
            async with asyncio.timeout(self._timeout):
                member = await self._bot.get_chat_member(chat_id=chat_id, user_id=user)
        except BadRequest as exc:
            if any(words in exc.message.lower() for words in _NOT_THERE):
                return False
            error = exc.message
        except TelegramError as exc:
            error = exc.message
        except TimeoutError:
            error = "timed out"
        except (KeyError, TypeError, ValueError) as exc:
            # A member object PTB cannot read (a field a newer Bot API added or dropped).
            error = f"unreadable answer: {type(exc).__name__}"
        else:
            if isinstance(member, ChatMemberRestricted):
                return member.is_member
            return member.status in _SEE
        log.info("telegram_member_lookup_failed", channel=str(self._ref), chat=chat_id, error=error)
        return None
