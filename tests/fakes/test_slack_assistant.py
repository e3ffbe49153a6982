"""The fake Slack answers the ``assistant.threads.*`` methods as Slack documents them: required
arguments, at most four suggested prompts, ``not_in_assistant_thread`` outside an assistant
thread of a DM, ``missing_scope`` (with ``needed`` and ``provided``) without
``assistant:write``; over HTTP as slack_sdk sends them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fakes.slack_server import FakeSlack
from tests.fakes.test_slack_limits import APP_TOKEN, BOT_TOKEN, call

DM = "D0ASSIST"
THREAD = "1700000100.000100"
JSON = dict[str, Any]
PROMPT = {"title": "Hi", "message": "Say hi"}


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(BOT_TOKEN, APP_TOKEN) as fake:
        fake.assistant.start(user="UANN", dm_channel=DM, thread_ts=THREAD)
        yield fake


@pytest.mark.parametrize(
    ("method", "params", "error"),
    [
        ("assistant.threads.setStatus", {"thread_ts": THREAD, "status": "x"}, "channel_not_found"),
        ("assistant.threads.setStatus", {"channel_id": DM, "status": "x"}, "invalid_thread_ts"),
        (
            "assistant.threads.setStatus",
            {"channel_id": DM, "thread_ts": THREAD},
            "invalid_arguments",
        ),
        (
            "assistant.threads.setStatus",
            {"channel_id": DM, "thread_ts": THREAD, "status": "x", "loading_messages": ["a"] * 11},
            "invalid_arguments",
        ),
        (
            "assistant.threads.setSuggestedPrompts",
            {"channel_id": DM, "thread_ts": THREAD, "prompts": [PROMPT] * 5},
            "invalid_arguments",
        ),
        (
            "assistant.threads.setSuggestedPrompts",
            {"channel_id": DM, "thread_ts": THREAD, "prompts": [{"title": "no message"}]},
            "invalid_arguments",
        ),
        (
            "assistant.threads.setTitle",
            {"channel_id": DM, "thread_ts": THREAD},
            "invalid_arguments",
        ),
        ("assistant.threads.setTitle", {"channel_id": DM, "title": "t"}, "invalid_thread_ts"),
    ],
)
async def test_malformed_calls_are_refused(
    slack: FakeSlack, method: str, params: JSON, error: str
) -> None:
    assert await call(slack, method, params) == (200, {"ok": False, "error": error})
    assert slack.rule_refusals == [(method, error)]


@pytest.mark.parametrize(
    "method",
    [
        "assistant.threads.setStatus",
        "assistant.threads.setSuggestedPrompts",
        "assistant.threads.setTitle",
    ],
)
async def test_within_the_rules_in_an_assistant_thread(slack: FakeSlack, method: str) -> None:
    params = {"channel_id": DM, "thread_ts": THREAD, "status": "", "title": "t"}
    params["prompts"] = [PROMPT] * 4
    assert await call(slack, method, params) == (200, {"ok": True})
    other = {**params, "thread_ts": "1700000999.000100"}
    assert await call(slack, method, other) == (
        200,
        {"ok": False, "error": "not_in_assistant_thread"},
    )
    assert slack.rule_refusals == []


async def test_status_in_a_channel_thread_needs_chat_write_only(slack: FakeSlack) -> None:
    slack.assistant.scopes = {"chat:write"}
    params = {"channel_id": "C0001", "thread_ts": THREAD, "status": "is thinking…"}
    assert await call(slack, "assistant.threads.setStatus", params) == (200, {"ok": True})
    status, body = await call(
        slack, "assistant.threads.setTitle", {"channel_id": DM, "thread_ts": THREAD, "title": "t"}
    )
    assert (status, body["error"], body["needed"]) == (200, "missing_scope", "assistant:write")
    assert body["provided"] == "chat:write"
