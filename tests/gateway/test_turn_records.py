"""What a turn leaves for the web console, through the real daemon and Telegram's fake: a turn
``/stop`` ended is recorded as stopped (its entry ``done`` with its error
:attr:`bot.turn.CancelReason.STOP`), an answered one is not, and each sender's display name
is kept by identity as messages arrive, and a group's title by place."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.agent.loop import CANCELLED_MESSAGE
from bot.app import App
from bot.providers.base import CompletionRequest, ProviderReply
from bot.turn import CancelReason
from tests.fakes.scripted_provider import ScriptedProvider
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.telegram_setup import started
from tests.gateway.conftest import echo
from tests.gateway.test_command_limits import ANN, GROUP_SESSION, say, sent_with, settings


async def test_a_stopped_turn_is_recorded_as_stopped(tg: FakeTelegram, tmp_path: Path) -> None:
    thinking = asyncio.Event()

    async def slow(_request: CompletionRequest) -> ProviderReply:
        thinking.set()
        await asyncio.Event().wait()  # until /stop cancels the call
        raise AssertionError("never answered")

    provider = ScriptedProvider([echo, slow, echo])
    async with App(settings(tg, tmp_path, burst=5), provider=provider, tools=[]) as app:
        await started(app)
        await say(tg, ANN, "hello", 1)
        await tg.wait_for("sendMessage", sent_with("echo: hello"))
        await say(tg, ANN, "think hard", 2)
        async with asyncio.timeout(30):
            await thinking.wait()
        await say(tg, ANN, "/stop", 3)
        await tg.wait_for("sendMessage", sent_with(CANCELLED_MESSAGE))
        # the session's next turn starts once the stopped one is settled
        await say(tg, ANN, "after", 4)
        await tg.wait_for("sendMessage", sent_with("echo: after"))
        page = await app.store.turns.for_session(GROUP_SESSION, None)
        _after, stopped, answered = page.turns
        assert stopped.text == "think hard" and stopped.error == CancelReason.STOP
        assert stopped.status == "done"
        assert [r.body for r in stopped.replies] == [CANCELLED_MESSAGE]
        assert answered.text == "hello" and answered.error is None
        names = await app.store.display_names.of([f"telegram:{ANN}"])
        assert list(names) == [f"telegram:{ANN}"] and names[f"telegram:{ANN}"]
        # and the group's title, as the updates gave it, by place
        titles = await app.store.conversation_titles.of([GROUP_SESSION])
        assert titles == {GROUP_SESSION: "team"}
