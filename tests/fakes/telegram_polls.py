"""Who polls a fake Telegram's ``getUpdates``, and Telegram's rule for two polls at once.

Telegram serves one long poll per bot token: a ``getUpdates`` that arrives while another is
waiting ends the older one with ``409 Conflict: terminated by other getUpdates request``.
:class:`PollBook` keeps every poll (which client sent it, when it began and ended) and
records a *conflict* when the poll it ends still had a client connected to it (a poll whose
client has gone, killed or cancelled, is ended without one). Clients are told apart by the
URL prefix a test gives each (:meth:`tests.fakes.telegram_server.FakeTelegram.base_url_for`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from aiohttp import web

TERMINATED = (
    "Conflict: terminated by other getUpdates request; make sure that only one bot instance "
    "is running"
)


@dataclass(eq=False)
class Poll:
    """One ``getUpdates`` call: who sent it, and when it began and ended (monotonic)."""

    client: str
    request: web.Request
    began: float = field(default_factory=time.monotonic)
    ended: float | None = None
    terminated: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def connected(self) -> bool:
        transport = self.request.transport
        return transport is not None and not transport.is_closing()


@dataclass
class PollBook:
    """Every poll so far, and the conflicts between them."""

    polls: list[Poll] = field(default_factory=list)
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    """(the client whose live poll was ended, the client whose poll ended it)"""

    def begin(self, client: str, request: web.Request) -> Poll:
        """A new poll: every poll still waiting is ended (Telegram's 409)."""
        for older in self.polls:
            if older.ended is None and not older.terminated.is_set():
                older.terminated.set()
                if older.connected:
                    self.conflicts.append((older.client, client))
        poll = Poll(client=client, request=request)
        self.polls.append(poll)
        return poll

    @staticmethod
    def end(poll: Poll) -> None:
        poll.ended = time.monotonic()

    def clients(self) -> list[str]:
        """The clients that polled, in the order of their first poll."""
        return list(dict.fromkeys(poll.client for poll in self.polls))

    def by(self, client: str) -> list[Poll]:
        return [poll for poll in self.polls if poll.client == client]
