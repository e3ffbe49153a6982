"""The outbox on the daemon's path: a turn's ``send_message`` calls go through the App's
outbox and the real Telegram adapter to the loopback Bot API fake. With ``group_policy =
"open"`` (the default), a group still gets the message, an allowed user's DM too, and a
stranger's DM does not: the model is told it cannot post there."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from bot.app import App
from bot.providers.base import ChatMessage
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.fakes.telegram_setup import APPROVER, REQUESTER, STRANGER, settings_for, started

pytestmark = pytest.mark.usefixtures("telegram_env")

GROUP = -1001234567890
REFUSED = "is not a conversation this bot can post to"


def send(to: int, text: str) -> dict[str, object]:
    return {"channel": "telegram.main", "to": str(to), "text": text}


async def test_send_message_under_an_open_group_policy_never_dms_a_stranger(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    settings = settings_for(tg, tmp_path)
    config = settings.channels.get("telegram", "main")
    assert config is not None and config.group_policy == "open"
    # the calls run without a card, so that only the outbox decides
    approval = settings.approval.model_copy(update={"auto_approve": ["send_message"]})
    settings = settings.model_copy(update={"approval": approval})
    provider = ScriptedProvider(
        [
            reply(
                "",
                call("send_message", send(STRANGER, "psst, the deploy key"), id="c-stranger"),
                call("send_message", send(APPROVER, "for the approver"), id="c-approver"),
                call("send_message", send(GROUP, "release is out"), id="c-group"),
                call("send_message", send(REQUESTER, "a note to self"), id="c-self"),
            ),
            reply("Posted where I could."),
        ]
    )
    app = App(settings, provider=provider)
    async with app:
        await started(app)
        dm = private_chat(REQUESTER)
        await tg.push({"message": message(dm, user(REQUESTER, "Ann"), "spread it", message_id=5)})
        await tg.wait_for("sendMessage", lambda c: "Posted where" in str(c.params.get("text")))

    posted_to = {c.params["chat_id"] for c in tg.calls_of("sendMessage")}
    assert STRANGER not in posted_to and APPROVER not in posted_to
    assert {GROUP, REQUESTER} <= posted_to
    assert [m["text"] for m in tg.bot_messages(GROUP)] == ["release is out"]

    results = {m.tool_call_id: m.content for m in tool_results(provider.requests[-1].messages)}
    assert REFUSED in results["c-stranger"] and f"telegram.main:{STRANGER}" in results["c-stranger"]
    assert REFUSED in results["c-approver"]  # an approver is not an allowed user
    assert results["c-group"] == f"sent to telegram.main:{GROUP}"
    assert results["c-self"].startswith(f"sent to telegram.main:{REQUESTER}")


def tool_results(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    return [m for m in messages if m.role == "tool"]
