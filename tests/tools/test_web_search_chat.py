"""``web_search`` end to end through ``hatchway chat`` (a real process) against the LLM fake
and a loopback SearXNG: the model searches, the progress line shows the query with its
secret masked, the instance gets the masked query, and the model reads the results as
untrusted data before it answers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.untrusted import OPEN_TAG
from tests.console.chat_process import chat_environ, start_piped
from tests.fakes.search_servers import FakeSearxng
from tests.ops.conftest import HeldOpenAI

QUERY = "hatchway release password=hunter2hunter2"

pytestmark = pytest.mark.slow


@pytest.fixture
async def llm() -> AsyncIterator[HeldOpenAI]:
    async with HeldOpenAI() as fake:
        yield fake


async def test_search_through_the_console_chat(tmp_path: Path, llm: HeldOpenAI) -> None:
    async with FakeSearxng() as searxng:
        config = tmp_path / "hatchway.toml"
        config.write_text(
            f'[tools.web_search]\nbackend = "searxng"\nurl = "{searxng.base_url}"\n',
            encoding="utf-8",
        )
        llm.queue_tool_calls([("web_search", {"query": QUERY})])
        llm.queue_text("Version 2 is out: faster builds.")
        env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
        async with start_piped(env, tmp_path, "--config", str(config)) as chat:
            chat.type("what is new in hatchway?\n")
            await chat.close_input()
            assert await chat.wait_exit() == 0
    shown = chat.shown
    assert "Version 2 is out: faster builds." in shown
    assert "hunter2" not in shown
    assert "web_search" in shown and "hatchway release password=***" in shown
    (asked,) = searxng.asked
    assert asked.params["q"] == "hatchway release password=***"
    offered = {t["function"]["name"] for t in llm.requests[0].body["tools"]}
    assert {"web_search", "http_fetch"} <= offered
    result = [m for m in llm.requests[1].body["messages"] if m["role"] == "tool"][-1]
    assert result["content"].startswith(
        '3 results from SearXNG for "hatchway release password=***"'
    )
    assert f'{OPEN_TAG} source="web search results from SearXNG">' in result["content"]
    assert "https://example.org/hatchway/releases" in result["content"]
