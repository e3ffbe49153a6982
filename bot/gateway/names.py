"""Admission step: the sender's latest display name, kept for the web console.

After the inbox admitted a message (a redelivery never gets here), the name the platform gave
for its sender is kept by identity (``telegram:12345``,
:class:`bot.store.display_names.DisplayNames`), so that the console can show people by name
beside their ids. Names are shown there, never matched on.

It costs no database trip per message: the step remembers, per process, which name it last
wrote for whom and when; it writes only the first time it sees a person, when their name
changed, or a day after its last write (so that retention, which removes names not seen
for ``retention.inbox_days``, keeps the names of people who still write). The memory holds
at most :data:`REMEMBERED` people (the least recently seen are let go). A write that fails
is logged and the message goes on: a name is never worth a lost message.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

import structlog

from bot.errors import StorageError
from bot.gateway.admission import Admit, Arrival
from bot.store import Store
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

    async def __call__(self, arrival: Arrival, call_next: Admit) -> None:
        sender = arrival.envelope.sender
        if sender.id and sender.display_name and not arrival.envelope.background:
            await self._note(
                identity(arrival.envelope.channel.kind, sender.id), sender.display_name
            )
        await call_next(arrival)

    async def _note(self, who: str, name: str) -> None:
        now = self._clock()
        last = self._written.get(who)
        if last is not None and last[0] == name and now - last[1] < REWRITE_AFTER_S:
            self._written.move_to_end(who)
            return
        try:
            await self._store.display_names.remember(who, name, now)
        except StorageError as exc:
            log.warning("display_name_not_kept", error=str(exc))
            return
        self._written[who] = (name, now)
        self._written.move_to_end(who)
        while len(self._written) > REMEMBERED:
            self._written.popitem(last=False)
