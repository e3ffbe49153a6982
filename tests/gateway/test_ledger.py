"""The outbox ledger through the gateway on a real SQLite file: every reply recorded before
it is sent and settled after; start-up recovery of a cut-off turn by its replies (never an
answer and an "ask again" both); ``agent.on_interrupted = "retry"``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from bot.channel import SentMessage
from bot.config import parse_settings
from bot.envelope import (
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
    envelope_to_json,
    target_to_json,
)
from bot.gateway import SHUTDOWN_MESSAGE, Gateway, SessionControl, TurnReply
from bot.gateway.ledger import REPEAT_MARKER, UNCONFIRMED, UNDECIDED
from bot.gateway.recovery import INTERRUPTED
from bot.gateway.sending import FAILURE_MESSAGE
from bot.providers.base import ChatMessage, ToolCallRequest
from bot.store import InboxKey, InboxStatus, ReplyKind, ReplyStatus, Store, UnitOfWork
from bot.turn import CancelReason, TurnIdentity
from tests.fakes.channel import FakeChannel
from tests.gateway.test_gateway import AllowAll, until

REF = ChannelRef(kind="telegram", alias="main")
SESSION = f"{REF}:c1"


class CheckingChannel(FakeChannel):
    """A channel whose platform lets the bot read its own posts (its ``delivery``, a
    ``DeliveryCheck``, is itself): it
    answers from what it holds, ``posted_before`` being what reached it before a crash;
    ``check_fails`` makes the platform refuse the question."""

    def __init__(self, ref: ChannelRef) -> None:
        super().__init__(ref)
        self.posted_before: dict[str, str] = {}  # key → message id
        self.check_fails = False
        self.checked: list[tuple[str, str | None]] = []
        self.delivery = self

    async def find_delivered(
        self, target: DeliveryTarget, *, key: str, text: str, after_message_id: str | None
    ) -> Sequence[SentMessage] | None:
        self.checked.append((key, after_message_id))
        if self.check_fails:
            return None
        found = self.posted_before.get(key)
        return [] if found is None else [SentMessage(target=target, message_id=found)]


class LaterChannel(CheckingChannel):
    """A channel whose check writes to the platform (``BackgroundDeliveryCheck``): it
    answers only once :attr:`open` is set, as a check waiting for the connection would."""

    def __init__(self, ref: ChannelRef) -> None:
        super().__init__(ref)
        self.open = asyncio.Event()

    async def find_delivered(
        self, target: DeliveryTarget, *, key: str, text: str, after_message_id: str | None
    ) -> Sequence[SentMessage] | None:
        await self.open.wait()
        return await super().find_delivered(
            target, key=key, text=text, after_message_id=after_message_id
        )

    def checks_later(self) -> bool:
        return True


class Runner:
    """Answers each message ``answer to <text>``; raises for ``boom``; records each run and
    what history held when it began."""

    def __init__(self, store: Store, interrupt: tuple[str, ...] = ()) -> None:
        self.store = store
        self.interrupt = interrupt
        self.ran: list[str] = []
        self.history_at_start: list[list[str]] = []

    async def __call__(self, turn: TurnIdentity, control: SessionControl) -> TurnReply:
        self.ran.append(turn.envelope.text)
        loaded = await self.store.history.load(turn.session_key)
        self.history_at_start.append([m.content for m in loaded])
        if turn.envelope.text == "boom":
            raise RuntimeError("boom")
        if turn.envelope.text in self.interrupt:
            # cut short by the daemon stopping (the real runner's reply)
            return TurnReply(text=SHUTDOWN_MESSAGE, interrupted=CancelReason.SHUTDOWN)
        return TurnReply(text=f"answer to {turn.envelope.text}")


@dataclass
class Rig:
    gateway: Gateway
    runner: Runner
    channel: FakeChannel
    store: Store


def rig_for(
    tmp_path: Path,
    *,
    on_interrupted: str = "notify",
    checks: bool | str = True,
    interrupt: tuple[str, ...] = (),
) -> _RigContext:
    """A gateway over a channel that can look for its posts (``checks``) or cannot; turns
    for the texts in ``interrupt`` are cut short by a stop."""
    return _RigContext(tmp_path, on_interrupted, checks, interrupt)


class _RigContext:
    def __init__(
        self,
        tmp_path: Path,
        on_interrupted: str,
        checks: bool | str,
        interrupt: tuple[str, ...],
    ) -> None:
        self.tmp_path, self.on_interrupted, self.checks = tmp_path, on_interrupted, checks
        self.interrupt = interrupt

    async def __aenter__(self) -> Rig:
        self.store = store = await Store.open(self.tmp_path / "h.db")
        runner = Runner(store, self.interrupt)
        channel = (
            LaterChannel(REF)
            if self.checks == "later"
            else CheckingChannel(REF)
            if self.checks
            else FakeChannel(REF)
        )
        settings = parse_settings(
            {"state_dir": str(self.tmp_path), "agent": {"on_interrupted": self.on_interrupted}},
            require_provider=False,
        )
        gateway = Gateway(
            settings=settings,
            store=store,
            access=AllowAll(),
            run_turn=runner,
            channel_for=lambda ref: channel,
        )
        self.task = asyncio.create_task(gateway.run())
        await asyncio.sleep(0)
        return Rig(gateway, runner, channel, store)

    async def __aexit__(self, *exc: object) -> None:
        self.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self.task
        await self.store.aclose()


@dataclass
class CheckingRig(Rig):
    channel: CheckingChannel


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[CheckingRig]:
    async with rig_for(tmp_path) as made:
        assert isinstance(made.channel, CheckingChannel)
        yield CheckingRig(made.gateway, made.runner, made.channel, made.store)


def envelope(text: str) -> IngressEnvelope:
    return IngressEnvelope(
        channel=REF,
        message_id=f"m-{text}",
        conversation_id="c1",
        sender=Sender(id="u1"),
        text=text,
        reply_target=DeliveryTarget(channel=REF, conversation_id="c1", reply_to_message_id="7"),
        is_direct=True,
        addressed_to_bot=True,
    )


def key(env: IngressEnvelope) -> InboxKey:
    return InboxKey(channel=str(env.channel), message_id=env.message_id)


async def cut_off(
    store: Store,
    env: IngressEnvelope,
    *,
    answer: str | None = None,
    side_effects: bool = False,
    runs: int = 1,
) -> None:
    """An entry as a process killed mid-turn left it: ``processing``, its user message in
    history under the run ``t-old``; with ``answer``, the answer in history and its reply
    recorded ``sending`` (the send began, its fate unknown)."""
    await store.inbox.admit(
        key(env), envelope_id=env.envelope_id, session_key=SESSION, payload=envelope_to_json(env)
    )
    for _ in range(runs):
        await store.commit(
            UnitOfWork()
            .start_inbox(key(env), "t-old")
            .append_history(SESSION, "t-old", [ChatMessage(role="user", content=env.text)])
        )
    if side_effects:
        await store.inbox.note_side_effects(key(env))
    if answer is not None:
        await store.history.append(
            SESSION, "t-old", [ChatMessage(role="assistant", content=answer)]
        )
        await store.outbox.record(
            key(env),
            ReplyKind.ANSWER,
            reply_key="k-old",
            target=target_to_json(env.reply_target),
            body=answer,
        )


async def replies_of(store: Store, env: IngressEnvelope) -> list[tuple[str, str, str | None]]:
    return [(e.kind.value, e.status.value, e.error) for e in await store.outbox.of_entry(key(env))]


async def status_of(store: Store, env: IngressEnvelope) -> tuple[InboxStatus, str | None]:
    entry = await store.inbox.get(key(env))
    assert entry is not None
    return entry.status, entry.error


async def settle(rig: Rig) -> None:
    await rig.gateway.wait_idle()


# -- live turns ----------------------------------------------------------------------------


async def test_an_answer_is_recorded_then_settled_with_its_message_ids(rig: CheckingRig) -> None:
    env = envelope("hi")
    await rig.gateway.deliver(env)
    await until(lambda: rig.channel.texts == ["answer to hi"])
    await settle(rig)
    (entry,) = await rig.store.outbox.of_entry(key(env))
    assert (entry.kind, entry.status, entry.body) == (
        ReplyKind.ANSWER,
        ReplyStatus.SENT,
        "answer to hi",
    )
    assert entry.sent_ids == ("m1",)
    assert rig.channel.keys == [entry.reply_key] and entry.reply_key
    assert await status_of(rig.store, env) == (InboxStatus.DONE, None)


async def test_a_failed_turn_records_its_failure_line(rig: CheckingRig) -> None:
    env = envelope("boom")
    await rig.gateway.deliver(env)
    await until(lambda: rig.channel.texts == [FAILURE_MESSAGE])
    await settle(rig)
    assert await replies_of(rig.store, env) == [("failure", "sent", None)]
    assert await status_of(rig.store, env) == (InboxStatus.FAILED, "RuntimeError")


async def test_a_reply_the_platform_refused_is_settled_failed(rig: CheckingRig) -> None:
    rig.channel.down = True
    env = envelope("hi")
    await rig.gateway.deliver(env)
    await settle(rig)
    assert await replies_of(rig.store, env) == [("answer", "failed", "send failed")]
    assert await status_of(rig.store, env) == (InboxStatus.DONE, None)


# -- recovery ------------------------------------------------------------------------------


async def test_a_turn_cut_off_before_its_answer_is_told_once_to_ask_again(rig: CheckingRig) -> None:
    env = envelope("cut")
    await cut_off(rig.store, env)
    assert await rig.gateway.recover() == (0, 1)
    assert rig.channel.texts == [SHUTDOWN_MESSAGE]
    assert await replies_of(rig.store, env) == [("notice", "sent", None)]
    assert await status_of(rig.store, env) == (InboxStatus.FAILED, INTERRUPTED)
    assert rig.runner.ran == []


async def test_an_answer_in_history_with_no_reply_recorded_is_sent_after_the_restart(
    rig: CheckingRig,
) -> None:
    """Cut off between the answer's history and its reply: it was never sent, so it is sent
    now, once, and nobody is told to ask again."""
    env = envelope("almost")
    await cut_off(rig.store, env)
    await rig.store.history.append(
        SESSION, "t-old", [ChatMessage(role="assistant", content="  answer to almost\n")]
    )
    with capture_logs() as logs:
        assert await rig.gateway.recover() == (0, 0)
    assert rig.channel.texts == ["answer to almost"]
    assert await replies_of(rig.store, env) == [("answer", "sent", None)]
    assert await status_of(rig.store, env) == (InboxStatus.DONE, None)
    assert [e["message_id"] for e in logs if e["event"] == "answer_sent_after_restart"] == [
        "m-almost"
    ]
    assert rig.runner.ran == []


async def test_a_run_cut_off_mid_tool_call_is_not_taken_for_an_answer(rig: CheckingRig) -> None:
    """The run's last message in history is the assistant's tool call: no answer to send."""
    env = envelope("tooling")
    await cut_off(rig.store, env)
    call = ToolCallRequest(id="c1", name="shell", arguments="{}")
    await rig.store.history.append(
        SESSION, "t-old", [ChatMessage(role="assistant", content="let me see", tool_calls=(call,))]
    )
    assert await rig.gateway.recover() == (0, 1)
    assert rig.channel.texts == [SHUTDOWN_MESSAGE]


async def test_an_answer_recorded_sent_is_never_followed_by_a_notice(rig: CheckingRig) -> None:
    """The process died between settling the reply and marking the entry (they commit
    together now; an older database, or a reply sent by hand, can still leave this)."""
    env = envelope("answered")
    await cut_off(rig.store, env, answer="answer to answered")
    await rig.store.commit(
        UnitOfWork().settle_reply(key(env), ReplyKind.ANSWER, ReplyStatus.SENT, sent_ids=["41"])
    )
    assert await rig.gateway.recover() == (0, 0)
    assert rig.channel.texts == []
    assert await status_of(rig.store, env) == (InboxStatus.DONE, None)


async def test_an_unconfirmable_send_counts_as_delivered_without_a_notice(
    tmp_path: Path,
) -> None:
    """A platform the bot cannot read (Telegram): the answer's send began, so it is not sent
    again and nobody is told to ask again (docs/reliability.md)."""
    async with rig_for(tmp_path, checks=False) as made:
        env = envelope("sent?")
        await cut_off(made.store, env, answer="answer to sent?")
        with capture_logs() as logs:
            assert await made.gateway.recover() == (0, 0)
        assert made.channel.texts == []
        assert await replies_of(made.store, env) == [("answer", "sent", UNCONFIRMED)]
        assert await status_of(made.store, env) == (InboxStatus.DONE, None)
        assert [e["checked"] for e in logs if e["event"] == "reply_unconfirmed"] == [False]


async def test_a_send_found_on_the_platform_is_confirmed_and_not_repeated(rig: CheckingRig) -> None:
    env = envelope("there")
    await cut_off(rig.store, env, answer="answer to there")
    rig.channel.posted_before["k-old"] = "99"
    assert await rig.gateway.recover() == (0, 0)
    assert rig.channel.texts == []
    assert rig.channel.checked == [("k-old", "m-there")]
    (entry,) = await rig.store.outbox.of_entry(key(env))
    assert (entry.status, entry.sent_ids) == (ReplyStatus.SENT, ("99",))
    assert await status_of(rig.store, env) == (InboxStatus.DONE, None)


async def test_a_send_missing_on_the_platform_is_sent_again_under_its_key(rig: CheckingRig) -> None:
    env = envelope("lost")
    await cut_off(rig.store, env, answer="answer to lost")
    assert await rig.gateway.recover() == (0, 0)
    assert rig.channel.texts == ["answer to lost"]
    assert rig.channel.keys == ["k-old"]
    assert await replies_of(rig.store, env) == [("answer", "sent", None)]
    assert await status_of(rig.store, env) == (InboxStatus.DONE, None)


async def test_a_check_that_cannot_decide_sends_the_reply_again_marked(rig: CheckingRig) -> None:
    env = envelope("unsure")
    await cut_off(rig.store, env, answer="answer to unsure")
    rig.channel.check_fails = True
    with capture_logs() as logs:
        assert await rig.gateway.recover() == (0, 0)
    assert rig.channel.texts == [f"{REPEAT_MARKER}\n\nanswer to unsure"]
    assert rig.channel.keys == ["k-old"]
    assert await replies_of(rig.store, env) == [("answer", "sent", UNDECIDED)]
    assert await status_of(rig.store, env) == (InboxStatus.DONE, None)
    assert [e["outcome"] for e in logs if e["event"] == "reply_recovered"] == ["undecided"]


async def test_a_check_that_writes_runs_after_start_up_and_holds_its_entry(
    tmp_path: Path,
) -> None:
    async with rig_for(tmp_path, checks="later") as made:
        channel = made.channel
        assert isinstance(channel, LaterChannel)
        env = envelope("later")
        await cut_off(made.store, env, answer="answer to later")
        channel.posted_before["k-old"] = "m-9"

        assert await made.gateway.recover() == (0, 0)  # returns without waiting for it
        held = made.gateway._sessions.in_hand()
        assert key(env) in held
        assert await status_of(made.store, env) == (InboxStatus.PROCESSING, None)

        channel.open.set()
        await until(lambda: key(env) not in made.gateway._sessions.in_hand())
        assert await replies_of(made.store, env) == [("answer", "sent", None)]
        assert await status_of(made.store, env) == (InboxStatus.DONE, None)
        assert channel.texts == []


async def test_a_notice_cut_off_while_being_sent_is_not_sent_twice(rig: CheckingRig) -> None:
    """The notice is recorded before it goes out: a crash while telling does not make the
    next start tell again."""
    env = envelope("twice?")
    await cut_off(rig.store, env)
    await rig.store.outbox.record(
        key(env),
        ReplyKind.NOTICE,
        reply_key="k-notice",
        target=target_to_json(env.reply_target),
        body=SHUTDOWN_MESSAGE,
    )
    rig.channel.posted_before["k-notice"] = "5"
    assert await rig.gateway.recover() == (0, 0)
    assert rig.channel.texts == []
    assert await status_of(rig.store, env) == (InboxStatus.FAILED, INTERRUPTED)
    assert await replies_of(rig.store, env) == [("notice", "sent", None)]


async def test_a_second_start_settles_nothing_again(rig: CheckingRig) -> None:
    env = envelope("once")
    await cut_off(rig.store, env)
    await rig.gateway.recover()
    assert await rig.gateway.recover() == (0, 0)
    assert rig.channel.texts == [SHUTDOWN_MESSAGE]


# -- on_interrupted = "retry" ---------------------------------------------------------------


async def test_retry_runs_a_turn_without_side_effects_again_from_a_clean_history(
    tmp_path: Path,
) -> None:
    async with rig_for(tmp_path, on_interrupted="retry") as made:
        env = envelope("again")
        await cut_off(made.store, env)
        assert await made.gateway.recover() == (1, 0)
        await until(lambda: made.channel.texts == ["answer to again"])
        await settle(made)
        assert made.runner.ran == ["again"]
        # the cut-off run's user message was removed before the run began again
        assert made.runner.history_at_start == [[]]
        assert await status_of(made.store, env) == (InboxStatus.DONE, None)


@pytest.mark.parametrize(
    ("side_effects", "runs"), [(True, 1), (False, 2)], ids=["side effects", "second run"]
)
async def test_retry_tells_instead_after_side_effects_or_a_second_cut(
    tmp_path: Path, side_effects: bool, runs: int
) -> None:
    async with rig_for(tmp_path, on_interrupted="retry") as made:
        env = envelope("no")
        await cut_off(made.store, env, side_effects=side_effects, runs=runs)
        assert await made.gateway.recover() == (0, 1)
        assert made.channel.texts == [SHUTDOWN_MESSAGE]
        assert made.runner.ran == []


async def test_a_turn_cut_by_a_stop_is_told_under_notify(tmp_path: Path) -> None:
    async with rig_for(tmp_path, interrupt=("stopped",)) as made:
        env = envelope("stopped")
        await made.gateway.deliver(env)
        await settle(made)
        assert made.channel.texts == [SHUTDOWN_MESSAGE]
        assert await replies_of(made.store, env) == [("notice", "sent", None)]
        assert await status_of(made.store, env) == (InboxStatus.FAILED, "shutdown")


async def test_a_turn_cut_by_a_stop_is_left_for_the_next_start_under_retry(
    tmp_path: Path,
) -> None:
    """Nothing is said at the stop; recovery in the same process leaves it alone (it is this
    run's message), the next start runs the turn again and answers it."""
    env = envelope("stopped")
    async with rig_for(tmp_path, on_interrupted="retry", interrupt=("stopped",)) as made:
        await made.gateway.deliver(env)
        await settle(made)
        assert made.channel.texts == []
        assert await replies_of(made.store, env) == []
        # the real loop marks the entry processing as the turn begins; the stop left it so
        await made.store.commit(UnitOfWork().start_inbox(key(env), "t-stopped"))
        assert await made.gateway.recover() == (0, 0)
        assert made.channel.texts == []
    async with rig_for(tmp_path, on_interrupted="retry") as restarted:
        assert await restarted.gateway.recover() == (1, 0)
        await until(lambda: restarted.channel.texts == ["answer to stopped"])
        await settle(restarted)
        assert await status_of(restarted.store, env) == (InboxStatus.DONE, None)


async def test_recovery_leaves_alone_what_this_process_admitted(rig: CheckingRig) -> None:
    """The channels start before recovery runs: a message of this run, finished or not, is
    never taken for one a crash left (no second answer, no "ask again")."""
    env = envelope("fresh")
    await rig.gateway.deliver(env)
    await until(lambda: rig.channel.texts == ["answer to fresh"])
    await settle(rig)
    # as if recovery had read the entry before its turn began
    await rig.store.inbox.mark(key(env), InboxStatus.RECEIVED)
    assert await rig.gateway.recover() == (0, 0)
    assert rig.channel.texts == ["answer to fresh"]
    assert rig.runner.ran == ["fresh"]
