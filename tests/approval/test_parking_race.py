"""Parked turns raced across replicas (issue 39, "Bad input and failure"), with Apps over one
real PostgreSQL database and the in-process channel: a parked turn's card decided twice at
once, on two replicas, or decided again while the turn is being resumed elsewhere, resumes
once: one resumption, one tool run, one answer."""

from __future__ import annotations

import asyncio

from bot.channel import ClickVerdict
from bot.providers.base import CompletionRequest, ProviderReply, StreamSink
from bot.tools.parking import RESUMED_HEAD
from tests.approval.conftest import PARK_SOON, WAIT_S, answers, parked_card, until_done
from tests.fakes.channel import PostedCard, clicked
from tests.fakes.replica_apps import APPROVER, Replica, Replicas


def resumed_calls(replicas: Replicas) -> list[tuple[str, str]]:
    """The model calls that ran a turn from its start (a resumption adds none)."""
    return [entry for entry in replicas.log if entry[1] == "m1"]


async def parked_on_a(replicas: Replicas) -> tuple[Replica, Replica, str, PostedCard]:
    """Replicas ``a`` and ``b`` (both stay up: the turn parks by itself), and a card of
    ``a``'s whose turn has parked."""
    a = await replicas.start("a", extra=PARK_SOON)
    b = await replicas.start("b", extra=PARK_SOON)
    card = await parked_card(a)
    return a, b, card.card.approval_id, card


async def test_a_parked_card_decided_at_once_on_two_replicas_resumes_once(
    replicas: Replicas,
) -> None:
    a, b, approval_id, card = await parked_on_a(replicas)
    # the same card answered on both replicas' connections and from the CLI, all at once;
    # each decision nudges its replica's sweep, and both sweeps race for the claim
    verdicts = await asyncio.gather(
        clicked(a.app.approvals, a.channel.click(card, APPROVER)),
        clicked(b.app.approvals, b.channel.click(card, APPROVER)),
        b.app.approvals.decide_from_cli(approval_id, True, "operator:root"),
        a.app.resumptions.sweep(),
        b.app.resumptions.sweep(),
    )
    decided = [v for v in verdicts[:3] if isinstance(v, ClickVerdict)]
    assert decided.count(ClickVerdict.ACCEPTED) == 1
    assert decided.count(ClickVerdict.ALREADY_DECIDED) == 2

    await until_done(a.app.store, approval_id)
    # the sweeps of both replicas look again once it is over: nothing left to resume
    assert await a.app.resumptions.sweep() == 0
    assert await b.app.resumptions.sweep() == 0
    assert [args for _, args in replicas.deployed] == [{"version": "2"}]
    assert answers(a, b) == ["done: deployed v2"]
    assert resumed_calls(replicas) == [("a", "m1")]
    audit = await a.app.store.audit.since()
    assert [r.decision.value for r in audit if r.tool == "deploy"] == ["approved"]


async def test_a_parked_card_decided_again_while_it_resumes_on_another_replica_resumes_once(
    replicas: Replicas,
) -> None:
    a, b, approval_id, card = await parked_on_a(replicas)
    # the resumed turn is held on whichever replica resumes it, after its tool ran and
    # before the model answers, while the other replica is asked to decide it again
    gate = asyncio.Event()
    holding: list[str] = []
    held = asyncio.Event()
    for replica in (a, b):
        hold_resumption(replica, gate, holding, held)

    assert await clicked(a.app.approvals, a.channel.click(card, APPROVER)) is (
        ClickVerdict.ACCEPTED
    )
    await asyncio.wait_for(held.wait(), WAIT_S)
    # resumed on the session's owner, whichever replica's sweep saw the decision first
    assert holding == ["a"]
    resumer, other = a, b
    # the batch's outcomes were recorded, and the row went with them
    assert await other.app.store.parked.row(approval_id) is None
    assert [args for _, args in replicas.deployed] == [{"version": "2"}]

    # decided again, on the other replica, while the turn is being resumed
    assert await clicked(other.app.approvals, other.channel.click(card, APPROVER)) is (
        ClickVerdict.ALREADY_DECIDED
    )
    assert await other.app.approvals.decide_from_cli(approval_id, False, "operator:root") is (
        ClickVerdict.ALREADY_DECIDED
    )
    # both replicas' sweeps see it: the claim is taken, nothing more is queued
    assert await other.app.resumptions.sweep() == 0
    assert await resumer.app.resumptions.sweep() == 0

    gate.set()
    await until_done(a.app.store, approval_id)
    assert holding == [resumer.name]
    assert [args for _, args in replicas.deployed] == [{"version": "2"}]
    assert answers(a, b) == ["done: deployed v2"]
    assert resumed_calls(replicas) == [("a", "m1")]


def hold_resumption(
    replica: Replica, gate: asyncio.Event, holding: list[str], held: asyncio.Event
) -> None:
    """``replica``'s model waits for ``gate`` before it answers a resumed turn."""
    model = replica.model
    complete = model.complete

    async def held_complete(
        request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply:
        if request.messages[-1].content.startswith(RESUMED_HEAD):
            holding.append(model.replica)
            held.set()
            await gate.wait()
        return await complete(request, stream=stream)

    model.complete = held_complete  # type: ignore[method-assign]
