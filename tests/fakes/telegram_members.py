"""Who is in which chat of the fake Telegram, and whom the bot cannot message.

:class:`ChatRoster` answers ``getChatMember``: for a chat it holds statuses for, a listed
user's status (``"restricted"`` with ``is_member`` true, ``"restricted_left"`` with it
false) and ``"left"`` for anyone else, as Telegram answers for a user who is not in the chat;
for any other chat an administrator, as the fake always did (tests of approver roles rely on
it). Messages to the private chat of a user in :attr:`ChatRoster.unreachable` get the error
it names: :data:`NEVER_STARTED` (403) or :data:`CHAT_NOT_FOUND` (400), Telegram's two answers
for a user who never started the bot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]

NEVER_STARTED = (403, "Forbidden: bot can't initiate conversation with a user")
CHAT_NOT_FOUND = (400, "Bad Request: chat not found")


def member_payload(user_id: int, status: str) -> JSON:
    """A ChatMember object of ``status`` (one of the Bot API's, or ``restricted_left``)."""
    person = {"id": user_id, "is_bot": False, "first_name": "A"}
    if status == "administrator":
        return {
            "status": "administrator",
            "user": person,
            "can_be_edited": False,
            "is_anonymous": False,
            "can_manage_chat": True,
            "can_delete_messages": True,
            "can_manage_video_chats": True,
            "can_restrict_members": True,
            "can_promote_members": False,
            "can_change_info": True,
            "can_invite_users": True,
            "can_post_stories": False,
            "can_edit_stories": False,
            "can_delete_stories": False,
        }
    if status == "creator":
        return {"status": "creator", "user": person, "is_anonymous": False}
    if status.startswith("restricted"):
        rights = (
            "can_send_messages",
            "can_send_audios",
            "can_send_documents",
            "can_send_photos",
            "can_send_videos",
            "can_send_video_notes",
            "can_send_voice_notes",
            "can_send_polls",
            "can_send_other_messages",
            "can_add_web_page_previews",
            "can_change_info",
            "can_invite_users",
            "can_pin_messages",
            "can_manage_topics",
            "can_edit_tag",
            "can_react_to_messages",
        )
        return {
            "status": "restricted",
            "user": person,
            "is_member": status == "restricted",
            "until_date": 0,
            **dict.fromkeys(rights, False),
        }
    if status == "kicked":
        return {"status": "kicked", "user": person, "until_date": 0}
    return {"status": status, "user": person}


@dataclass(slots=True)
class ChatRoster:
    statuses: dict[int, dict[int, str]] = field(default_factory=dict)  # chat -> user -> status
    unreachable: dict[int, tuple[int, str]] = field(default_factory=dict)  # user -> error

    def member(self, chat_id: int, user_id: int) -> JSON:
        """The ``getChatMember`` result for ``user_id`` in ``chat_id``."""
        known = self.statuses.get(chat_id)
        if known is None:
            return member_payload(user_id, "administrator")
        return member_payload(user_id, known.get(user_id, "left"))

    def refusal(self, method: str, params: JSON) -> tuple[int, str] | None:
        """Telegram's error (status, description) when ``method`` would message a user who
        never started the bot; None when it may go ahead."""
        if method not in ("sendMessage", "sendDocument", "sendPhoto"):
            return None
        chat = params.get("chat_id")
        return self.unreachable.get(chat) if isinstance(chat, int) else None
