"""``web_search`` end to end in ``hatchway run`` (a real subprocess) on Telegram, against the
Telegram fake, the LLM fake and a loopback Brave Search: a person asks, the model searches
(the key from the environment goes only to the backend, in its header), then asks
``http_fetch`` for a result on loopback, which the network guard refuses although the
search backend on the same address was reached; the answer comes back in the chat."""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.openai_server import OpenAIFake
from tests.fakes.search_servers import FakeBrave, Hit
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.fakes.telegram_setup import TOKEN
from tests.ops.daemon_process import WAIT_S, start_daemon

pytestmark = pytest.mark.long

PERSON = 1001
KEY = "BSAdaemon-brave-token-5551234"


@pytest.fixture
async def llm() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake(model="gpt-4o-mini") as fake:
        yield fake


def daemon_config(path: Path, *, telegram: str, llm: str, brave: str) -> Path:
    path.write_text(
        f"""
[providers.default]
kind = "openai"
base_url = "{llm}"
model = "gpt-4o-mini"
api_key_env = "HATCHWAY_TEST_KEY"
max_retries = 0

[channels.telegram.main]
token_env = "HATCHWAY_TELEGRAM_TOKEN"
api_base_url = "{telegram}"
poll_timeout_s = 1
allowed_users = ["{PERSON}"]

[tools.web_search]
backend = "brave"
url = "{brave}"
api_key_env = "SEARCH_KEY"
max_results = 2

[logging]
level = "info"
format = "json"
""",
        encoding="utf-8",
    )
    return path


async def test_search_then_a_guarded_fetch_on_telegram(tmp_path: Path, llm: OpenAIFake) -> None:
    async with FakeTelegram(TOKEN) as tg, FakeBrave(KEY) as brave:
        internal = f"{brave.base_url}/internal"
        brave.hits.insert(0, Hit("Internal wiki", internal, "only on the LAN"))
        llm.queue_tool_calls([("web_search", {"query": "hatchway wiki"})])
        llm.queue_tool_calls([("http_fetch", {"url": internal})])
        llm.queue_text("The wiki is internal; I cannot read it.")
        config = daemon_config(
            tmp_path / "hatchway.toml", telegram=tg.base_url, llm=llm.base_url, brave=brave.base_url
        )
        env = {"HATCHWAY_TELEGRAM_TOKEN": TOKEN, "HATCHWAY_TEST_KEY": "sk-test", "SEARCH_KEY": KEY}
        async with start_daemon(config, env=env) as daemon:
            await daemon.wait_notify("READY", "1")
            chat = private_chat(PERSON)
            asked = message(chat, user(PERSON), "where is the hatchway wiki?", message_id=5)
            await tg.push({"message": asked})
            answered = await tg.wait_for(
                "sendMessage",
                lambda c: "The wiki is internal" in str(c.params.get("text", "")),
                wait_s=WAIT_S,
            )
            assert answered
            daemon.signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
    (search,) = brave.asked
    assert search.params == {"q": "hatchway wiki", "count": "2"}
    assert search.headers["X-Subscription-Token"] == KEY
    found, refused = (
        [m for m in r.body["messages"] if m["role"] == "tool"][-1]["content"]
        for r in llm.requests[1:3]
    )
    assert found.startswith('2 results from Brave Search for "hatchway wiki"')
    assert '<untrusted-data source="web search results from Brave Search">' in found
    assert internal in found
    assert "refused by policy: 127.0.0.1 resolves to a loopback address" in refused
    logged = "\n".join(json.dumps(e) for e in daemon.events)
    assert KEY not in logged
    assert any(e.get("event") == "web_search_finished" for e in daemon.events)
