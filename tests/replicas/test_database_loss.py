"""Two replicas of the whole daemon over one real PostgreSQL database, behind one Telegram bot
(the real python-telegram-bot against the loopback fake). Replica A reaches the database
through a link the test cuts: A stops polling and reports not-ready, B takes the poller over
and answers; when the link is back A is ready again. Every message is answered once.

Waits are conditions with generous timeouts; nothing here measures how long anything took."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.app import App
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.errors import StorageUnavailable
from bot.gateway.ledger import REPEAT_MARKER
from bot.gateway.sending import FAILURE_MESSAGE
from bot.ops.health import assess_readiness
from bot.providers.base import CompletionRequest, ProviderReply
from bot.store import InboxKey, InboxStatus
from tests.fakes.db_link import DatabaseLink
from tests.fakes.scripted_provider import ScriptedProvider, reply
from tests.fakes.telegram_server import ApiCall, FakeTelegram, message, private_chat, user
from tests.fakes.telegram_setup import REQUESTER
from tests.pg import PgServer, start_server
from tests.replicas.telegram_rig import settings, through
from tests.replicas.waiting import eventually, eventually_async


def echo(request: CompletionRequest) -> ProviderReply:
    return reply(f"re: {request.messages[-1].content}")


async def say(tg: FakeTelegram, text: str) -> int:
    """The requester writes ``text``; its id is the next of the account's counter, as
    Telegram gives it (a fixed smaller id would put the message before the bot's earlier
    answers, which no chat can show, and out of reach of an edit probe's range)."""
    chat = private_chat(REQUESTER)
    number = tg.next_message_id(REQUESTER)
    await tg.push({"message": message(chat, user(REQUESTER), text, message_id=number)})
    return number


def answers(tg: FakeTelegram, text: str) -> int:
    return sum(1 for m in tg.bot_messages(REQUESTER) if m["text"] == f"re: {text}")


def standing_by(app: App) -> bool:
    return "standby" in app.channels["telegram.main"].health.detail


async def ready(app: App) -> bool:
    return (await assess_readiness(app)).ready


async def not_ready(app: App) -> bool:
    return not (await assess_readiness(app)).ready


async def test_a_replica_cut_off_from_the_database_stops_and_the_other_carries_on(
    tg: FakeTelegram, link: DatabaseLink, pg_url: str, tmp_path: Path
) -> None:
    a = App(
        settings(tg, through(pg_url, link.port), "A", tmp_path / "a"),
        provider=ScriptedProvider([echo] * 20),
    )
    b = App(settings(tg, pg_url, "B", tmp_path / "b"), provider=ScriptedProvider([echo] * 20))
    async with contextlib.AsyncExitStack() as running:
        await a.start()
        running.push_async_callback(a.stop)
        await eventually(lambda: tg.poll_book.clients() == ["A"])
        await b.start()
        running.push_async_callback(b.stop)
        # one polls, the other stands by (a loaded machine may hand the lease to B early)
        await eventually(lambda: any(standing_by(app) for app in (a, b)))
        await eventually_async(lambda: ready(a))
        await eventually_async(lambda: ready(b))

        await say(tg, "first")
        await eventually(lambda: answers(tg, "first") == 1)

        link.cut()
        await eventually_async(lambda: not_ready(a))
        verdict = await assess_readiness(a)
        assert any("database" in problem for problem in verdict.problems)
        await eventually(lambda: "B" in tg.poll_book.clients())
        await say(tg, "while A is cut off")
        await eventually(lambda: answers(tg, "while A is cut off") == 1)
        assert await ready(b)

        link.restore()
        await eventually_async(lambda: ready(a))
        # back, on standby behind B, and saying so
        detail = "standby, not polling: another replica holds telegram.main.poll"
        await eventually(lambda: a.channels["telegram.main"].health.detail == detail)
        await say(tg, "after")
        await eventually(lambda: answers(tg, "after") == 1)

    for text in ("first", "while A is cut off", "after"):
        assert answers(tg, text) == 1
    assert tg.poll_book.clients() == ["A", "B"]
    assert tg.poll_book.conflicts == []


async def test_an_answer_sent_just_before_the_cut_is_found_by_the_other_replica_not_repeated(
    tg: FakeTelegram, link: DatabaseLink, second_link: DatabaseLink, pg_url: str, tmp_path: Path
) -> None:
    """A replica's answer reaches Telegram and its link goes before it can record the id:
    its row for the send is left behind. The other takes the session over, its edit probe
    finds the answer in the chat ("message is not modified" one id above what the first
    had seen), and nothing is sent again; the message sent meanwhile is answered once.
    Each replica has a link of its own: whichever polls (a loaded machine may hand the
    lease over early) is the one cut off."""
    links = {"A": link, "B": second_link}
    cut: list[str] = []

    def cut_once_answered(call: ApiCall, _: object) -> None:
        if call.method == "sendMessage" and call.params.get("text") == "re: first":
            cut.append(call.client)
            links[call.client].cut()  # Telegram made the message; no word of it yet

    tg.answered = cut_once_answered
    apps = {
        name: App(
            settings(tg, through(pg_url, links[name].port), name, tmp_path / name),
            provider=ScriptedProvider([echo] * 5),
        )
        for name in links
    }
    async with contextlib.AsyncExitStack() as running:
        for app in apps.values():
            await app.start()
            running.push_async_callback(app.stop)
        for app in apps.values():
            await eventually_async(lambda app=app: ready(app))

        first = await say(tg, "first")
        await eventually(lambda: bool(cut))
        other = "B" if cut[0] == "A" else "A"
        key = InboxKey(channel="telegram.main", message_id=f"{REQUESTER}:{first}")

        async def settled() -> bool:
            entry = await apps[other].store.inbox.get(key)
            return entry is not None and entry.status is InboxStatus.DONE

        await eventually_async(settled)  # taken over: found delivered, or sent again
        await say(tg, "while cut off")
        await eventually(lambda: answers(tg, "while cut off") == 1)
        links[cut[0]].restore()
        await eventually_async(lambda: ready(apps[cut[0]]))

    texts = [str(m["text"]) for m in tg.bot_messages(REQUESTER)]
    assert texts == ["re: first", "re: while cut off"]
    assert not any(REPEAT_MARKER in text for text in texts)
    assert tg.changed_by_edit == []  # the probe changed no message


async def test_a_replica_whose_database_stops_answering_is_fenced_and_comes_back(
    tg: FakeTelegram, link: DatabaseLink, second_link: DatabaseLink, pg_url: str, tmp_path: Path
) -> None:
    """Nothing is closed, nothing answers (packets silently dropped): the polling replica's
    heartbeat hangs. It stops polling on its own timer and reports not-ready; the other
    takes over; when the link carries again, what hung completes and it is ready again.
    Each replica has a link of its own: whichever polls when the link goes (a loaded
    machine may hand the lease to B before then) is the one frozen."""
    links = {"A": link, "B": second_link}
    apps = {
        name: App(
            settings(tg, through(pg_url, links[name].port), name, tmp_path / name),
            provider=ScriptedProvider([echo] * 5),
        )
        for name in links
    }
    role = "telegram.main.poll"

    def holder() -> str | None:
        names = [n for n, app in apps.items() if app.keeper and app.keeper.held() == [role]]
        return names[0] if len(names) == 1 else None

    async with contextlib.AsyncExitStack() as running:
        await apps["A"].start()
        running.push_async_callback(apps["A"].stop)
        await eventually(lambda: tg.poll_book.clients() == ["A"])
        await apps["B"].start()
        running.push_async_callback(apps["B"].stop)
        await eventually(lambda: any(standing_by(app) for app in apps.values()))
        await eventually(lambda: holder() is not None)

        frozen = holder()
        assert frozen is not None
        other = "B" if frozen == "A" else "A"
        hung = apps[frozen]
        links[frozen].freeze()
        await eventually(lambda: hung.keeper is not None and hung.keeper.refusal() is not None)
        assert await not_ready(hung)  # answered at once: readiness reads the heartbeat's state
        await eventually(lambda: holder() == other)
        await say(tg, "while one hangs")
        await eventually(lambda: answers(tg, "while one hangs") == 1)
        assert hung.keeper is not None and hung.keeper.held() == []

        links[frozen].thaw()
        await eventually_async(lambda: ready(hung))
    assert answers(tg, "while one hangs") == 1
    assert tg.poll_book.conflicts == []


async def test_a_message_the_database_cannot_take_is_refused_not_answered(
    tg: FakeTelegram, link: DatabaseLink, pg_url: str, tmp_path: Path
) -> None:
    """Admission that finds the database server gone raises StorageUnavailable to the
    adapter (which then leaves the event unconfirmed) instead of telling the sender that
    something went wrong; the platform's next delivery of it is answered, once."""
    app = App(
        settings(tg, through(pg_url, link.port), "A", tmp_path / "a"),
        provider=ScriptedProvider([echo] * 5),
    )
    channel = ChannelRef(kind="telegram", alias="main")
    chat = str(REQUESTER)
    envelope = IngressEnvelope(
        channel=channel,
        message_id=f"{REQUESTER}:50",
        conversation_id=chat,
        sender=Sender(id=chat, display_name="Ann"),
        text="refused once",
        reply_target=DeliveryTarget(channel=channel, conversation_id=chat),
        is_direct=True,
        addressed_to_bot=True,
    )
    async with app:
        await eventually(lambda: tg.poll_book.clients() == ["A"])
        link.cut()
        with pytest.raises(StorageUnavailable):
            await app.gateway.deliver(envelope)
        link.restore()
        await eventually_async(lambda: ready(app))
        await app.gateway.deliver(envelope)
        await eventually(lambda: answers(tg, "refused once") == 1)
    texts = [m["text"] for m in tg.bot_messages(REQUESTER)]
    assert FAILURE_MESSAGE not in texts
    assert texts.count("re: refused once") == 1


@pytest.fixture
def own_server() -> Iterator[PgServer]:
    """A PostgreSQL server of this test's own, to stop and start again."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop("immediate")
        shutil.rmtree(server.root, ignore_errors=True)


async def test_the_database_server_stopping_makes_the_replica_not_ready_until_it_is_back(
    tg: FakeTelegram, own_server: PgServer, tmp_path: Path
) -> None:
    """The whole server goes away (stopped, then started again): the replica reports
    not-ready and stops polling; a message sent meanwhile stays with Telegram and is
    answered, once, when the database is back."""
    url = own_server.url(own_server.create_database())
    app = App(settings(tg, url, "A", tmp_path / "a"), provider=ScriptedProvider([echo] * 5))
    async with app:
        await eventually(lambda: tg.poll_book.clients() == ["A"])
        await eventually_async(lambda: ready(app))
        await say(tg, "before")
        await eventually(lambda: answers(tg, "before") == 1)

        await asyncio.to_thread(own_server.stop, "fast")
        await eventually_async(lambda: not_ready(app))
        await eventually(lambda: "standby" in app.channels["telegram.main"].health.detail)
        polls = len(tg.poll_book.polls)
        await say(tg, "while it is down")

        await asyncio.to_thread(own_server.start)
        await eventually_async(lambda: ready(app))
        await eventually(lambda: answers(tg, "while it is down") == 1)
        assert len(tg.poll_book.polls) > polls  # polling again
    assert answers(tg, "before") == 1
    assert answers(tg, "while it is down") == 1
