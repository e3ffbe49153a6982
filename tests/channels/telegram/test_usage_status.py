"""End to end: ``/usage`` and ``/status`` on Telegram through the whole daemon and
python-telegram-bot against the loopback fake. Telegram has no private answer in a group,
so ``/usage`` there goes to the sender's chat with the bot and the group hears only that it
went there; when Telegram refuses that chat (the person never started the bot) the group is
told how to ask privately, and still sees no figure. ``/status`` is answered in place."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bot.app import App
from bot.config import BudgetsConfig
from bot.gateway.status_commands import NOT_SENT, SENT_PRIVATELY
from bot.providers.base import Usage
from bot.store.usage import UsageRecord
from tests.fakes.scripted_provider import ScriptedProvider
from tests.fakes.telegram_server import ApiCall, FakeTelegram, command, message, user
from tests.fakes.telegram_setup import REQUESTER, settings_for, started

pytestmark = pytest.mark.usefixtures("telegram_env")

GROUP = {"id": -100700800, "type": "supergroup", "title": "team"}


def text_of(call: ApiCall) -> str:
    return str(call.params.get("text", ""))


def spent(tokens: int) -> UsageRecord:
    return UsageRecord(
        at=time.time(),
        turn_id="t1",
        session_key=f"telegram.main:{GROUP['id']}",
        channel="telegram.main",
        conversation_id=str(GROUP["id"]),
        user_id=str(REQUESTER),
        agent="default",
        provider="default",
        model="m",
        usage=Usage(input_tokens=tokens, output_tokens=0),
        latency_ms=5,
        cost=None,
    )


async def ask(tg: FakeTelegram, text: str, message_id: int) -> None:
    payload = message(GROUP, user(REQUESTER), text, message_id=message_id, entities=command(text))
    await tg.push({"message": payload})


@pytest.mark.parametrize("dm_refused", [False, True])
async def test_usage_in_a_group_is_sent_privately(
    tg: FakeTelegram, tmp_path: Path, dm_refused: bool
) -> None:
    cfg = settings_for(tg, tmp_path)
    budgets = BudgetsConfig.model_validate({"per_user": {"monthly_tokens": 100_000}})
    provider = ScriptedProvider([])
    async with App(cfg.model_copy(update={"budgets": budgets}), provider=provider, tools=[]) as app:
        await started(app)
        await app.store.usage.record([spent(1_234)])
        if dm_refused:
            tg.fail_next(
                "sendMessage", 403, "Forbidden: bot can't initiate conversation with a user"
            )
        await ask(tg, "/usage", 70)
        [pointer] = await tg.wait_for("sendMessage", lambda c: c.params["chat_id"] == GROUP["id"])
        sent = tg.calls_of("sendMessage")
    figures = [c for c in sent if "1,234 tokens" in text_of(c)]
    assert [c.params["chat_id"] for c in figures] == [REQUESTER]  # never to the group
    if dm_refused:
        assert text_of(pointer) == NOT_SENT.format(prefix="/")
    else:
        assert text_of(pointer) == SENT_PRIVATELY
        [private] = figures
        assert private.params["chat_id"] == REQUESTER
        assert "Your monthly tokens: 98,766 tokens left of 100,000 tokens" in text_of(private)
    assert provider.requests == []


async def test_status_is_answered_in_the_group(tg: FakeTelegram, tmp_path: Path) -> None:
    provider = ScriptedProvider([])
    async with App(settings_for(tg, tmp_path), provider=provider, tools=[]) as app:
        await started(app)
        await ask(tg, "/status@hatchbot", 71)
        [answer] = await tg.wait_for("sendMessage", lambda c: "Agent: " in text_of(c))
    assert answer.params["chat_id"] == GROUP["id"]
    assert text_of(answer).splitlines()[-1] == "Grants in force here: none."
    assert provider.requests == []
