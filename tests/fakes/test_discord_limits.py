"""The fake Discord refuses what Discord's API refuses, with Discord's own error (``400``,
code 50035, ``Invalid Form Body`` and the field's nested ``errors``): one request over each
documented limit (:mod:`tests.fakes.limits`) and one within it, over HTTP as discord.py
sends them."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.fakes.discord_payloads import message_payload, user_payload
from tests.fakes.discord_server import BOT_TOKEN, FakeDiscord
from tests.fakes.limits import (
    DISCORD_ACTION_ROWS,
    DISCORD_BUTTON_LABEL,
    DISCORD_CONTENT,
    DISCORD_CUSTOM_ID,
    DISCORD_EMBED_DESCRIPTION,
    DISCORD_EMBED_FIELD_VALUE,
    DISCORD_EMBED_FIELDS,
    DISCORD_EMBED_TITLE,
    DISCORD_EMBED_TOTAL,
    DISCORD_EMBEDS,
    DISCORD_NONCE,
    DISCORD_ROW_COMPONENTS,
)

CHANNEL = "1100000000000000001"
JSON = dict[str, Any]
SNOWFLAKE = re.compile(r"^(0|[1-9][0-9]*)$")  # discord-api-spec SnowflakeType


@pytest.fixture
async def discord() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        fake.add_guild(channels={CHANNEL: "general"})
        yield fake


async def create(discord: FakeDiscord, body: JSON) -> tuple[int, JSON]:
    headers = {"Authorization": f"Bot {BOT_TOKEN}"}
    url = f"{discord.base_url}/channels/{CHANNEL}/messages"
    async with (
        aiohttp.ClientSession() as http,
        http.post(url, json=body, headers=headers) as response,
    ):
        return response.status, await response.json()


def button(custom_id: str, *, label: str = "Approve", style: int | None = 1) -> JSON:
    button: JSON = {"type": 2, "custom_id": custom_id, "label": label}
    if style is not None:
        button["style"] = style
    return button


def rows(count: int, per_row: int = 1) -> list[JSON]:
    return [
        {"type": 1, "components": [button(f"b{r}.{n}") for n in range(per_row)]}
        for r in range(count)
    ]


def embed(**fields: Any) -> JSON:
    return {"title": "Request", **fields}


def field(value: str = "v") -> JSON:
    return {"name": "argument", "value": value}


#: (refused body, the field path of its error, the same message within the limit)
CASES: list[tuple[JSON, str, JSON]] = [
    (
        {"content": "x" * (DISCORD_CONTENT.most + 1)},
        "content",
        {"content": "x" * DISCORD_CONTENT.most},
    ),
    (
        {"content": "x", "nonce": "n" * (DISCORD_NONCE.most + 1)},
        "nonce",
        {"content": "x", "nonce": "n" * DISCORD_NONCE.most},
    ),
    (
        {"content": "x", "components": rows(DISCORD_ACTION_ROWS.most + 1)},
        "components",
        {"content": "x", "components": rows(DISCORD_ACTION_ROWS.most)},
    ),
    (
        {"content": "x", "components": rows(1, DISCORD_ROW_COMPONENTS.most + 1)},
        "components.0.components",
        {"content": "x", "components": rows(1, DISCORD_ROW_COMPONENTS.most)},
    ),
    (
        {"content": "x", "components": [{"type": 1, "components": []}]},
        "components.0.components",
        {"content": "x", "components": rows(1)},
    ),
    (
        {
            "content": "x",
            "components": [{"type": 1, "components": [button("c" * (DISCORD_CUSTOM_ID.most + 1))]}],
        },
        "components.0.components.0.custom_id",
        {
            "content": "x",
            "components": [{"type": 1, "components": [button("c" * DISCORD_CUSTOM_ID.most)]}],
        },
    ),
    (
        {"content": "x", "components": [{"type": 1, "components": [button("a"), button("a")]}]},
        "components.0.components.1.custom_id",
        {"content": "x", "components": [{"type": 1, "components": [button("a"), button("b")]}]},
    ),
    (
        {
            "content": "x",
            "components": [
                {
                    "type": 1,
                    "components": [button("a", label="l" * (DISCORD_BUTTON_LABEL.most + 1))],
                }
            ],
        },
        "components.0.components.0.label",
        {
            "content": "x",
            "components": [
                {"type": 1, "components": [button("a", label="l" * DISCORD_BUTTON_LABEL.most)]}
            ],
        },
    ),
    (
        {"content": "x", "components": [{"type": 1, "components": [button("a", style=None)]}]},
        "components.0.components.0.style",
        {"content": "x", "components": [{"type": 1, "components": [button("a", style=4)]}]},
    ),
    (
        {"embeds": [embed(title="t" * (DISCORD_EMBED_TITLE.most + 1))]},
        "embeds.0.title",
        {"embeds": [embed(title="t" * DISCORD_EMBED_TITLE.most)]},
    ),
    (
        {"embeds": [embed(description="d" * (DISCORD_EMBED_DESCRIPTION.most + 1))]},
        "embeds.0.description",
        {"embeds": [embed(description="d" * DISCORD_EMBED_DESCRIPTION.most)]},
    ),
    (
        {"embeds": [embed(fields=[field()] * (DISCORD_EMBED_FIELDS.most + 1))]},
        "embeds.0.fields",
        {"embeds": [embed(fields=[field()] * DISCORD_EMBED_FIELDS.most)]},
    ),
    (
        {"embeds": [embed(fields=[field("v" * (DISCORD_EMBED_FIELD_VALUE.most + 1))])]},
        "embeds.0.fields.0.value",
        {"embeds": [embed(fields=[field("v" * DISCORD_EMBED_FIELD_VALUE.most)])]},
    ),
    (
        {"embeds": [embed()] * (DISCORD_EMBEDS.most + 1)},
        "embeds",
        {"embeds": [embed()] * DISCORD_EMBEDS.most},
    ),
    (
        {"embeds": [{"description": "d" * (DISCORD_EMBED_TOTAL.most // 2 + 1)}] * 2},
        "embeds",
        {"embeds": [{"description": "d" * (DISCORD_EMBED_TOTAL.most // 2)}] * 2},
    ),
]


def errors_at(errors: JSON, path: str) -> list[JSON]:
    """The ``_errors`` of the field at ``path`` in Discord's nested ``errors``."""
    node = errors
    for key in path.split("."):
        node = node[key]
    return list(node["_errors"])


