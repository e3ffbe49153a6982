"""A daemon killed between posting an approval card and storing where it is (crash point
``after_card_post``), against the real daemon process and the Telegram fake: after the
restart the parked turn's card is approved with ``hatchway approvals approve ID``; nothing
knows the card's message to edit it, so the conversation is told the outcome in a new
message, the tool runs once and the answer arrives once (docs/approvals.md)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from bot.crashpoints import ENV as CRASH_ENV
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.ops.daemon_process import WAIT_S, start_daemon
from tests.reliability.routed_llm import RoutedOpenAI
from tests.reliability.test_parked_approval import (
    LLM_KEY,
    OWNER,
    TOKEN,
    answers,
    approval_ids,
    approve_from_the_host,
    check_once,
    llm,
    tg,
    until_answered,
    write_config,
)

pytestmark = pytest.mark.long

__all__ = ["llm", "tg"]  # the fixtures, shared with the parked approval tests

NOTICE = "🔐 The approval request for file_write was approved by"


async def test_a_card_whose_place_a_kill_lost_is_told_its_outcome_in_a_new_message(
    tmp_path: Path, tg: FakeTelegram, llm: RoutedOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARKED_TG_TOKEN", TOKEN)
    monkeypatch.setenv("PARKED_LLM_KEY", LLM_KEY)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    config = write_config(tmp_path / "hatchway.toml", tg=tg, llm=llm, workspace=workspace)
    llm.route_tools("q-park", [("file_write", {"path": "out.txt", "content": "parked"})])
    llm.route_text("q-park", "written after the approval")
    async with start_daemon(config, env={CRASH_ENV: "after_card_post"}) as daemon:
        await daemon.wait_notify("READY", "1")
        chat = private_chat(OWNER)
        await tg.push({"message": message(chat, user(OWNER), "q-park", message_id=7)})
        assert await daemon.wait_exit() == -signal.SIGKILL  # right after the card's post
    [card] = [m for m in tg.bot_messages(OWNER) if m["text"].startswith("🔐 Approval needed")]
    db = tmp_path / "hatchway.db"

    async with start_daemon(config) as daemon:
        await daemon.wait_notify("READY", "1")
        [approval_id] = approval_ids(db)
        await approve_from_the_host(config, approval_id, tmp_path)
        await until_answered(tg)
        [told] = await tg.wait_for(
            "sendMessage", lambda c: str(c.params.get("text")).startswith(NOTICE), wait_s=WAIT_S
        )
        daemon.signal(signal.SIGTERM)
        assert await daemon.wait_exit() == 0
    assert told.params["chat_id"] == OWNER
    assert len(answers(tg)) == 1
    # the card itself was never edited: nothing knew its message
    assert not [
        c for c in tg.calls_of("editMessageText") if c.params["message_id"] == card["message_id"]
    ]
    check_once(tg, workspace, db)
