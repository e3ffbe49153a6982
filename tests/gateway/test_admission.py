"""Admission's chain (:func:`bot.gateway.admission.compose`): the steps in order, a step that
names its ``commands`` passed by for any other message, and what a step raises reaching the
caller through the steps before it."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import replace

import pytest

from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.gateway.admission import Admit, Arrival, compose


def arrival(text: str) -> Arrival:
    channel = ChannelRef(kind="telegram", alias="main")
    return Arrival(
        envelope=IngressEnvelope(
            channel=channel,
            message_id="1",
            conversation_id="c",
            sender=Sender(id="u"),
            text=text,
            reply_target=DeliveryTarget(channel=channel, conversation_id="c"),
        ),
        session_key="telegram.main:c",
    )


class Step:
    """A step that notes each arrival it sees and passes it on (or, ``answers``, not)."""

    def __init__(self, name: str, seen: list[str], *, answers: bool = False) -> None:
        self.name, self.seen, self.answers = name, seen, answers

    async def __call__(self, arrival: Arrival, call_next: Admit) -> None:
        self.seen.append(f"{self.name}:{arrival.envelope.text}")
        if not self.answers:
            await call_next(arrival)


class CommandStep(Step):
    commands = frozenset({"usage", "status"})


def test_the_command_a_message_invokes_is_read_with_the_arrival() -> None:
    assert arrival("/Usage now").command == "usage"
    assert arrival("hello /usage").command == ""
    assert arrival("   ").command == ""
    quiet = replace(arrival("/stop"), quiet=True)
    assert (quiet.command, quiet.quiet) == ("stop", True)
    moved = replace(arrival("/stop"), envelope=arrival("/new").envelope)
    assert moved.command == "new"


async def test_a_step_naming_its_commands_sees_those_only() -> None:
    seen: list[str] = []
    queued: list[str] = []

    async def endpoint(arrival: Arrival) -> None:
        queued.append(arrival.envelope.text)

    admit = compose(
        [Step("first", seen), CommandStep("status", seen), Step("last", seen)], endpoint
    )
    for text in ["hello", "/status", "/stop", "/usage please"]:
        await admit(arrival(text))
    assert seen == [
        "first:hello",
        "last:hello",
        "first:/status",
        "status:/status",
        "last:/status",
        "first:/stop",
        "last:/stop",
        "first:/usage please",
        "status:/usage please",
        "last:/usage please",
    ]
    assert queued == ["hello", "/status", "/stop", "/usage please"]


async def test_a_run_of_command_steps_is_passed_by_at_once_and_each_sees_its_own() -> None:
    seen: list[str] = []
    queued: list[str] = []

    async def endpoint(arrival: Arrival) -> None:
        queued.append(arrival.envelope.text)

    class Stop(Step):
        commands = frozenset({"stop"})

    class Usage(Step):
        commands = frozenset({"usage"})

    class Passing(Step):
        """A plain function passing every message on, as the names step does."""

        def __call__(self, arrival: Arrival, call_next: Admit) -> Awaitable[None]:  # type: ignore[override]
            self.seen.append(f"{self.name}:{arrival.envelope.text}")
            return call_next(arrival)

    admit = compose(
        [
            Stop("stop", seen),
            CommandStep("status", seen),
            Usage("usage", seen),
            Passing("names", seen),
            Stop("stop again", seen),
        ],
        endpoint,
    )
    for text in ["hello", "/usage", "/stop", "/status"]:
        await admit(arrival(text))
    assert seen == [
        "names:hello",
        "status:/usage",
        "usage:/usage",
        "names:/usage",
        "stop:/stop",
        "names:/stop",
        "stop again:/stop",
        "status:/status",
        "names:/status",
    ]
    assert queued == ["hello", "/usage", "/stop", "/status"]


async def test_a_step_that_answers_ends_the_chain() -> None:
    seen: list[str] = []
    queued: list[str] = []

    async def endpoint(arrival: Arrival) -> None:
        queued.append(arrival.envelope.text)

    class Answering(CommandStep):
        pass

    admit = compose([Answering("status", seen, answers=True), Step("last", seen)], endpoint)
    await admit(arrival("/status"))
    await admit(arrival("hi"))
    assert seen == ["status:/status", "last:hi"]
    assert queued == ["hi"]


async def test_what_a_later_step_raises_reaches_the_earlier_ones() -> None:
    caught: list[str] = []

    async def catching(arrival: Arrival, call_next: Admit) -> None:
        try:
            await call_next(arrival)
        except LookupError as exc:
            caught.append(str(exc))
            raise

    async def endpoint(arrival: Arrival) -> None:
        raise LookupError(arrival.envelope.text)

    admit = compose([catching, CommandStep("status", [])], endpoint)
    with pytest.raises(LookupError):
        await admit(arrival("plain"))
    assert caught == ["plain"]
