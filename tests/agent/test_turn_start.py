"""The turn's first record: the inbox entry becomes ``processing`` in the same transaction
(and the same trip to SQLite) as the user message, and the history is read in it too.

Recovery after a crash relies on it: an entry still ``received`` left no trace and is run
again; a ``processing`` one was cut off and its sender is told. So no moment may exist
where one of the two is stored without the other.
"""

from __future__ import annotations

import asyncio

import pytest

from bot.agent.loop import run_turn
from bot.agent.turn import AgentBundle, TurnState, TurnStatus
from bot.config import AgentConfig
from bot.envelope import envelope_to_json
from bot.errors import StorageIntegrityError
from bot.providers.base import ChatMessage, CompletionRequest, ProviderReply
from bot.store import InboxKey, InboxStatus, ReplyKind, ReplyStatus, Store
from bot.tools.services import PipelineServices
from bot.turn import TurnIdentity
from tests.fakes.scripted_provider import ScriptedProvider, Step, reply
from tests.tools.gates import PolicyGate
from tests.tools.harness import make_envelope

SESSION = "console.main:c1"


def bundle_for(store: Store, script: list[Step]) -> tuple[AgentBundle, ScriptedProvider]:
    provider = ScriptedProvider(script)
    services = PipelineServices(settings=AgentConfig(), store=store, gate=PolicyGate())
    bundle = AgentBundle(provider=provider, services=services)
    return bundle, provider


async def admitted(store: Store, message_id: str, text: str = "hi") -> TurnState:
    """A message admitted to the inbox, as the gateway does, and the state of its turn."""
    envelope = make_envelope(text)
    await store.inbox.admit(
        InboxKey(channel=str(envelope.channel), message_id=message_id),
        envelope_id=envelope.envelope_id,
        session_key=SESSION,
        payload=envelope_to_json(envelope),
    )
    turn = TurnIdentity(turn_id=f"turn-{message_id}", session_key=SESSION, envelope=envelope)
    return TurnState(
        turn=turn, inbox=InboxKey(channel=str(envelope.channel), message_id=message_id)
    )


async def status(store: Store, key: InboxKey) -> InboxStatus:
    entry = await store.inbox.get(key)
    assert entry is not None
    return entry.status


async def user_messages(store: Store, turn_id: str) -> int:
    row = await store.db.fetchone(
        "SELECT COUNT(*) AS n FROM messages WHERE turn_id = ? AND role = 'user'", (turn_id,)
    )
    assert row is not None
    return int(row["n"])


async def test_the_entry_is_processing_with_its_user_message_while_the_model_answers(
    store: Store,
) -> None:
    state = await admitted(store, "m1")
    assert state.inbox is not None
    asked, release = asyncio.Event(), asyncio.Event()

    async def slow(request: CompletionRequest) -> ProviderReply:
        asked.set()
        await release.wait()
        return reply("hello")

    bundle, _ = bundle_for(store, [slow])
    task = asyncio.create_task(run_turn(bundle, state))
    await asked.wait()
    assert await status(store, state.inbox) is InboxStatus.PROCESSING
    assert await user_messages(store, state.turn.turn_id) == 1
    release.set()
    assert (await task).status is TurnStatus.COMPLETED
    # the gateway marks it done after sending the reply
    assert await status(store, state.inbox) is InboxStatus.PROCESSING


async def test_history_not_given_is_read_in_the_same_trip(store: Store) -> None:
    await store.history.append(
        SESSION,
        "earlier",
        [ChatMessage(role="user", content="q0"), ChatMessage(role="assistant", content="a0")],
    )
    state = await admitted(store, "m1", "q1")
    bundle, provider = bundle_for(store, [reply("a1")])
    trips = store.db.trips
    result = await run_turn(bundle, state)
    assert result.status is TurnStatus.COMPLETED
    # one trip starts the turn (mark, user message, history), one records the answer
    assert store.db.trips - trips == 2
    [asked] = provider.requests
    assert [m.content for m in asked.messages] == ["q0", "a0", "q1"]
    assert state.history is not None
    assert [m.content for m in state.history] == ["q0", "a0", "q1", "a1"]


@pytest.mark.parametrize("record_answer", [True, False])
async def test_the_answer_reply_rides_with_its_history_where_the_channel_can_check(
    store: Store, record_answer: bool
) -> None:
    """For a channel that can check a delivery (the runner sets ``record_answer``), the
    answer's outbox row commits in the answer's own trip: still two trips per turn. For one
    that cannot, nothing is recorded here (the gateway records it just before the send)."""
    state = await admitted(store, "m1", "q1")
    state.record_answer = record_answer
    assert state.inbox is not None
    bundle, _ = bundle_for(store, [reply("a1")])
    trips = store.db.trips
    result = await run_turn(bundle, state)
    assert (result.status, result.text) == (TurnStatus.COMPLETED, "a1")
    assert store.db.trips - trips == 2
    recorded = [(e.kind, e.status, e.body) for e in await store.outbox.of_entry(state.inbox)]
    if record_answer:
        assert recorded == [(ReplyKind.ANSWER, ReplyStatus.SENDING, "a1")]
        assert state.answer_recorded == "a1"
    else:
        assert recorded == []
        assert state.answer_recorded is None


async def test_a_start_that_fails_leaves_the_entry_received_and_no_message(
    store: Store,
) -> None:
    state = await admitted(store, "m1")
    assert state.inbox is not None
    # the user message cannot be written (a real SQLite error, raised inside the transaction)
    await store.db.execute(
        "CREATE TRIGGER no_messages BEFORE INSERT ON messages"
        " BEGIN SELECT RAISE(ABORT, 'no room for messages'); END"
    )
    bundle, provider = bundle_for(store, [reply("never")])
    with pytest.raises(StorageIntegrityError, match="no room"):
        await run_turn(bundle, state)
    assert await status(store, state.inbox) is InboxStatus.RECEIVED
    assert await user_messages(store, state.turn.turn_id) == 0
    assert provider.requests == []
    # and recovery would run it again
    [entry] = await store.inbox.unfinished()
    assert entry.status is InboxStatus.RECEIVED


@pytest.mark.parametrize("yields", range(4))
async def test_a_turn_cut_off_anywhere_in_its_start_leaves_both_records_or_neither(
    store: Store, yields: int
) -> None:
    """Cancelling the turn after ``yields`` passes of the event loop stands in for the
    process dying there: whatever the database then holds must be consistent."""
    state = await admitted(store, "m1")
    assert state.inbox is not None
    never = asyncio.Event()

    async def hang(request: CompletionRequest) -> ProviderReply:
        await never.wait()
        raise AssertionError("unreachable")

    bundle, _ = bundle_for(store, [hang])
    task = asyncio.create_task(run_turn(bundle, state))
    for _ in range(yields):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    processing = await status(store, state.inbox) is InboxStatus.PROCESSING
    stored = await user_messages(store, state.turn.turn_id)
    assert (processing, stored) in ((False, 0), (True, 1))
