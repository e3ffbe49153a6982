"""Conversations by title: a page names each conversation it shows by the title the platform
gives it, with its id beside it, ``general (C0123)``.

Titles come from :attr:`bot.store.Store.conversation_titles` (the latest title each
conversation, or Discord thread, was seen with: :mod:`bot.gateway.names`), read once per
page for every place it shows. A title is whatever the platform's users named the place: it
is shown, never matched on, secrets masked and cleaned of control, format and invisible
characters as people's names are (:func:`bot.webconsole.display.text`). A conversation with
no title kept (a DM, the console, one nobody wrote in since the title was kept) is shown by
id alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.store import Store
from bot.store.conversation_titles import place
from bot.webconsole import display

#: A session key's parts after the conversation that are not a thread (``u<user>``,
#: ``@agent``).
_NOT_THREAD = ("u", "@")


def session_places(channel: str, session_key: str) -> tuple[str, str | None]:
    """The conversation and the thread (None when there is none) a session key
    (``kind.alias:conversation[:thread][:u<user>][:@agent]``) is in."""
    parts = session_key.removeprefix(f"{channel}:").split(":")
    thread = parts[1] if len(parts) > 1 and not parts[1].startswith(_NOT_THREAD) else None
    return parts[0], thread


class Places:
    """The titles known for the conversations of one page."""

    def __init__(self, titles: dict[str, str]) -> None:
        self._titles = titles

    @classmethod
    async def load(cls, store: Store, where: Iterable[tuple[str, str, str | None]]) -> Places:
        """The titles of ``where`` (channel, conversation id, thread id or None): each
        conversation's, and each thread's."""
        wanted: set[str] = set()
        for channel, conversation, thread in where:
            if channel and conversation:
                wanted.add(place(channel, conversation))
                if thread:
                    wanted.add(place(channel, conversation, thread))
        return cls(await store.conversation_titles.of(wanted) if wanted else {})

    def title(self, channel: str, conversation: str, thread: str | None = None) -> str:
        """The title of the conversation (of its thread, given one) as shown; empty when
        none is kept."""
        return display.text(self._titles.get(place(channel, conversation, thread), ""), 80)

    def show(self, channel: str, conversation: str, thread: str | None = None) -> str:
        """``general (C0123)``, a thread's ``release (1700000000.1)``; the id alone without
        a title."""
        shown_id = display.text(thread or conversation, 120)
        title = self.title(channel, conversation, thread)
        return f"{title} ({shown_id})" if title and title != shown_id else shown_id

    def session_title(self, channel: str, session_key: str) -> str:
        """The titles of a session's conversation and thread, ``general › release``; empty
        when neither is kept."""
        conversation, thread = session_places(channel, session_key)
        titles = [self.title(channel, conversation)]
        if thread:
            titles.append(self.title(channel, conversation, thread))
        return " › ".join(t for t in titles if t)
