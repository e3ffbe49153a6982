"""``hatchway chat``: the console channel alone, behaving like a terminal program.

Keys and what they do (also in ``docs/operations.md``):

- **End of input** (Ctrl-D at the start of a line, or the end of piped input) closes the
  console to new messages. Piped input: every line already read is answered (or fails),
  then the program exits. At a terminal: with nothing running it exits at once; otherwise it
  says "finishing the current turn… (Ctrl-D again to quit now)", exits when the turn is
  done, and a second Ctrl-D cancels it and exits.
- **Ctrl-C** at a terminal cancels the running turn (as ``/stop`` does: the turns queued
  behind it are dropped) and keeps the chat open; with nothing running, or after Ctrl-D, or
  with piped input, it cancels what runs and exits.
- **SIGTERM** finishes the running turn (up to :data:`TERM_DRAIN_S`) and exits.

Exit status: 0 after an end of input (even when a second Ctrl-D cancelled a turn) or
SIGTERM, except that with piped input it is :data:`UNANSWERED` (1) when a line's turn did
not complete; 130 after Ctrl-C; 1 on an error, 2 on a configuration error (:mod:`bot.cli`).
With piped input the banner goes to stderr, so stdout holds the answers alone, and a command
line (``/new``) takes effect after the answers to the lines before it.

Log lines never reach the conversation: they go to :data:`CHAT_LOG` in the state
directory, or to stderr with ``--verbose``. Console input is not replayed into a later
run (``Capabilities.replay_on_restart``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.gateway import Gateway

#: The log file of ``hatchway chat``, in the state directory.
CHAT_LOG = "hatchway-chat.log"
FINISHING = "finishing the current turn… (Ctrl-D again to quit now)"
#: How long cancelled turns get to end (and say "Stopped") before the app stops anyway.
CANCEL_GRACE_S = 10.0
#: How long the running turn may take to finish on SIGTERM.
TERM_DRAIN_S = 300.0
INTERRUPTED = 130
#: The exit status of piped input when a line's turn did not complete (its model failed,
#: it was stopped, it ran out of time): the script's caller can tell.
UNANSWERED = 1


@runtime_checkable
class ChatConsole(Protocol):
    """What ``hatchway chat`` needs of its console channel (``channels/console``)."""

    @property
    def interactive(self) -> bool:
        """A person types at a terminal: an end of input is a key press, not the end."""
        ...

    async def end_of_input(self) -> None:
        """Wait for the next end of input not yet waited for (each Ctrl-D; the end of
        piped input once, and at once from then on)."""
        ...

    def notice(self, text: str) -> None:
        """Show a line of the program's own."""
        ...

    async def interrupt(self) -> None:
        """Stop the console's running turn and drop its queued ones (as ``/stop``)."""
        ...

    def quitting(self) -> None:
        """No new messages and no input prompt from now on."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Ending:
    """How the chat ends: the exit status, and how long running turns may still take
    before the app cancels them."""

    code: int
    drain_s: float


class Conversation:
    """Decides, from ends of input, signals and whether turns are running, when the chat
    ends (the rules in the module docstring)."""

    def __init__(
        self,
        gateway: Gateway,
        console: ChatConsole,
        signals: asyncio.Queue[signal.Signals],
    ) -> None:
        self._gateway = gateway
        self._console = console
        # filled by caught_signals(), from before the app starts: a Ctrl-C pressed while it
        # starts (the console already reads, a first line may already be queued) is this
        # conversation's too, never asyncio's default (which cancelled the start, and the
        # queued turn was cut off as at a shutdown)
        self._signals = signals

    async def run(self) -> Ending:
        ending = await self._converse()
        self._console.quitting()
        return ending

    async def _converse(self) -> Ending:
        interactive = self._console.interactive
        while True:  # chatting
            event = await self._first(self._console.end_of_input())
            if event is signal.SIGTERM:
                return Ending(code=0, drain_s=TERM_DRAIN_S)
            if event is signal.SIGINT:
                if self._gateway.idle or not interactive:
                    return await self._cancel(code=INTERRUPTED)
                await self._console.interrupt()
                continue
            break
        if interactive and self._gateway.idle:
            return Ending(code=0, drain_s=0.0)
        if interactive:
            self._console.notice(FINISHING)
        waits = [self._gateway.wait_idle()]
        if interactive:
            waits.append(self._console.end_of_input())
        event = await self._first(*waits)  # finishing what was asked
        if event == 0:
            return Ending(code=0, drain_s=0.0)
        if event == 1:
            return await self._cancel(code=0)
        if event is signal.SIGTERM:
            return Ending(code=0, drain_s=TERM_DRAIN_S)
        return await self._cancel(code=INTERRUPTED)

    async def _cancel(self, *, code: int) -> Ending:
        """Cancel the console's turns; the app then gives them a moment to say so."""
        if not self._gateway.idle:
            await self._console.interrupt()
        return Ending(code=code, drain_s=CANCEL_GRACE_S)

    async def _first(self, *waited: Awaitable[None]) -> int | signal.Signals:
        """The index of the first of ``waited`` to finish, or the signal that came first."""
        tasks = [asyncio.ensure_future(w) for w in waited]
        caught = asyncio.ensure_future(self._signals.get())
        try:
            await asyncio.wait([*tasks, caught], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (*tasks, caught):
                task.cancel()
        for index, task in enumerate(tasks):
            if task.done() and not task.cancelled():
                if caught.done() and not caught.cancelled():
                    self._signals.put_nowait(caught.result())  # not lost: seen next time
                return index
        return caught.result()


@contextlib.contextmanager
def caught_signals() -> Iterator[asyncio.Queue[signal.Signals]]:
    """SIGINT and SIGTERM, queued for the :class:`Conversation` for the block (entered
    before the app starts, so that none is lost to the default handlers meanwhile)."""
    loop = asyncio.get_running_loop()
    caught: asyncio.Queue[signal.Signals] = asyncio.Queue()
    watched = (signal.SIGINT, signal.SIGTERM)
    for sig in watched:
        loop.add_signal_handler(sig, caught.put_nowait, sig)
    try:
        yield caught
    finally:
        for sig in watched:
            loop.remove_signal_handler(sig)


def log_file(settings: Settings) -> Path:
    return Path(settings.state_dir) / CHAT_LOG


def banner(settings: Settings, *, log: str) -> str:
    """What ``hatchway chat`` says first: the provider chain in use, the keys, the log."""
    from bot.providers.summary import describe_chain

    chain = describe_chain(settings)
    lines = [f"hatchway chat — provider {s.text()}" for s in chain[:1]]
    lines += [f"  fallback {s.text()}" for s in chain[1:]]
    if chain and chain[0].in_process:
        lines.append(
            "  A small offline demo model without tools: to use a real model, configure a "
            "provider (see docs/providers.md)."
        )
    lines.append(
        "Type a message and press Enter. /new starts over, /stop or Ctrl-C cancels, "
        f"Ctrl-D quits. Log: {log}"
    )
    return "\n".join(lines)
