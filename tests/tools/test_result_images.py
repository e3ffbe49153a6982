"""Images in tool results: a handler's images reach the model with its result for the rest of
the turn, and nothing of them is stored (history and the ``tool_calls`` row keep the text)."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator, Mapping

import pytest
from PIL import Image

from bot.agent.loop import run_turn
from bot.agent.turn import AgentBundle, TurnState, TurnStatus
from bot.config import AgentConfig, ProviderConfig
from bot.providers.base import ImagePart
from bot.providers.chat_body import TOOL_IMAGES_NOTE
from bot.providers.openai_compat import OpenAICompatProvider
from bot.providers.retry import Retrier, RetryPolicy
from bot.store import Store
from bot.tools.services import PipelineServices
from bot.tools.spec import ToolContext, ToolOutput, ToolResult
from bot.turn import TurnIdentity
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.scripted_provider import call
from tests.tools.gates import PolicyGate
from tests.tools.harness import Harness, RecordingProgress, make_envelope, spec

SESSION = "console.main:c1"


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (3, 2), "green").save(out, format="PNG")
    return out.getvalue()


GREEN = ImagePart(media_type="image/png", data=_png(), name="green.png")
SAID = "green.png (image/png, 3x2 pixels): shown to you with this result"


async def _viewer(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
    return ToolOutput(text=SAID, images=(GREEN,))


@pytest.fixture(autouse=True)
def _loopback_without_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def openai_fake() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake() as fake:
        yield fake


async def test_the_result_message_carries_the_images_and_the_store_does_not(
    store: Store,
) -> None:
    harness = Harness(store, [spec("viewer", _viewer)])
    report = await harness.run(call("viewer", {}))

    (outcome,) = report.outcomes
    assert outcome.ok and outcome.images == (GREEN,)
    assert report.messages[1].images == (GREEN,)
    assert report.messages[1].content == SAID
    stored = await store.history.load(harness.session_key)
    assert [m.images for m in stored] == [(), ()]
    assert stored[1].content == SAID
    (row,) = await store.tool_calls.for_turn(harness.turn_id)
    assert row.observation == SAID


async def _no_sleep(seconds: float) -> None:
    return None


async def test_the_model_sees_the_image_in_its_turn_and_not_in_the_next(
    openai_fake: OpenAIFake, store: Store
) -> None:
    config = ProviderConfig(base_url=openai_fake.base_url, model="gpt-4o", timeout_s=10.0)
    retrier = Retrier(provider="p", policy=RetryPolicy(max_retries=0), sleep=_no_sleep)
    provider = OpenAICompatProvider(config, name="p", api_key="k", retrier=retrier)
    bundle = AgentBundle(
        provider=provider,
        services=PipelineServices(settings=AgentConfig(), store=store, gate=PolicyGate()),
        tools=[spec("viewer", _viewer)],
    )
    openai_fake.queue_tool_calls([("viewer", {})])
    openai_fake.queue_text("It is green.")
    openai_fake.queue_text("You asked about a green image.")
    try:
        for number, text in enumerate(["what colour?", "what did I ask?"], start=1):
            state = TurnState(
                turn=TurnIdentity(
                    turn_id=f"turn-{number}", session_key=SESSION, envelope=make_envelope(text)
                ),
                progress=RecordingProgress(),
            )
            result = await run_turn(bundle, state)
            assert result.status is TurnStatus.COMPLETED
    finally:
        await provider.aclose()

    first, second, third = (r.body["messages"] for r in openai_fake.requests)
    assert not any(isinstance(m["content"], list) for m in first)
    assert [m["role"] for m in second[-3:]] == ["assistant", "tool", "user"]
    assert second[-2]["content"] == SAID
    images = second[-1]["content"]
    assert images[0] == {"type": "text", "text": TOOL_IMAGES_NOTE}
    assert images[-1]["image_url"]["url"].startswith("data:image/png;base64,")
    # the next turn reads history from the store: the result's text, no image
    assert [m["role"] for m in third[-5:]] == ["user", "assistant", "tool", "assistant", "user"]
    assert third[-3]["content"] == SAID
    assert "base64" not in json.dumps(third)
