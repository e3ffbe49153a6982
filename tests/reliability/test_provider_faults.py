"""Provider faults through the whole App: the real ``openai`` SDK against a loopback server
that answers 429s, 500s, bodies that are not JSON, streams cut half-way and streams that
never end.

Each case sends one message that meets the fault and then a second message that must be
answered normally. Checked every time: the user sees either the model's answer or one clear
message (never a traceback, never the key), the turn ends, the session history stays
well-formed, and every inbox row is settled.

Already covered elsewhere: a 500 retried once (tests/test_console.py::
test_provider_500_is_retried), a server that never answers hits the turn budget
(test_provider_that_never_answers_hits_the_turn_budget), the retry policy's arithmetic
(tests/providers/test_retry.py), stream cuts at the SDK level
(tests/providers/test_openai_compat.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.agent.loop import BUDGET_MESSAGE
from bot.app import App
from bot.config import Settings, parse_settings
from tests.fakes.openai_server import HttpError, Reply, ScriptItem
from tests.reliability.routed_llm import Endless, Fault, Garbage, RoutedOpenAI
from tests.test_console import Terminal
from tests.tools.transcript_check import well_formed

KEY = "sk-reliability-provider-key-000000"
NOT_ANSWERING = "not answering right now"


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    script: tuple[ScriptItem | Fault, ...]
    expect: str  # text the user must see for the faulty message
    stream: bool = False
    turn_timeout_s: float = 60.0


def rate_limited(seconds: str = "1") -> HttpError:
    return HttpError(
        status=429, headers={"Retry-After": seconds}, body={"error": {"message": "slow down"}}
    )


def server_error() -> HttpError:
    return HttpError(status=500, body={"error": {"message": "boom"}})


CASES = [
    Case("429 with Retry-After, then an answer", (rate_limited(), Reply(text="ok-429")), "ok-429"),
    Case(
        "500 twice, then an answer",
        (server_error(), server_error(), Reply(text="ok-500")),
        "ok-500",
    ),
    Case("500 on every attempt", (server_error(),) * 3, NOT_ANSWERING),
    Case("429 on every attempt", (rate_limited("0"),) * 3, NOT_ANSWERING),
    Case("a body that is not JSON", (Garbage(),) * 3, NOT_ANSWERING),
    Case(
        "a stream cut half-way, then a whole one",
        (Reply(text="streamed answer, whole", cut_after=2), Reply(text="streamed answer, whole")),
        "streamed answer, whole",
        stream=True,
    ),
    Case("a stream that never ends", (Endless(),), BUDGET_MESSAGE, stream=True, turn_timeout_s=2.0),
]


def settings_for(llm: RoutedOpenAI, tmp_path: Path, case: Case) -> Settings:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": case.turn_timeout_s},
            "channels": {"console": {"main": {}}},
            "providers": {
                "default": {
                    "kind": "openai",
                    "base_url": llm.base_url,
                    "model": "scripted",
                    "api_key_env": "HATCHWAY_RELIABILITY_KEY",
                    "max_retries": 2,
                    "timeout_s": 30,
                    "tool_mode": "native",
                    "stream": case.stream,
                }
            },
        },
        environ={"HATCHWAY_RELIABILITY_KEY": KEY},
    )


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HATCHWAY_RELIABILITY_KEY", KEY)


@pytest.fixture
async def llm() -> AsyncIterator[RoutedOpenAI]:
    async with RoutedOpenAI() as fake:
        yield fake


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_provider_fault_ends_cleanly(llm: RoutedOpenAI, tmp_path: Path, case: Case) -> None:
    llm.answer("q-fault", *case.script)
    llm.answer("q-next", Reply(text="next answer"))
    terminal = Terminal()
    async with App(
        settings_for(llm, tmp_path, case), channels={"console.main": terminal.channel}
    ) as app:
        terminal.type("q-fault")
        await terminal.screen.wait_for(case.expect, within_s=60)
        terminal.type("q-next")
        screen = await terminal.screen.wait_for("next answer", within_s=60)
        terminal.close()
        history = await app.store.history.load("console.main:terminal")
    assert screen.count(case.expect) == 1
    assert "Traceback" not in screen and KEY not in screen
    assert well_formed(history)
    assert [m.role for m in history][-2:] == ["user", "assistant"]
    assert history[-1].content == "next answer"
    assert all(m.role in ("user", "assistant") for m in history)  # no half-written tool step
    with sqlite3.connect(tmp_path / "hatchway.db") as conn:
        statuses = [s for (s,) in conn.execute("SELECT status FROM inbox ORDER BY id")]
    assert statuses[-1] == "done" and statuses[0] in ("done", "failed")
    # the faulty turn used at most its attempts; nothing retried it afterwards
    assert llm.arrivals["q-fault"] <= len(case.script)