@pytest.mark.parametrize(("refused", "path", "valid"), CASES)
async def test_a_limit_is_refused_with_discords_error(
    discord: FakeDiscord, refused: JSON, path: str, valid: JSON
) -> None:
    status, body = await create(discord, refused)

    assert status == 400
    assert (body["code"], body["message"]) == (50035, "Invalid Form Body")
    (error,) = errors_at(body["errors"], path)
    assert isinstance(error["code"], str) and isinstance(error["message"], str)
    status, body = await create(discord, valid)
    assert status == 200, body


async def test_a_message_of_embeds_alone_is_accepted(discord: FakeDiscord) -> None:
    status, message = await create(discord, {"embeds": [embed(description="the request")]})

    assert status == 200
    assert message["content"] == "" and message["embeds"][0]["description"] == "the request"


async def test_an_empty_message_is_refused(discord: FakeDiscord) -> None:
    status, body = await create(discord, {"content": ""})

    assert (status, body) == (400, {"message": "Cannot send an empty message", "code": 50006})


async def test_a_created_message_carries_its_author_and_snowflakes(discord: FakeDiscord) -> None:
    _, message = await create(discord, {"content": "hello"})

    for snowflake in (message["id"], message["channel_id"], message["author"]["id"]):
        assert isinstance(snowflake, str) and SNOWFLAKE.match(snowflake)
    assert message["author"]["bot"] is True and message["channel_id"] == CHANNEL


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"id": 1100000000000000009}, "id must be a snowflake string"),
        ({"channel_id": "general"}, "channel_id must be a snowflake string"),
        ({"author": None}, "a message has an author"),
    ],
)
async def test_a_message_discord_never_sends_is_not_dispatched(
    discord: FakeDiscord, change: JSON, problem: str
) -> None:
    message = message_payload(
        id="1100000000000000009",
        channel_id=CHANNEL,
        author=user_payload("1100000000000000007", "alice"),
        content="hi",
    )

    with pytest.raises(ValueError, match=problem):
        await discord.dispatch("MESSAGE_CREATE", {**message, **change})


@pytest.mark.parametrize(
    ("raw", "answer"),
    [
        (b"{not json", {"message": "The request body contains invalid JSON.", "code": 50109}),
        (b"[1, 2]", None),
    ],
    ids=["not-json", "not-an-object"],
)
async def test_a_body_discord_cannot_read_is_refused_not_crashed(
    discord: FakeDiscord, raw: bytes, answer: JSON | None
) -> None:
    headers = {"Authorization": f"Bot {BOT_TOKEN}", "Content-Type": "application/json"}
    url = f"{discord.base_url}/channels/{CHANNEL}/messages"
    async with (
        aiohttp.ClientSession() as http,
        http.post(url, data=raw, headers=headers) as response,
    ):
        status, body = response.status, await response.json()

    assert status == 400
    assert body == answer if answer is not None else body["code"] == 50035


async def test_a_reply_to_an_unknown_message_is_refused_unless_told_not_to_fail(
    discord: FakeDiscord,
) -> None:
    reference = {"message_id": "1100000000000000999"}

    status, body = await create(discord, {"content": "x", "message_reference": reference})
    assert status == 400
    [error] = errors_at(body["errors"], "message_reference")
    assert error["code"] == "MESSAGE_REFERENCE_UNKNOWN_MESSAGE"

    lenient = {**reference, "fail_if_not_exists": False}
    status, message = await create(discord, {"content": "x", "message_reference": lenient})
    assert status == 200 and message["type"] == 0 and "message_reference" not in message
