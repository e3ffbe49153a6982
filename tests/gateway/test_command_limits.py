"""Chat commands obey the abuse limits, through the whole daemon and python-telegram-bot
against the loopback Bot API fake: every member command takes a token from the same buckets
as messages (each command of the table, so one added later is covered too), a burst of
``/new`` gets as many answers as the bucket holds and one notice, a member's ``/help`` is
counted but a stranger's ``/id`` is not (it is answered once every few seconds, as ever), and
``/stop`` always stops, with its answers counted by an allowance of their own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.agent.loop import CANCELLED_MESSAGE
from bot.app import App
from bot.chat_commands import CHAT_COMMANDS, CommandLimit
from bot.config import Settings, parse_settings
from bot.config.limits import RateLimit
from bot.gateway import command_limits
from bot.gateway.command_limits import AnswerAllowance
from bot.gateway.commands import NEW_SESSION, NOTHING_RUNNING
from bot.gateway.ratelimit import RATE_LIMITED
from bot.providers.base import CompletionRequest, ProviderReply
from bot.store import InboxKey
from tests.fakes.scripted_provider import ScriptedProvider
from tests.fakes.telegram_server import ApiCall, FakeTelegram, command, message, user
from tests.fakes.telegram_setup import APPROVER, REQUESTER, STRANGER, started
from tests.gateway.conftest import echo
from tests.gateway.test_gateway import until

ANN, BOB = REQUESTER, 4004
GROUP: dict[str, Any] = {"id": -100500600, "type": "supergroup", "title": "team"}
GROUP_SESSION = f"telegram.main:{GROUP['id']}"
#: The start of the notice a refused sender gets (then when to try again).
NOTICE = "You're sending messages faster than I can take them"
COUNTED = [spec.name for spec in CHAT_COMMANDS if spec.limit is CommandLimit.MESSAGES]


def settings(
    tg: FakeTelegram, tmp_path: Path, *, burst: int, allowed: tuple[str, ...] = ("*",)
) -> Settings:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "approval": {"timeout_s": 30},
            # one message per ten minutes: nothing refills while a test runs
            "rate_limits": {"per_user": {"messages_per_minute": 0.1, "burst": burst}},
            "channels": {
                "telegram": {
                    "main": {
                        "api_base_url": tg.base_url,
                        "file_base_url": tg.file_base_url,
                        "poll_timeout_s": 1,
                        "reconnect_initial_s": 0.01,
                        "reconnect_max_s": 0.05,
                        "allowed_users": list(allowed),
                        "approvers": [str(APPROVER)],
                        "require_mention": False,
                    }
                }
            },
        },
        environ={},
        require_provider=False,
    )


def texts(tg: FakeTelegram) -> list[str]:
    """What the bot said, in order, a notice as :data:`NOTICE` whatever wait it names."""
    said = [str(c.params["text"]) for c in tg.calls_of("sendMessage")]
    return [NOTICE if text.startswith(NOTICE) else text for text in said]


def sent_with(text: str) -> Callable[[ApiCall], bool]:
    return lambda c: text in str(c.params.get("text"))


async def say(tg: FakeTelegram, sender: int, text: str, message_id: int) -> None:
    entities = command(text) if text.startswith("/") else None
    payload = message(GROUP, user(sender), text, message_id=message_id, entities=entities)
    await tg.push({"message": payload})


async def all_handled(tg: FakeTelegram, marker_id: int) -> None:
    """Bob says something and is answered: the adapter hands updates over one after the
    other, each once admitted, so everything pushed before has been through admission."""
    await say(tg, BOB, f"bob {marker_id}", marker_id)
    await tg.wait_for("sendMessage", sent_with(f"echo: bob {marker_id}"))


@pytest.mark.parametrize("name", COUNTED)
async def test_a_member_command_takes_a_token_like_a_message(
    tg: FakeTelegram, tmp_path: Path, name: str
) -> None:
    provider = ScriptedProvider([echo] * 3)
    async with App(settings(tg, tmp_path, burst=1), provider=provider, tools=[]) as app:
        await started(app)
        await say(tg, ANN, "hello", 1)
        await tg.wait_for("sendMessage", sent_with("echo: hello"))
        await say(tg, ANN, f"/{name}", 2)
        await say(tg, ANN, f"/{name}", 3)
        await all_handled(tg, 4)
        sent = texts(tg)
        history = await app.store.history.load(GROUP_SESSION)
        approvals = await app.store.approvals.list()
    # the command did nothing: no answer of its own, no card, the history kept
    assert sent == ["echo: hello", NOTICE, "echo: bob 4"]
    assert app.gateway.rate_limited == 2
    assert len(history) == 4 and approvals == []
    assert len(provider.requests) == 2


async def test_a_burst_of_new_gets_the_buckets_worth_and_one_notice(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    provider = ScriptedProvider([echo] * 3)
    async with App(settings(tg, tmp_path, burst=3), provider=provider, tools=[]) as app:
        await started(app)
        for n in range(1, 9):
            await say(tg, ANN, "/new", n)
        await say(tg, ANN, "hello after the burst", 9)  # the same bucket: refused too
        await all_handled(tg, 10)
        sent = texts(tg)
        refused = await app.store.inbox.get(
            InboxKey(channel="telegram.main", message_id=f"{GROUP['id']}:9")
        )
    assert sent == [NEW_SESSION] * 3 + [NOTICE, "echo: bob 10"]
    assert app.gateway.rate_limited == 6
    assert refused is not None and refused.error == RATE_LIMITED
    assert len(provider.requests) == 1


async def test_a_members_id_and_help_take_tokens_and_a_strangers_do_not(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    members = (str(ANN), str(BOB))
    provider = ScriptedProvider([echo] * 3)
    async with App(
        settings(tg, tmp_path, burst=1, allowed=members), provider=provider, tools=[]
    ) as app:
        await started(app)
        await say(tg, ANN, "hello", 1)
        await tg.wait_for("sendMessage", sent_with("echo: hello"))
        await say(tg, ANN, "/help", 2)  # ann's bucket is empty: refused, told
        await say(tg, STRANGER, "/id", 3)  # a stranger has no bucket: answered, as ever
        await all_handled(tg, 4)
        sent = texts(tg)
    assert sent[:2] == ["echo: hello", NOTICE]
    assert f"Your user id: {STRANGER}" in sent[2]
    assert sent[3:] == ["echo: bob 4"]
    assert app.gateway.rate_limited == 1


async def test_stop_always_stops_and_its_answers_have_an_allowance(
    tg: FakeTelegram, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # three answers, and nothing refills while the test runs
    monkeypatch.setattr(command_limits, "STOP_ANSWERS_BURST", 3)
    monkeypatch.setattr(command_limits, "STOP_ANSWERS_PER_MINUTE", 0.001)
    thinking = asyncio.Event()

    async def slow(_request: CompletionRequest) -> ProviderReply:
        thinking.set()
        await asyncio.Event().wait()  # until /stop cancels the call
        raise AssertionError("never answered")

    provider = ScriptedProvider([slow, echo])
    async with App(settings(tg, tmp_path, burst=1), provider=provider, tools=[]) as app:
        await started(app)
        await say(tg, ANN, "think hard", 1)  # the bucket's one token
        async with asyncio.timeout(10):
            await thinking.wait()
        await say(tg, ANN, "/new", 2)  # refused: the bucket is empty
        await say(tg, ANN, "/stop", 3)  # stops all the same
        await tg.wait_for("sendMessage", sent_with(CANCELLED_MESSAGE))
        await until(lambda: app.gateway.active_turns == 0)  # not still finishing: see below
        for n in range(4, 10):
            await say(tg, ANN, "/stop", n)
        await all_handled(tg, 10)
        sent = texts(tg)
    assert [t for t in sent if t.startswith("⏹")] == [CANCELLED_MESSAGE]
    assert NEW_SESSION not in sent and sent.count(NOTICE) == 1
    # the stopping /stop took one of three answers: two more, then quiet (a /stop while the
    # stopped turn is still finishing would be told so instead, hence the wait above)
    assert sent.count(NOTHING_RUNNING) == 2
    assert app.gateway.rate_limited == 1


def test_answer_allowances_are_held_within_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(command_limits, "ALLOWANCES_HELD", 3)
    now = [0.0]
    allowance = AnswerAllowance(RateLimit(messages_per_minute=1, burst=1), clock=lambda: now[0])
    assert allowance.take("a") and not allowance.take("a")
    now[0] = 60.0  # a's bucket is full again
    assert allowance.take("b") and allowance.take("c")
    assert allowance.take("d")  # a fourth sender: a, full again, is forgotten first
    assert not allowance.take("b") and not allowance.take("c")  # still counting: kept
    for n in range(10):  # a crowd: the oldest still counting go, memory stays bounded
        assert allowance.take(f"crowd {n}")
    assert allowance.take("b")
