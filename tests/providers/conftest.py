"""Fixtures for provider tests: loopback fakes, recorded sleeps, providers wired to the fakes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import pytest

from bot.backoff import BackoffPolicy
from bot.config import ProviderConfig
from bot.providers.openai_compat import OpenAICompatProvider
from bot.providers.retry import Retrier, RetryPolicy
from tests.fakes.anthropic_server import AnthropicFake
from tests.fakes.openai_server import OpenAIFake
from tests.providers.recorders import TEST_KEY, RecordedSleep, SinkRecorder

if TYPE_CHECKING:  # the SDK costs about a second of CPU to import: only the tests that use it
    from bot.providers.anthropic import AnthropicProvider

BASE_DELAY_S = 0.25


@pytest.fixture(autouse=True)
def _loopback_without_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def sleep() -> RecordedSleep:
    return RecordedSleep()


@pytest.fixture
async def openai_fake() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake() as fake:
        yield fake


@pytest.fixture
async def anthropic_fake() -> AsyncIterator[AnthropicFake]:
    async with AnthropicFake() as fake:
        yield fake


def make_retrier(name: str, config: ProviderConfig, sleep: RecordedSleep, **kw: Any) -> Retrier:
    backoff = BackoffPolicy(initial_s=BASE_DELAY_S, max_s=8.0)
    policy = RetryPolicy(max_retries=config.max_retries, backoff=backoff)
    return Retrier(provider=name, policy=policy, sleep=sleep, jitter=lambda: 0.5, **kw)


OpenAIFactory = Callable[..., OpenAICompatProvider]
AnthropicFactory = Callable[..., "AnthropicProvider"]


@pytest.fixture
async def make_openai(
    openai_fake: OpenAIFake, sleep: RecordedSleep
) -> AsyncIterator[OpenAIFactory]:
    """Builds OpenAI-compatible providers pointed at ``openai_fake``; closes them after."""
    made: list[OpenAICompatProvider] = []

    def make(
        *, name: str = "primary", clock: Callable[[], float] | None = None, **overrides: Any
    ) -> OpenAICompatProvider:
        fields: dict[str, Any] = {
            "kind": "openai",
            "base_url": openai_fake.base_url,
            "model": "fake-model",
            "timeout_s": 10.0,
        }
        fields.update(overrides)
        config = ProviderConfig(**fields)
        extra = {"clock": clock} if clock is not None else {}
        provider = OpenAICompatProvider(
            config, name=name, api_key=TEST_KEY, retrier=make_retrier(name, config, sleep, **extra)
        )
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()


@pytest.fixture
async def make_anthropic(
    anthropic_fake: AnthropicFake, sleep: RecordedSleep
) -> AsyncIterator[AnthropicFactory]:
    """Builds Anthropic providers pointed at ``anthropic_fake``; closes them after."""
    from bot.providers.anthropic import AnthropicProvider

    made: list[AnthropicProvider] = []

    def make(*, name: str = "claude", **overrides: Any) -> AnthropicProvider:
        fields: dict[str, Any] = {
            "kind": "anthropic",
            "base_url": anthropic_fake.base_url,
            "model": "claude-fake",
            "api_key_env": "ANTHROPIC_API_KEY",
            "timeout_s": 10.0,
        }
        fields.update(overrides)
        config = ProviderConfig(**fields)
        provider = AnthropicProvider(
            config, name=name, api_key=TEST_KEY, retrier=make_retrier(name, config, sleep)
        )
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()


@pytest.fixture
def sink() -> SinkRecorder:
    return SinkRecorder()
