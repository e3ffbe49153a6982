"""Admission step: the chat commands, answered by the gateway and never by the model.

A small router: the message's first word, case-insensitive, picks one handler per command;
any other message passes on.

- ``/stop`` cancels the session's running turn and drops the turns queued behind it (their
  inbox entries become ``failed``, "cancelled by /stop").
- ``/new`` starts a new generation of the session's history.

``/pair CODE`` is not among them: it belongs to the access policy
(:mod:`bot.gateway.access`), which answers it before a session is looked at.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import structlog

from bot.gateway.admission import Admit, Arrival
from bot.gateway.sending import Replies
from bot.gateway.sessions import Sessions
from bot.store import InboxStatus, Store

log = structlog.get_logger(__name__)

NOTHING_RUNNING = "Nothing is running."
NEW_SESSION = "🆕 New session started; earlier messages are forgotten."

CommandHandler = Callable[[Arrival], Awaitable[None]]


def command_of(text: str) -> str:
    """The message's first word, lower-cased ("" for a message with no word, such as one
    of only whitespace)."""
    words = text.split(maxsplit=1)
    return words[0].lower() if words else ""


class ChatCommands:
    """Routes ``/stop`` and ``/new`` to their handlers."""

    def __init__(self, *, sessions: Sessions, store: Store, replies: Replies) -> None:
        self._sessions = sessions
        self._store = store
        self._replies = replies
        self._handlers: Mapping[str, CommandHandler] = {"/stop": self._stop, "/new": self._new}

    async def __call__(self, arrival: Arrival, call_next: Admit) -> None:
        handler = self._handlers.get(command_of(arrival.envelope.text))
        if handler is None:
            await call_next(arrival)
            return
        await handler(arrival)

    async def _stop(self, arrival: Arrival) -> None:
        stopped, dropped = self._sessions.stop(arrival.session_key, "/stop")
        for turn in dropped:
            await self._store.inbox.mark(turn.inbox, InboxStatus.FAILED, error="cancelled by /stop")
        log.info("session_stop", session=arrival.session_key, stopped=stopped, dropped=len(dropped))
        if not stopped and not dropped:
            await self._replies.send(arrival.envelope, NOTHING_RUNNING)

    async def _new(self, arrival: Arrival) -> None:
        await self._store.history.reset(arrival.session_key)
        log.info("session_new", session=arrival.session_key)
        await self._replies.send(arrival.envelope, NEW_SESSION)
