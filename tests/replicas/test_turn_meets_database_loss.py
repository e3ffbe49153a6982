"""A turn in flight when the replica loses its database (the real daemon in-process over a
real PostgreSQL server, behind a link the test cuts or freezes; the real python-telegram-bot
against the loopback fake).

The turn waits for the model while the link goes; then the model answers and the turn's next
write meets the database gone: refused at once (a cut link), or unanswered until
``[storage] command_timeout_s`` (a frozen link: a server that hangs). Either way the replica
reports not-ready, the turn says nothing and leaves its inbox entry ``processing``, and once
the link carries again the replica is ready and settles the entry itself, without a restart,
by recovery's rules: its sender is told once to ask again (the answer never reached history),
in the words for an outage rather than a restart, and never gets the failure line on top.
The next message is answered as usual.

Waits are conditions with generous timeouts; nothing here measures how long anything took."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.app import App
from bot.gateway import SHUTDOWN_MESSAGE
from bot.gateway.recovery import INTERRUPTED_BY_OUTAGE, OUTAGE_MESSAGE
from bot.gateway.sending import FAILURE_MESSAGE
from bot.ops.health import assess_readiness
from bot.providers.base import CompletionRequest, ProviderReply
from bot.store import InboxKey, InboxStatus
from tests.fakes.db_link import DatabaseLink
from tests.fakes.scripted_provider import ScriptedProvider, reply
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.fakes.telegram_setup import REQUESTER
from tests.replicas.telegram_rig import settings, through
from tests.replicas.waiting import eventually, eventually_async


class HeldModel:
    """The model: the first request waits until :attr:`release` is set; every request is
    answered ``re: <text>``."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.release = asyncio.Event()

    async def held(self, request: CompletionRequest) -> ProviderReply:
        self.asked.set()
        await self.release.wait()
        return self.echo(request)

    def echo(self, request: CompletionRequest) -> ProviderReply:
        return reply(f"re: {request.messages[-1].content}")


def texts(tg: FakeTelegram) -> list[str]:
    return [str(m["text"]) for m in tg.bot_messages(REQUESTER)]


async def say(tg: FakeTelegram, text: str) -> int:
    """The requester writes ``text``; its message id is the next one Telegram gives (one
    counter for the bot's private chats, the bot's own messages included)."""
    chat = private_chat(REQUESTER)
    message_id = tg.next_message_id(REQUESTER)
    await tg.push({"message": message(chat, user(REQUESTER), text, message_id=message_id)})
    return message_id


@pytest.mark.parametrize("loss", ["cut", "freeze"])
async def test_a_turn_that_meets_the_database_gone_is_settled_once_it_is_back(
    tg: FakeTelegram, link: DatabaseLink, pg_url: str, tmp_path: Path, loss: str
) -> None:
    model = HeldModel()
    app = App(
        settings(
            tg,
            through(pg_url, link.port),
            "A",
            tmp_path / "a",
            command_timeout_s=1.0,
            connect_timeout_s=1.0,
        ),
        provider=ScriptedProvider([model.held, model.echo, model.echo]),
    )
    async with app:
        await eventually(lambda: tg.poll_book.clients() == ["A"])
        await eventually_async(lambda: _ready(app))
        held = await say(tg, "held in flight")
        async with asyncio.timeout(30):
            await model.asked.wait()

        if loss == "cut":
            link.cut()
        else:
            link.freeze()
        await eventually_async(lambda: _not_ready(app))
        verdict = await assess_readiness(app)
        assert any("database" in problem for problem in verdict.problems)
        model.release.set()  # the turn goes on, and meets the database gone
        await eventually(lambda: not app.gateway.active_turns)
        assert OUTAGE_MESSAGE not in texts(tg)  # nothing said while it is gone

        if loss == "cut":
            link.restore()
        else:
            link.thaw()
        await eventually_async(lambda: _ready(app))
        await eventually(lambda: OUTAGE_MESSAGE in texts(tg))
        key = InboxKey(channel="telegram.main", message_id=f"{REQUESTER}:{held}")

        async def settled() -> bool:  # marked in the transaction after the notice's send
            entry = await app.store.inbox.get(key)
            return entry is not None and entry.status is not InboxStatus.PROCESSING

        await eventually_async(settled)
        entry = await app.store.inbox.get(key)
        assert entry is not None and entry.status is InboxStatus.FAILED
        assert entry.error == INTERRUPTED_BY_OUTAGE

        await say(tg, "after")
        await eventually(lambda: "re: after" in texts(tg))
    said = texts(tg)
    # told of the outage once, and not of a restart that never happened
    assert said.count(OUTAGE_MESSAGE) == 1
    assert SHUTDOWN_MESSAGE not in said
    assert FAILURE_MESSAGE not in said
    assert "re: held in flight" not in said
    assert said.count("re: after") == 1


async def _ready(app: App) -> bool:
    return (await assess_readiness(app)).ready


async def _not_ready(app: App) -> bool:
    return not (await assess_readiness(app)).ready
