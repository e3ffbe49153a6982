"""Admission: the steps an inbound message passes before it is queued as a turn.

A step is a coroutine ``step(arrival, call_next)``, like a starlette middleware: it handles
the message itself (refuses it, answers a chat command, drops a redelivery) and returns, or
passes it on with ``await call_next(arrival)``. A step may also wrap the rest of the chain
(the storage retry runs it again). A step that most messages pass untouched (the drain, group
context, the display names, the rate limits when none is set) is a plain function that
returns ``call_next(arrival)`` itself for them, and a coroutine of its own only for a message
it acts on: no frame of its own to make, nor to pass through at every suspension of the
steps after it. :func:`compose` puts the steps in front of the endpoint
that queues the turn; :class:`bot.gateway.gateway.Gateway` calls it once, with the one list
that orders them.

A step that acts on some chat commands only says which in ``commands`` (the names without
their ``/``); a message invoking none of them passes it by without the step being called.
The chain holds no frame of its own between two steps: a step's ``call_next`` returns the
next step's coroutine, so a turn's admission suspends and resumes through the steps alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from bot.chat_commands import command_of
from bot.envelope import IngressEnvelope


@dataclass(frozen=True, slots=True, kw_only=True)
class Arrival:
    """An inbound message on its way in, with the session it belongs to. ``quiet``: what
    the message asks is done without an answer (a ``/stop`` past its sender's allowance of
    answers, :mod:`bot.gateway.command_limits`)."""

    envelope: IngressEnvelope
    session_key: str
    quiet: bool = False
    #: the chat command the message invokes (:func:`~bot.chat_commands.command_of`), read
    #: once for every step
    command: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "command", command_of(self.envelope.text))


Admit = Callable[[Arrival], Awaitable[None]]
"""The rest of admission from here on: the next step, and after the last one the queue."""

AdmissionStep = Callable[[Arrival, Admit], Awaitable[None]]
"""One step: ``await step(arrival, call_next)``. It must not keep the arrival past its
return, and it passes the arrival on at most once unless it is retrying the whole rest; a
plain function returning ``call_next(arrival)`` passes it on."""


def compose(steps: Sequence[AdmissionStep], endpoint: Admit) -> Admit:
    """``steps`` in order, then ``endpoint``, as one callable."""
    admit = endpoint
    #: the first link after the run of command steps being composed, and the commands
    #: that run's later steps name
    past, later = endpoint, frozenset[str]()
    for step in reversed(steps):
        only: frozenset[str] | None = getattr(step, "commands", None)
        if only is None:
            admit = past = _chained(step, admit)
            later = frozenset()
        else:
            admit = _for_commands(step, only, admit, past, later)
            later |= only
    return admit


def _chained(step: AdmissionStep, call_next: Admit) -> Admit:
    # plain functions handing on the step's own coroutine: a wrapper coroutine per link
    # would be one more frame to suspend and resume at every await of the rest of the chain
    def admit(arrival: Arrival) -> Awaitable[None]:
        return step(arrival, call_next)

    return admit


def _for_commands(
    step: AdmissionStep, only: frozenset[str], call_next: Admit, past: Admit, later: frozenset[str]
) -> Admit:
    """The link of a step acting on the commands ``only``: a message naming none of them,
    nor any of ``later`` (those of the command steps right after it), goes on to ``past``,
    the first link after those steps."""

    def admit_commands(arrival: Arrival) -> Awaitable[None]:
        command = arrival.command
        if command in only:
            return step(arrival, call_next)
        if command in later:
            return call_next(arrival)
        return past(arrival)

    return admit_commands
