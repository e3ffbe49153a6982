"""``tool_search`` ranking: honest tools are found, keyword stuffing wins nothing."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from bot.mcp.ranking import MIN_RELEVANCE, SearchIndex, terms
from bot.mcp.sanitise import DESCRIPTION_CHARS, marked
from bot.tools.spec import ToolSpec
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.mcp.conftest import AppFactory, console_message
from tests.mcp.hostile_server import KEYWORDS

HOSTILE_SERVER = [sys.executable, str(Path(__file__).with_name("hostile_server.py"))]
STUFFED = KEYWORDS * 40


def spec(name: str, description: str, server: str = "srv") -> ToolSpec:
    return ToolSpec(
        name=f"{server}__{name}",
        description=marked(server, description),
        parameters={"type": "object", "properties": {}},
    )


CATALOGUE = [
    spec("add", "Add two integer numbers."),
    spec("get_weather", "Current weather and the forecast for a city."),
    spec("send_email", "Send an email message to one recipient."),
    spec("read_file", "Read the complete contents of a file from the file system."),
    spec("create_issue", "Create a new issue in a GitHub repository.", "github"),
    spec("search_issues", "Search for issues in GitHub repositories.", "github"),
    spec("has_env", "Report whether an environment variable is set (and its length)."),
    spec("calculator", "Evaluate an arithmetic expression."),
    spec("stuffed", STUFFED),
]


def ranked(query: str, catalogue: list[ToolSpec] = CATALOGUE, limit: int = 5) -> list[str]:
    return [s.name for s in SearchIndex().ranked(query, catalogue, limit)]


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("add numbers", "srv__add"),
        ("weather forecast for paris", "srv__get_weather"),
        ("send an email", "srv__send_email"),
        ("read the contents of a file", "srv__read_file"),
        ("open a github issue", "github__create_issue"),
        ("search issues", "github__search_issues"),
        ("environment variable", "srv__has_env"),
        ("calc", "srv__calculator"),  # a prefix of a name's word
        ("Weather", "srv__get_weather"),
    ],
)
def test_honest_tools_are_found_first(query: str, first: str) -> None:
    found = ranked(query)
    assert found[0] == first
    assert "srv__stuffed" not in found


@pytest.mark.parametrize(
    "query",
    [
        "translate to french",
        "deploy",
        "database query",
        "password secret",
        "calendar meeting",
        "invoice payment",
        "shell command",
    ],
)
def test_a_stuffed_description_wins_no_unrelated_search(query: str) -> None:
    # every word of these queries is in the stuffed description, and in no other
    assert all(w in STUFFED for w in query.split() if w not in ("to", "the"))
    assert ranked(query) == []


def test_repeating_a_word_gains_nothing() -> None:
    once = spec("a", "Upload a photo to the album.")
    repeated = spec("b", "Upload a photo to the album. " + "photo " * 30)
    index = SearchIndex()
    scores = index.relevance("photo", [once, repeated])
    assert scores["srv__a"] > scores["srv__b"]


def test_the_name_counts_more_than_the_description() -> None:
    named = spec("resize_image", "Change the size of a picture.")
    described = spec("transform", "Resize an image to new dimensions.")
    scores = SearchIndex().relevance("resize image", [named, described])
    assert scores["srv__resize_image"] > scores["srv__transform"] >= MIN_RELEVANCE


def test_the_capped_stuffed_description_is_below_the_minimum() -> None:
    stuffed = spec("stuffed", STUFFED)
    assert len(stuffed.description) == DESCRIPTION_CHARS
    scores = SearchIndex().relevance("weather", [stuffed, *CATALOGUE[:3]])
    assert 0 < scores["srv__stuffed"] < MIN_RELEVANCE


@pytest.mark.parametrize("query", ["", "the", "please use a tool for this", "zebra xylophone"])
def test_queries_of_common_or_unknown_words_activate_nothing(query: str) -> None:
    assert ranked(query) == []


def test_at_most_the_limit_best_first() -> None:
    many = [spec(f"issue_tool_{i}", "Works on issues.") for i in range(10)]
    found = ranked("issue", many, limit=3)
    assert found == ["srv__issue_tool_0", "srv__issue_tool_1", "srv__issue_tool_2"]


def test_terms_split_names_and_drop_common_words() -> None:
    assert terms("github__createPullRequest for the repos") == [
        "github",
        "create",
        "pull",
        "request",
        "repo",
    ]


async def test_tool_search_against_a_real_server_with_a_stuffed_tool(
    start_app: AppFactory, provider: ScriptedProvider
) -> None:
    mcp = {
        "deferred_threshold": 2,
        "servers": {"hostile": {"command": HOSTILE_SERVER, "requires_approval": False}},
    }
    app, terminal = await start_app(mcp)
    provider.add(
        reply("", call("tool_search", {"query": "translate this to french"})),
        reply("", call("tool_search", {"query": "weather forecast"})),
        reply("", call("hostile__get_weather", {"city": "Lyon"})),
        reply("Sunny."),
    )
    await app.gateway.deliver(console_message("translate, then the weather in Lyon", "m1"))
    async with asyncio.timeout(60):
        await terminal.wait_for("Sunny.")

    first, after_unrelated, after_weather, _ = (
        {t.name for t in r.tools} for r in provider.requests
    )
    assert "tool_search" in first
    assert not any(n.startswith("hostile__") for n in first)
    assert not any(n.startswith("hostile__") for n in after_unrelated)  # nothing activated
    assert "hostile__get_weather" in after_weather
    assert "hostile__stuffed" not in after_weather
    rows = await app.store.db.fetchall(
        "SELECT observation FROM tool_calls WHERE tool = 'tool_search' ORDER BY id"
    )
    unrelated, weather = (r["observation"] for r in rows)
    assert unrelated == "No tools match that query; try other words."
    assert "hostile__get_weather: [from MCP server hostile] Current weather" in weather
    assert "hostile__stuffed" not in weather
