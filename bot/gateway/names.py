"""Admission step: the sender's latest display name, and the conversation's title, kept for
the web console.

After the inbox admitted a message (a redelivery never gets here), the name the platform gave
for its sender is kept by identity (``telegram:12345``,
:class:`bot.store.display_names.DisplayNames`), and the title it gave the conversation and
the thread (where it names them: ``conversation_title``, ``thread_title``) by place
(``slack.work:C123``, :class:`bot.store.conversation_titles.ConversationTitles`), so that
the console can show people and conversations by name beside their ids. Names and titles are
shown there, never matched on.

It costs no database trip per message: the step remembers, per process, which name or title
it last wrote for whom or where and when; it writes only the first time it sees one, when it
changed, or a day after its last write (so that retention, which removes names and titles not
seen for ``retention.inbox_days``, keeps those still in use). The memory holds at most
:data:`REMEMBERED` of them (the least recently seen are let go). A write that fails is
logged and the message goes on: a name is never worth a lost message.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

import structlog

from bot.envelope import IngressEnvelope
from bot.errors import StorageError
from bot.gateway.admission import Admit, Arrival
from bot.store import Store
from bot.store.conversation_titles import place
from bot.store.display_names import identity

log = structlog.get_logger(__name__)

REMEMBERED = 10_000
REWRITE_AFTER_S = 86_400.0


class DisplayNameBook:
    """Keeps each sender's latest display name (see the module docstring)."""

    def __init__(self, store: Store, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock
        self._written: OrderedDict[str, tuple[str, float]] = OrderedDict()

    def __call__(self, arrival: Arrival, call_next: Admit) -> Awaitable[None]:
        due = self._due(arrival.envelope)
        if not due:  # nothing new: passed on without a coroutine of this step's own
            return call_next(arrival)
        return self._noting(due, arrival, call_next)

    def _due(self, env: IngressEnvelope) -> list[tuple[str, str, bool]]:
        """The (who, name, is a title) of ``env`` to write: seen for the first time,
        changed, or written a day ago or more; those written lately count as seen now."""
        if env.background:
            return []
        now = self._clock()
        due: list[tuple[str, str, bool]] = []
        sender = env.sender
        if sender.id and sender.display_name:
            self._check(due, identity(env.channel.kind, sender.id), sender.display_name, now)
        if env.conversation_title or (env.thread_title and env.thread_id):
            channel = str(env.channel)
            if env.conversation_title:
                where = place(channel, env.conversation_id)
                self._check(due, where, env.conversation_title, now, title=True)
            if env.thread_title and env.thread_id:
                where = place(channel, env.conversation_id, env.thread_id)
                self._check(due, where, env.thread_title, now, title=True)
        return due

    def _check(
        self,
        due: list[tuple[str, str, bool]],
        who: str,
        name: str,
        now: float,
        *,
        title: bool = False,
    ) -> None:
        """Add ``who``'s ``name`` to ``due`` unless it was written lately."""
        last = self._written.get(who)
        if last is not None and last[0] == name and now - last[1] < REWRITE_AFTER_S:
            self._written.move_to_end(who)
            return
        due.append((who, name, title))

    async def _noting(
        self, due: list[tuple[str, str, bool]], arrival: Arrival, call_next: Admit
    ) -> None:
        for who, name, title in due:
            await self._note(who, name, title=title)
        await call_next(arrival)

    async def _note(self, who: str, name: str, *, title: bool = False) -> None:
        """Keep ``name`` for ``who`` (a person's identity), or, with ``title``, as the title
        of the place ``who``; the two kinds of key never meet (``kind:`` against
        ``kind.alias:``)."""
        now = self._clock()
        try:
            if title:
                await self._store.conversation_titles.remember(who, name, now)
            else:
                await self._store.display_names.remember(who, name, now)
        except StorageError as exc:
            log.warning("title_not_kept" if title else "display_name_not_kept", error=str(exc))
            return
        self._written[who] = (name, now)
        self._written.move_to_end(who)
        while len(self._written) > REMEMBERED:
            self._written.popitem(last=False)
