"""Images reach the model in each provider's own form, and only where the model reads them.

Requests go to the loopback fakes through the real clients; the bodies the fakes received are
checked. A user message's images travel with it; a tool result's images go inside the
``tool_result`` (Anthropic) or in a user message right after the tool results (Chat
Completions, whose ``tool`` messages carry text only).
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from PIL import Image

from bot.config import ProviderConfig, parse_settings
from bot.errors import ConfigError
from bot.providers.base import (
    ChatMessage,
    CompletionRequest,
    ImagePart,
    ToolCallRequest,
)
from bot.providers.chat_body import TOOL_IMAGES_NOTE
from bot.providers.embedded import plain_messages
from bot.providers.factory import build_one
from bot.providers.fallback import FallbackProvider
from bot.providers.vision import takes_images
from tests.fakes.anthropic_server import AnthropicFake
from tests.fakes.openai_server import OpenAIFake
from tests.providers.conftest import AnthropicFactory, OpenAIFactory
from tests.providers.recorders import TEST_KEY, RecordedSleep


def _png(colour: str, size: tuple[int, int] = (4, 3)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, format="PNG")
    return out.getvalue()


RED = ImagePart(media_type="image/png", data=_png("red"), name="red.png")
BLUE = ImagePart(media_type="image/png", data=_png("blue", (2, 2)), name="blue.png")
SAID = "what is on this screenshot? [attachment 7: red.png, saved at attachments/red.png]"
WITH_IMAGE = CompletionRequest(
    system="S", messages=[ChatMessage(role="user", content=SAID, images=(RED,))]
)


def _data_url(image: ImagePart) -> str:
    return f"data:{image.media_type};base64,{base64.b64encode(image.data).decode()}"


def _anthropic_block(image: ImagePart) -> dict[str, Any]:
    data = base64.b64encode(image.data).decode()
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def _tool_turn(images: tuple[ImagePart, ...]) -> CompletionRequest:
    """A user question, the model calling a tool twice, two results (the first with
    ``images``), as the loop sends them in the next iteration."""
    calls = (
        ToolCallRequest(id="c1", name="view_attachment", arguments='{"attachment": "7"}'),
        ToolCallRequest(id="c2", name="current_time", arguments="{}"),
    )
    return CompletionRequest(
        system="",
        messages=[
            ChatMessage(role="user", content="look at attachment 7"),
            ChatMessage(role="assistant", tool_calls=calls),
            ChatMessage(
                role="tool",
                tool_call_id="c1",
                name="view_attachment",
                content="red.png (image/png, 4x3)",
                images=images,
            ),
            ChatMessage(role="tool", tool_call_id="c2", name="current_time", content="noon"),
        ],
    )


def _no_image_anywhere(body: object) -> bool:
    text = json.dumps(body)
    return "base64" not in text and '"image' not in text


# -- OpenAI-compatible --------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_vision_model_gets_the_image_as_a_data_url_after_the_text(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, streamed: bool
) -> None:
    openai_fake.queue_text("A red rectangle.")
    reply = await make_openai(model="gpt-4o-mini", stream=streamed).complete(WITH_IMAGE)

    assert reply.text == "A red rectangle."
    assert openai_fake.requests[0].body["messages"] == [
        {"role": "system", "content": "S"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": SAID},
                {"type": "image_url", "image_url": {"url": _data_url(RED)}},
            ],
        },
    ]


@pytest.mark.parametrize(
    ("model", "images", "sent"),
    [
        ("fake-model", None, False),  # not a known vision family
        ("fake-model", True, True),  # the key says so
        ("gpt-4o", False, False),  # the key says no
        ("llava:13b", None, True),
    ],
)
async def test_the_images_key_and_the_model_decide(
    openai_fake: OpenAIFake,
    make_openai: OpenAIFactory,
    model: str,
    images: bool | None,
    sent: bool,
) -> None:
    openai_fake.queue_text("ok")
    await make_openai(model=model, images=images).complete(WITH_IMAGE)

    user = openai_fake.requests[0].body["messages"][1]
    if sent:
        assert user["content"][1] == {"type": "image_url", "image_url": {"url": _data_url(RED)}}
    else:
        assert user == {"role": "user", "content": SAID}


async def test_tool_result_images_follow_the_results_in_a_user_message(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory
) -> None:
    openai_fake.queue_text("It is red.")
    await make_openai(model="gpt-4.1").complete(_tool_turn((RED, BLUE)))

    messages = openai_fake.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user"]
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "red.png (image/png, 4x3)",
    }
    assert messages[4]["content"] == [
        {"type": "text", "text": TOOL_IMAGES_NOTE},
        {"type": "text", "text": "view_attachment (c1): red.png"},
        {"type": "image_url", "image_url": {"url": _data_url(RED)}},
        {"type": "text", "text": "view_attachment (c1): blue.png"},
        {"type": "image_url", "image_url": {"url": _data_url(BLUE)}},
    ]


async def test_tool_result_images_come_before_the_next_message_of_the_history(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory
) -> None:
    request = _tool_turn((RED,))
    later = CompletionRequest(
        system="",
        messages=[*request.messages, ChatMessage(role="assistant", content="It is red.")],
    )
    openai_fake.queue_text("ok")
    await make_openai(model="gpt-5").complete(later)

    roles = [m["role"] for m in openai_fake.requests[0].body["messages"]]
    assert roles == ["user", "assistant", "tool", "tool", "user", "assistant"]


async def test_a_model_without_images_gets_the_tool_results_alone(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory
) -> None:
    openai_fake.queue_text("ok")
    await make_openai(model="fake-model").complete(_tool_turn((RED,)))

    body = openai_fake.requests[0].body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "tool"]
    assert _no_image_anywhere(body)


async def test_a_history_without_images_is_encoded_as_before_for_a_vision_model(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory
) -> None:
    openai_fake.queue_text("ok")
    openai_fake.queue_text("ok")
    await make_openai(model="gpt-4o").complete(_tool_turn(()))
    await make_openai(model="fake-model").complete(_tool_turn(()))

    vision, plain = (r.body for r in openai_fake.requests)
    assert vision["messages"] == plain["messages"]


# -- Anthropic ----------------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
async def test_anthropic_gets_image_blocks_before_the_text(
    anthropic_fake: AnthropicFake, make_anthropic: AnthropicFactory, streamed: bool
) -> None:
    anthropic_fake.queue_text("A red rectangle.")
    reply = await make_anthropic(stream=streamed).complete(WITH_IMAGE)

    assert reply.text == "A red rectangle."
    assert anthropic_fake.requests[0].body["messages"] == [
        {"role": "user", "content": [_anthropic_block(RED), {"type": "text", "text": SAID}]}
    ]


async def test_anthropic_tool_results_hold_their_images(
    anthropic_fake: AnthropicFake, make_anthropic: AnthropicFactory
) -> None:
    anthropic_fake.queue_text("It is red.")
    await make_anthropic().complete(_tool_turn((RED,)))

    results = anthropic_fake.requests[0].body["messages"][2]
    assert results == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "c1",
                "content": [
                    {"type": "text", "text": "red.png (image/png, 4x3)"},
                    _anthropic_block(RED),
                ],
            },
            {"type": "tool_result", "tool_use_id": "c2", "content": "noon"},
        ],
    }


async def test_anthropic_with_images_off_sends_text_only(
    anthropic_fake: AnthropicFake, make_anthropic: AnthropicFactory
) -> None:
    anthropic_fake.queue_text("ok")
    anthropic_fake.queue_text("ok")
    provider = make_anthropic(images=False)
    await provider.complete(WITH_IMAGE)
    await provider.complete(_tool_turn((RED,)))

    first, second = (r.body for r in anthropic_fake.requests)
    assert first["messages"] == [{"role": "user", "content": [{"type": "text", "text": SAID}]}]
    assert _no_image_anywhere(second)


# -- wrappers and chains ------------------------------------------------------------------


async def test_the_text_protocol_keeps_images_on_the_user_message_it_renders(
    openai_fake: OpenAIFake,
) -> None:
    config = ProviderConfig(base_url=openai_fake.base_url, model="llava:7b", timeout_s=10.0)
    provider = build_one("local", config, api_key=TEST_KEY, sleep=RecordedSleep())
    openai_fake.queue_text("It is red.")
    try:
        await provider.complete(_tool_turn((RED,)))
    finally:
        await provider.aclose()

    messages = openai_fake.requests[0].body["messages"]
    assert "tools" not in openai_fake.requests[0].body  # the text protocol: llava calls no tools
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    results = messages[2]["content"]
    assert results[0]["type"] == "text"
    assert '<tool_result name="view_attachment">' in results[0]["text"]
    assert results[1] == {"type": "image_url", "image_url": {"url": _data_url(RED)}}


async def test_in_a_fallback_chain_each_provider_decides_for_itself(
    openai_fake: OpenAIFake,
    anthropic_fake: AnthropicFake,
    make_openai: OpenAIFactory,
    make_anthropic: AnthropicFactory,
) -> None:
    chain = FallbackProvider(
        [make_anthropic(name="cloud", max_retries=0), make_openai(name="local", max_retries=0)]
    )
    anthropic_fake.queue_error(500)
    openai_fake.queue_text("from the text-only model")
    try:
        reply = await chain.complete(WITH_IMAGE)
    finally:
        await chain.aclose()

    assert reply.text == "from the text-only model"
    assert anthropic_fake.requests[0].body["messages"][0]["content"][0] == _anthropic_block(RED)
    assert _no_image_anywhere(openai_fake.requests[0].body)


def test_the_embedded_model_reads_the_content_alone() -> None:
    with_images = _tool_turn((RED,)).messages
    without = _tool_turn(()).messages
    assert plain_messages(with_images) == plain_messages(without)
    assert plain_messages(WITH_IMAGE.messages) == [("user", SAID)]


# -- the rule -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"kind": "anthropic", "model": "claude-sonnet-4-5"}, True),
        ({"kind": "anthropic", "model": "claude-sonnet-4-5", "images": False}, False),
        ({"model": "gpt-4o"}, True),
        ({"model": "gpt-4.1-nano"}, True),
        ({"model": "gpt-5-mini"}, True),
        ({"model": "o3"}, True),
        ({"model": "o4-mini"}, True),
        ({"model": "o3-mini"}, False),
        ({"model": "o1-mini"}, False),
        ({"model": "gpt-3.5-turbo"}, False),
        ({"base_url": "http://127.0.0.1:11434/v1", "model": "llava:13b"}, True),
        ({"base_url": "http://127.0.0.1:11434/v1", "model": "qwen2.5vl:7b"}, True),
        ({"base_url": "http://127.0.0.1:11434/v1", "model": "qwen2.5-vl-7b-instruct"}, True),
        ({"base_url": "http://127.0.0.1:11434/v1", "model": "llama3.2-vision"}, True),
        ({"base_url": "http://127.0.0.1:11434/v1", "model": "llama3.1:8b"}, False),
        ({"base_url": "http://127.0.0.1:11434/v1", "model": "qwen2.5:7b"}, False),
        ({"base_url": "https://openrouter.ai/api/v1", "model": "google/gemini-2.5-pro"}, True),
        ({"base_url": "https://openrouter.ai/api/v1", "model": "mistralai/pixtral-12b"}, True),
        ({"base_url": "http://127.0.0.1:8000/v1", "model": "mistral-7b", "images": True}, True),
    ],
)
def test_which_providers_are_sent_images(fields: dict[str, Any], expected: bool) -> None:
    assert takes_images(ProviderConfig(**fields)) is expected


def test_images_true_is_refused_for_the_embedded_model() -> None:
    data = {
        "agent": {"provider": "local"},
        "providers": {"local": {"kind": "embedded", "model_path": "m.gguf", "images": True}},
    }
    with pytest.raises(ConfigError, match=r"providers\.local.*images = true"):
        parse_settings(data, environ={})
