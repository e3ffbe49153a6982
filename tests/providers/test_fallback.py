"""The fallback chain over two real providers talking to two loopback fakes."""

from __future__ import annotations

import pytest

from bot.errors import ProviderUnavailable
from bot.providers.base import ChatMessage, CompletionRequest
from bot.providers.fallback import FallbackProvider
from tests.fakes.anthropic_server import AnthropicFake
from tests.fakes.openai_server import OpenAIFake
from tests.providers.conftest import AnthropicFactory, OpenAIFactory
from tests.providers.recorders import SinkRecorder

HELLO = CompletionRequest(system="", messages=[ChatMessage(role="user", content="hi")])


async def test_primary_failing_falls_back_then_all_failing_is_a_clear_error(
    openai_fake: OpenAIFake,
    anthropic_fake: AnthropicFake,
    make_openai: OpenAIFactory,
    make_anthropic: AnthropicFactory,
) -> None:
    chain = FallbackProvider(
        [make_openai(name="local", max_retries=1), make_anthropic(name="cloud", max_retries=0)]
    )
    openai_fake.queue_error(500)
    openai_fake.queue_error(503)
    anthropic_fake.queue_text("from the backup")

    reply = await chain.complete(HELLO)

    assert reply.text == "from the backup"
    assert len(openai_fake.requests) == 2
    assert len(anthropic_fake.requests) == 1

    openai_fake.queue_error(500)
    openai_fake.queue_error(500)
    anthropic_fake.queue_error(429)
    with pytest.raises(ProviderUnavailable) as caught:
        await chain.complete(HELLO)
    assert str(caught.value) == (
        "no language model provider answered (local: local had a server error (HTTP 500); "
        "cloud: cloud is rate limiting us (HTTP 429))"
    )
    assert chain.name == "local+cloud"


async def test_a_permanent_error_also_falls_back(
    openai_fake: OpenAIFake,
    anthropic_fake: AnthropicFake,
    make_openai: OpenAIFactory,
    make_anthropic: AnthropicFactory,
) -> None:
    chain = FallbackProvider([make_openai(), make_anthropic()])
    openai_fake.queue_error(401)
    anthropic_fake.queue_text("ok")
    assert (await chain.complete(HELLO)).text == "ok"
    assert len(openai_fake.requests) == 1


async def test_streamed_draft_stays_coherent_across_the_switch(
    openai_fake: OpenAIFake,
    anthropic_fake: AnthropicFake,
    make_openai: OpenAIFactory,
    make_anthropic: AnthropicFactory,
    sink: SinkRecorder,
) -> None:
    chain = FallbackProvider([make_openai(max_retries=0), make_anthropic()])
    openai_fake.queue_text("Paris is the capital of France.", cut_after=2)
    anthropic_fake.queue_text("Paris is the capital of France.")

    reply = await chain.complete(HELLO, stream=sink)

    assert reply.text == "Paris is the capital of France."
    assert sink.text == "Paris is the capital of France."


def test_an_empty_chain_is_refused() -> None:
    with pytest.raises(ValueError):
        FallbackProvider([])
