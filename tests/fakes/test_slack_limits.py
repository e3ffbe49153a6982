"""The fake Slack refuses what Slack's Web API refuses, with Slack's own answer (``ok: false``
and its ``error``): one request over each documented limit (:mod:`tests.fakes.limits`) and
one within it, over HTTP as slack_sdk sends them."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.fakes.limits import (
    SLACK_ACTION_ID,
    SLACK_ACTIONS_ELEMENTS,
    SLACK_BLOCK_ID,
    SLACK_CONTEXT_ELEMENTS,
    SLACK_HEADER_TEXT,
    SLACK_MESSAGE_BLOCKS,
    SLACK_SECTION_TEXT,
    SLACK_TEXT,
)
from tests.fakes.slack_server import FakeSlack

BOT_TOKEN = "xoxb-fake-limits"
APP_TOKEN = "xapp-fake-limits"
CHANNEL = "C0123ABCDE"
JSON = dict[str, Any]
#: Slack's formats (slack-api-specs: defs_ts, defs_user_id, defs_bot_id, defs_app_id)
TS = re.compile(r"^\d{10}\.\d{6}$")
USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")
BOT_ID = re.compile(r"^B[A-Z0-9]{8,}$")
APP_ID = re.compile(r"^A[A-Z0-9]{1,}$")


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(BOT_TOKEN, APP_TOKEN) as fake:
        yield fake


async def call(slack: FakeSlack, method: str, params: JSON) -> tuple[int, JSON]:
    headers = {"Authorization": f"Bearer {BOT_TOKEN}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{slack.api_base_url}{method}", json=params, headers=headers) as response,
    ):
        return response.status, await response.json()


def section(text: str, **extra: Any) -> JSON:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}, **extra}


def button(action_id: str) -> JSON:
    return {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": "Approve"},
        "value": "v",
    }


def context(count: int) -> JSON:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": "x"}] * count}


def actions(count: int) -> JSON:
    return {"type": "actions", "elements": [button(f"a{i}") for i in range(count)]}


def post(**fields: Any) -> JSON:
    return {"channel": CHANNEL, "text": "fallback", **fields}


#: (method, refused params, Slack's error, the same call within the limit)
CASES: list[tuple[str, JSON, str, JSON]] = [
    ("chat.postMessage", {"text": "hi"}, "channel_not_found", post()),
    (
        "chat.postMessage",
        {"channel": CHANNEL, "text": "x" * (SLACK_TEXT.most + 1)},
        "msg_too_long",
        {"channel": CHANNEL, "text": "x" * SLACK_TEXT.most},
    ),
    ("chat.postMessage", {"channel": CHANNEL}, "no_text", post()),
    (
        "chat.postMessage",
        post(blocks=[section("x")] * (SLACK_MESSAGE_BLOCKS.most + 1)),
        "invalid_blocks",
        post(blocks=[section("x")] * SLACK_MESSAGE_BLOCKS.most),
    ),
    (
        "chat.postMessage",
        post(blocks=[section("x" * (SLACK_SECTION_TEXT.most + 1))]),
        "invalid_blocks",
        post(blocks=[section("x" * SLACK_SECTION_TEXT.most)]),
    ),
    (
        "chat.postMessage",
        post(blocks=[section("")]),
        "invalid_blocks",
        post(blocks=[section("x")]),
    ),
    (
        "chat.postMessage",
        post(
            blocks=[
                {
                    "type": "header",
                    "text": {"type": "plain_text", "text": "h" * (SLACK_HEADER_TEXT.most + 1)},
                }
            ]
        ),
        "invalid_blocks",
        post(
            blocks=[
                {
                    "type": "header",
                    "text": {"type": "plain_text", "text": "h" * SLACK_HEADER_TEXT.most},
                }
            ]
        ),
    ),
    (
        "chat.postMessage",
        post(blocks=[context(SLACK_CONTEXT_ELEMENTS.most + 1)]),
        "invalid_blocks",
        post(blocks=[context(SLACK_CONTEXT_ELEMENTS.most)]),
    ),
    (
        "chat.postMessage",
        post(blocks=[section("x", block_id="b" * (SLACK_BLOCK_ID.most + 1))]),
        "invalid_blocks",
        post(blocks=[section("x", block_id="b" * SLACK_BLOCK_ID.most)]),
    ),
    (
        "chat.postMessage",
        post(blocks=[section("x", block_id="same"), section("y", block_id="same")]),
        "invalid_blocks",
        post(blocks=[section("x", block_id="one"), section("y", block_id="two")]),
    ),
    (
        "chat.postMessage",
        post(blocks=[{"type": "actions", "elements": [button("a" * (SLACK_ACTION_ID.most + 1))]}]),
        "invalid_blocks",
        post(blocks=[{"type": "actions", "elements": [button("a" * SLACK_ACTION_ID.most)]}]),
    ),
    (
        "chat.postMessage",
        post(blocks=[actions(SLACK_ACTIONS_ELEMENTS.most + 1)]),
        "invalid_blocks",
        post(blocks=[actions(SLACK_ACTIONS_ELEMENTS.most)]),
    ),
    (
        "chat.postMessage",
        post(blocks=[{"type": "actions", "elements": [button("same"), button("same")]}]),
        "invalid_blocks",
        post(blocks=[{"type": "actions", "elements": [button("yes"), button("no")]}]),
    ),
    (
        "chat.postMessage",
        post(metadata={"event_type": "hatchway_reply"}),
        "invalid_metadata_format",
        post(metadata={"event_type": "hatchway_reply", "event_payload": {"turn": "t1"}}),
    ),
    ("chat.update", {"channel": CHANNEL, "text": "x"}, "message_not_found", {}),
    ("chat.update", {"ts": "1700000001.000100", "text": "x"}, "channel_not_found", {}),
    ("chat.postEphemeral", {"channel": CHANNEL, "text": "x"}, "user_not_found", {}),
    (
        "reactions.add",
        {"channel": CHANNEL, "timestamp": "1700000001.000100", "name": ":eyes:"},
        "invalid_name",
        {"channel": CHANNEL, "timestamp": "1700000001.000100", "name": "eyes"},
    ),
    ("reactions.add", {"channel": CHANNEL, "name": "eyes"}, "no_item_specified", {}),
]


@pytest.mark.parametrize(("method", "refused", "error", "valid"), CASES)
async def test_a_limit_is_refused_with_slacks_error(
    slack: FakeSlack, method: str, refused: JSON, error: str, valid: JSON
) -> None:
    status, body = await call(slack, method, refused)

    assert status == 200
    assert body["ok"] is False and body["error"] == error
    if error == "invalid_blocks":
        (message,) = body["response_metadata"]["messages"]
        assert message.startswith("[ERROR] ") and "[json-pointer:/blocks" in message
    if valid:
        status, body = await call(slack, method, valid)
        assert (status, body["ok"]) == (200, True), body


async def test_a_posted_message_is_answered_in_slacks_formats(slack: FakeSlack) -> None:
    _, body = await call(slack, "chat.postMessage", post())

    assert body["channel"] == CHANNEL and TS.match(body["ts"])
    message = body["message"]
    assert USER_ID.match(message["user"]) and BOT_ID.match(message["bot_id"])
    assert APP_ID.match(message["app_id"]) and message["ts"] == body["ts"]


@pytest.mark.parametrize(
    "method",
    [
        "chat.postMessage",
        "chat.update",
        "chat.postEphemeral",
        "views.open",
        "views.update",
        "users.info",
        "conversations.history",
        "conversations.replies",
        "conversations.members",
        "conversations.info",
        "reactions.add",
    ],
)
async def test_a_call_without_arguments_is_refused_not_crashed(
    slack: FakeSlack, method: str
) -> None:
    status, body = await call(slack, method, {})

    assert status == 200
    assert body["ok"] is False and isinstance(body["error"], str)


@pytest.mark.parametrize(
    ("raw", "error"), [(b"{not json", "invalid_json"), (b"[1]", "json_not_object")]
)
async def test_a_body_slack_cannot_read_is_refused_not_crashed(
    slack: FakeSlack, raw: bytes, error: str
) -> None:
    headers = {"Authorization": f"Bearer {BOT_TOKEN}", "Content-Type": "application/json"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{slack.api_base_url}chat.postMessage", data=raw, headers=headers) as response,
    ):
        status, body = response.status, await response.json()

    assert (status, body) == (200, {"ok": False, "error": error})
