"""A half-streamed emoji does not fail the turn: lone UTF-16 surrogates in model text and in
tool-call arguments reach ``run_turn`` through the real OpenAI and Anthropic SDKs (loopback
fakes), and the turn completes with U+FFFD in their place, in the reply, in what the tool is
given and in the history written to SQLite."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pytest

from bot.agent.loop import run_turn
from bot.agent.turn import AgentBundle, TurnState, TurnStatus
from bot.config import AgentConfig, ProviderConfig
from bot.providers.base import Provider
from bot.providers.openai_compat import OpenAICompatProvider
from bot.providers.retry import Retrier, RetryPolicy
from bot.store import Store
from bot.tools.services import PipelineServices
from bot.turn import TurnIdentity
from tests.fakes.anthropic_server import AnthropicFake
from tests.fakes.openai_server import OpenAIFake, ScriptedServer
from tests.tools.gates import PolicyGate
from tests.tools.harness import Recorder, RecordingProgress, make_envelope, spec
from tests.tools.transcript_check import well_formed

if TYPE_CHECKING:  # the SDK costs about a second of CPU to import: only the tests that use it
    from bot.providers.anthropic import AnthropicProvider

Kind = Literal["openai", "anthropic"]
SESSION = "console.main:c1"
HIGH, LOW, FFFD = "\ud83d", "\ude00", "\ufffd"


@pytest.fixture(autouse=True)
def _loopback_without_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)


async def _no_sleep(seconds: float) -> None:
    return None


@pytest.fixture
async def served() -> AsyncIterator[Callable[[Kind], Awaitable[tuple[ScriptedServer, Provider]]]]:
    """Starts the fake of a kind and a real provider pointed at it; both closed after."""
    fakes: list[ScriptedServer] = []
    providers: list[OpenAICompatProvider | AnthropicProvider] = []

    async def start(kind: Kind) -> tuple[ScriptedServer, Provider]:
        fake: OpenAIFake | AnthropicFake = OpenAIFake() if kind == "openai" else AnthropicFake()
        await fake.__aenter__()
        fakes.append(fake)
        base_url = fake.base_url
        config = ProviderConfig(kind=kind, base_url=base_url, model="fake", timeout_s=10.0)
        retrier = Retrier(provider=kind, policy=RetryPolicy(max_retries=0), sleep=_no_sleep)
        provider: OpenAICompatProvider | AnthropicProvider
        if kind == "openai":
            provider = OpenAICompatProvider(config, name=kind, api_key="k", retrier=retrier)
        else:
            from bot.providers.anthropic import AnthropicProvider

            provider = AnthropicProvider(config, name=kind, api_key="k", retrier=retrier)
        providers.append(provider)
        return fake, provider

    yield start
    for provider in providers:
        await provider.aclose()
    for fake in fakes:
        await fake.__aexit__(None, None, None)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "hatchway.db") as opened:
        yield opened


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "streamed"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_turn_with_lone_surrogates_completes(
    served: Callable[[Kind], Awaitable[tuple[ScriptedServer, Provider]]],
    store: Store,
    tmp_path: Path,
    kind: Kind,
    streamed: bool,
) -> None:
    fake, provider = await served(kind)
    arguments = {"q": f"half {HIGH} emoji", "tail": LOW, "whole": f"{HIGH}{LOW}"}
    fake.queue_tool_calls([("echo", arguments)], text=f"Looking {HIGH}")
    fake.queue_text(f"done {LOW} and {HIGH}")
    echo = Recorder()
    bundle = AgentBundle(
        provider=provider,
        services=PipelineServices(settings=AgentConfig(), store=store, gate=PolicyGate()),
        tools=[spec("echo", echo)],
    )
    progress = RecordingProgress(wants_stream=streamed)
    state = TurnState(
        turn=TurnIdentity(turn_id="turn-1", session_key=SESSION, envelope=make_envelope("hi")),
        history=[],
        progress=progress,
    )

    result = await run_turn(bundle, state)

    assert result.status is TurnStatus.COMPLETED
    assert result.text == f"done {FFFD} and {FFFD}"
    assert echo.calls == [{"q": f"half {FFFD} emoji", "tail": FFFD, "whole": "😀"}]
    if streamed:
        streamed_text = "".join(progress.streamed)
        streamed_text.encode()  # every delta is UTF-8 encodable
        assert FFFD in streamed_text
    history = await store.history.load(SESSION)
    assert well_formed(history)
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    first = history[1]
    assert first.content == f"Looking {FFFD}"
    (call,) = first.tool_calls
    assert call.name == "echo"
    assert json.loads(call.arguments) == echo.calls[0]
    assert history[-1].content == result.text
    assert (tmp_path / "hatchway.db").stat().st_size > 0
