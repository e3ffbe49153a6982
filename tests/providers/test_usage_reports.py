"""Usage as each provider reports it, read into the four kinds of :class:`Usage`, against the
loopback fakes: JSON and streamed replies, cache tokens, a server that reports none, and the
fallback chain naming the provider that answered."""

from __future__ import annotations

import pytest

from bot.errors import ProviderError
from bot.providers.base import ChatMessage, CompletionRequest, ProviderReply, Usage
from bot.providers.chat_reply import read_usage
from bot.providers.fallback import FallbackProvider
from tests.fakes.anthropic_server import AnthropicFake
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.scripted_provider import ScriptedProvider
from tests.providers.conftest import AnthropicFactory, OpenAIFactory
from tests.providers.recorders import SinkRecorder

HELLO = CompletionRequest(system="Be brief.", messages=[ChatMessage(role="user", content="hi")])


@pytest.mark.parametrize("streamed", [False, True])
async def test_openai_cached_tokens_are_read_from_the_cache_not_input(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sink: SinkRecorder, streamed: bool
) -> None:
    openai_fake.usage = {
        "prompt_tokens": 1200,
        "completion_tokens": 80,
        "total_tokens": 1280,
        "prompt_tokens_details": {"cached_tokens": 1024},
    }
    openai_fake.queue_text("cached")
    reply = await make_openai().complete(HELLO, stream=sink if streamed else None)

    assert reply.usage == Usage(input_tokens=176, output_tokens=80, cache_read_tokens=1024)
    if streamed:
        assert openai_fake.requests[0].body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("streamed", [False, True])
async def test_openai_server_that_reports_no_usage(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sink: SinkRecorder, streamed: bool
) -> None:
    openai_fake.usage = None
    openai_fake.queue_text("no usage here")
    reply = await make_openai().complete(HELLO, stream=sink if streamed else None)

    assert reply.text == "no usage here"
    assert reply.usage is None
    if streamed:  # asked for, and still not sent
        assert openai_fake.requests[0].body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize(
    ("reported", "expected"),
    [
        ({"prompt_tokens": 10, "completion_tokens": 2}, Usage(input_tokens=10, output_tokens=2)),
        (  # DeepSeek names its cache hits at the top level
            {"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 6},
            Usage(input_tokens=4, output_tokens=2, cache_read_tokens=6),
        ),
        (  # more cached than prompted: a server's mistake, never a negative count
            {"prompt_tokens": 3, "prompt_tokens_details": {"cached_tokens": 9}},
            Usage(input_tokens=0, cache_read_tokens=3),
        ),
        ({"prompt_tokens": None, "completion_tokens": "9"}, Usage()),
        ({}, Usage()),
        (None, None),
        ("12 tokens", None),
    ],
)
def test_read_usage_shapes(reported: object, expected: Usage | None) -> None:
    assert read_usage(reported) == expected


@pytest.mark.parametrize("streamed", [False, True])
async def test_anthropic_cache_writes_and_reads(
    anthropic_fake: AnthropicFake,
    make_anthropic: AnthropicFactory,
    sink: SinkRecorder,
    streamed: bool,
) -> None:
    anthropic_fake.usage = {
        "input_tokens": 21,
        "output_tokens": 34,
        "cache_creation_input_tokens": 2048,
        "cache_read_input_tokens": 4096,
    }
    anthropic_fake.queue_text("Hello from Claude.")
    reply = await make_anthropic().complete(HELLO, stream=sink if streamed else None)

    assert reply.usage == Usage(
        input_tokens=21, output_tokens=34, cache_write_tokens=2048, cache_read_tokens=4096
    )


async def test_anthropic_without_cache_fields(
    anthropic_fake: AnthropicFake, make_anthropic: AnthropicFactory
) -> None:
    anthropic_fake.usage = {"input_tokens": 8, "output_tokens": 3}
    anthropic_fake.queue_text("plain")
    reply = await make_anthropic().complete(HELLO)
    assert reply.usage == Usage(input_tokens=8, output_tokens=3)


async def test_fallback_names_the_provider_that_answered() -> None:
    first = ScriptedProvider([ProviderError("down")])
    first.name = "primary"
    second = ScriptedProvider([ProviderReply(text="from the backup")])
    second.name = "backup"
    reply = await FallbackProvider([first, second]).complete(HELLO)
    assert (reply.text, reply.provider) == ("from the backup", "backup")
