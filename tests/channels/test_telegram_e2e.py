"""End to end: the whole daemon (gateway, approvals, agent loop) behind the Telegram channel,
built from settings through the channel registry, against the loopback Bot API fake.

A DM turn asks for a side-effecting tool: the approval card (inline keyboard) is posted in the
requester's DM and the approver's DM; the requester's tap is refused with an alert; the
approver's tap runs the tool, the cards show the outcome, progress is edited in place and the
answer arrives as Telegram HTML. In a forum group, a message without a mention is ignored and
one with a mention is answered in the same topic. A long answer with code is split under
4,096 characters with every chunk valid on its own.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.channel import ClickVerdict, HealthState
from bot.config import Settings, parse_settings
from bot.tools.spec import ToolContext, ToolSpec
from channels.telegram import TelegramChannel
from tests.channels.test_telegram import wait_health
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.fakes.telegram_server import (
    ApiCall,
    FakeTelegram,
    bot_message,
    callback,
    forum_chat,
    mention,
    message,
    private_chat,
    user,
)

TOKEN = "515151:AAe2e-token-for-the-fake-bot-api-abcdefgh"
REQUESTER = 1001
APPROVER = 2002
TOPIC = 77


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(TOKEN) as fake:
        yield fake


def settings_for(tg: FakeTelegram, tmp_path: Path) -> Settings:
    telegram_main: dict[str, Any] = {
        "api_base_url": tg.base_url,
        "file_base_url": tg.file_base_url,
        "poll_timeout_s": 1,
        "reconnect_initial_s": 0.01,
        "reconnect_max_s": 0.05,
        "allowed_users": [str(REQUESTER)],
        "approvers": [str(APPROVER)],
    }
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "approval": {"timeout_s": 30, "dm_approvers": True},
            "channels": {"telegram": {"main": telegram_main}},
        },
        environ={},
        require_provider=False,
    )


def deploy_tool(ran: list[Mapping[str, object]]) -> ToolSpec:
    async def deploy(arguments: Mapping[str, object], context: ToolContext) -> str:
        ran.append(dict(arguments))
        return "deployed v2"

    return ToolSpec(
        name="deploy",
        description="Deploy a version.",
        parameters={
            "type": "object",
            "properties": {"version": {"type": "string"}},
            "required": ["version"],
        },
        handler=deploy,
    )


async def started(app: App) -> TelegramChannel:
    channel = app.channels["telegram.main"]
    assert isinstance(channel, TelegramChannel)
    await wait_health(channel, HealthState.CONNECTED)
    return channel


def is_card(c: ApiCall) -> bool:
    return "reply_markup" in c.params


async def test_dm_turn_with_approval(tg: FakeTelegram, tmp_path: Path) -> None:
    ran: list[Mapping[str, object]] = []
    provider = ScriptedProvider(
        [reply("", call("deploy", {"version": "v2"})), reply("Deployed **v2** & done.")]
    )
    app = App(settings_for(tg, tmp_path), provider=provider, tools=[deploy_tool(ran)])
    async with app:
        await started(app)
        dm = private_chat(REQUESTER)
        await tg.push({"message": message(dm, user(REQUESTER, "Ann"), "deploy v2", message_id=10)})

        cards = await tg.wait_for("sendMessage", is_card, count=2)
        by_chat = {c.params["chat_id"]: c for c in cards}
        assert set(by_chat) == {REQUESTER, APPROVER}
        buttons = by_chat[REQUESTER].params["reply_markup"]["inline_keyboard"][0]
        approve = buttons[0]["callback_data"]
        assert re.fullmatch(r"ap:[\w-]+:a", approve)
        assert "deploy" in by_chat[REQUESTER].params["text"]

        await tg.wait_for("sendMessage", lambda c: "🔐" in str(c.params.get("text")))
        await tg.push(callback("q-ann", user(REQUESTER, "Ann"), approve, bot_message(dm, 501)))
        [refused] = await tg.wait_for("answerCallbackQuery")
        assert refused.params["show_alert"] is True
        assert refused.params["text"] == ClickVerdict.NOT_AUTHORISED.message
        assert ran == []

        approver_dm = private_chat(APPROVER)
        await tg.push(
            callback("q-boss", user(APPROVER, "Boss"), approve, bot_message(approver_dm, 502))
        )
        [answer] = await tg.wait_for("sendMessage", lambda c: "done" in str(c.params.get("text")))
        assert answer.params["text"] == "Deployed <b>v2</b> &amp; done."
        assert answer.params["parse_mode"] == "HTML"
        assert answer.params["chat_id"] == REQUESTER
        assert ran == [{"version": "v2"}]

        edits = await tg.wait_for(
            "editMessageText",
            lambda c: "Approved: deploy" in str(c.params.get("text")),
            count=2,
        )
        assert all("reply_markup" not in e.params for e in edits)
        await tg.wait_for("editMessageText", lambda c: "✅ deploy" in str(c.params.get("text")))
        accepted = [
            a
            for a in tg.calls_of("answerCallbackQuery")
            if a.params["callback_query_id"] == "q-boss"
        ]
        assert accepted and not accepted[0].params.get("show_alert")

        rows = await app.store.audit.since()
        decisions = {(row.decision, row.decided_by) for row in rows}
        assert ("click_refused:approve", str(REQUESTER)) in decisions
        assert any(by == str(APPROVER) and "refused" not in d for d, by in decisions)


async def test_group_mention_gating_and_topic(tg: FakeTelegram, tmp_path: Path) -> None:
    provider = ScriptedProvider([reply("Hello, topic.")])
    app = App(settings_for(tg, tmp_path), provider=provider, tools=[])
    group = forum_chat()
    async with app:
        await started(app)
        quiet = message(
            group, user(REQUESTER), "nobody asked the bot", message_id=20, thread_id=TOPIC
        )
        await tg.push({"message": quiet})
        text = "@hatchbot say hello"
        asked = message(
            group, user(REQUESTER), text, message_id=21, thread_id=TOPIC, entities=mention(text)
        )
        await tg.push({"message": asked})
        [answer] = await tg.wait_for("sendMessage", lambda c: "topic" in str(c.params["text"]))
    assert answer.params["chat_id"] == group["id"]
    assert answer.params["message_thread_id"] == TOPIC
    assert answer.params["reply_parameters"]["message_id"] == 21
    assert len(provider.requests) == 1
    assert provider.requests[0].messages[-1].content == "say hello"


async def test_long_answer_with_code_is_split(tg: FakeTelegram, tmp_path: Path) -> None:
    code = "\n".join(f"if a < {i} and b > {i}: total += {i}" for i in range(200))
    long_answer = "Here is the **plan**.\n\n```python\n" + code + "\n```\n\n" + "Done. " * 300
    assert len(long_answer) > 4096
    provider = ScriptedProvider([reply(long_answer)])
    app = App(settings_for(tg, tmp_path), provider=provider, tools=[])
    async with app:
        await started(app)
        dm = private_chat(REQUESTER)
        await tg.push({"message": message(dm, user(REQUESTER), "plan it", message_id=30)})
        await tg.wait_for("sendMessage", lambda c: "Done." in str(c.params["text"]))
        chunks = [str(c.params["text"]) for c in tg.calls_of("sendMessage")]
    assert len(chunks) >= 2
    assert all(len(c) <= 4096 for c in chunks)
    assert all(c.count("<pre>") == c.count("</pre>") for c in chunks)
    joined = "".join(chunks)
    assert "if a &lt; 0 and b &gt; 0: total += 0" in joined
    assert "if a &lt; 199 and b &gt; 199: total += 199" in joined
