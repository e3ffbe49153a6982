"""Who is where in the fake Slack: member lists of conversations and the app's DMs.

:class:`Conversations` answers ``conversations.members`` as Slack does: ``members`` one page
at a time (``limit``, capped by :attr:`Conversations.page_limit` so tests see several pages)
with ``response_metadata.next_cursor`` ("" on the last page), and ``channel_not_found`` for a
conversation it holds no list for. :attr:`Conversations.failing` makes the lists of some
conversations fail (``fatal_error``), as Slack does when it is having a bad day.
``conversations.info`` answers a conversation of :attr:`Conversations.names` with its
``channel`` object and ``name``, an app's DM (``D…``) as an IM without a name, any other
``channel_not_found``; a failing conversation fails it too. :attr:`Conversations.info_calls`
counts the calls.

A message posted to a user id lands in the app's DM with that user, whose id
(:func:`dm_channel_of`) ``chat.postMessage`` answers with; a user in
:attr:`Conversations.closed_dms` (deactivated, or outside the workspace) cannot be messaged
(``channel_not_found``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]


def dm_channel_of(user_id: str) -> str:
    """The fake's id of the app's DM with ``user_id`` (``D`` + the rest of the id)."""
    return "D" + user_id[1:]


def is_user_id(channel: str) -> bool:
    return channel[:1] in ("U", "W")


@dataclass(slots=True)
class Conversations:
    members: dict[str, list[str]] = field(default_factory=dict)  # conversation -> user ids
    failing: set[str] = field(default_factory=set)
    closed_dms: set[str] = field(default_factory=set)
    page_limit: int = 1000
    names: dict[str, str] = field(default_factory=dict)  # conversation -> its name
    info_calls: int = 0

    def info(self, params: JSON) -> JSON:
        """The answer to one ``conversations.info`` call."""
        self.info_calls += 1
        channel = str(params.get("channel") or "")
        if channel in self.failing:
            return {"ok": False, "error": "fatal_error"}
        if channel in self.names:
            found: JSON = {"id": channel, "name": self.names[channel], "is_channel": True}
            return {"ok": True, "channel": found}
        if channel.startswith("D"):
            im: JSON = {"id": channel, "is_im": True, "user": "U" + channel[1:]}
            return {"ok": True, "channel": im}
        return {"ok": False, "error": "channel_not_found"}

    def page(self, params: JSON) -> JSON:
        """The answer to one ``conversations.members`` call."""
        channel = str(params.get("channel") or "")
        if channel in self.failing:
            return {"ok": False, "error": "fatal_error"}
        members = self.members.get(channel)
        if members is None:
            return {"ok": False, "error": "channel_not_found"}
        limit = min(int(params.get("limit") or 100), self.page_limit)
        start = int(str(params.get("cursor") or "0").removeprefix("page:") or 0)
        end = start + limit
        next_cursor = f"page:{end}" if end < len(members) else ""
        return {
            "ok": True,
            "members": members[start:end],
            "response_metadata": {"next_cursor": next_cursor},
        }

    def post_to(self, channel: str) -> tuple[str, str | None]:
        """Where a message posted to ``channel`` lands, and the error refusing it if any."""
        if not is_user_id(channel):
            return channel, None
        if channel in self.closed_dms:
            return channel, "channel_not_found"
        return dm_channel_of(channel), None
