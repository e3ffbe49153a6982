"""History trimming counts the images a turn shows: an App on a real SQLite file behind the
in-process file channel, an OpenAI-compatible model on loopback, and the messages of the
request bodies it got. A photo counts by its pixels (1568×784 shown: 1,600 tokens), so the
turn it comes with keeps fewer older turns; the next turn, which no longer sends its bytes,
keeps them all again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.app import App
from bot.config import parse_settings
from bot.providers.base import ChatMessage, CompletionRequest, ImagePart, ProviderReply
from bot.providers.image_tokens import MAX_IMAGE_TOKENS, MIN_IMAGE_TOKENS, image_tokens
from bot.usage.estimate import estimated_usage
from tests.agent.test_attachments_app import (
    KEY_ENV,
    USER,
    channel,
    file,
    image_urls,
    llm,
    message,
)
from tests.fakes.channel import FileChannel
from tests.fakes.openai_server import OpenAIFake

__all__ = ["channel", "llm"]  # fixtures shared with the attachments tests

#: Each answer is about 260 tokens of text; the photo's turn about 1,650 with the image.
ANSWER = "x" * 1000
BUDGET = 2300


def settings(llm: OpenAIFake, tmp_path: Path) -> Any:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": 60.0, "history_max_tokens": BUDGET},
            "channels": {"telegram": {"main": {"allowed_users": [USER]}}},
            "providers": {
                "default": {
                    "kind": "openai",
                    "base_url": llm.base_url,
                    "model": "gpt-4o",
                    "api_key_env": KEY_ENV,
                    "max_retries": 0,
                }
            },
        },
        environ={KEY_ENV: "sk-test-not-a-real-key-000"},
    )


def answers(messages: list[dict[str, Any]]) -> list[str]:
    """Which earlier answers a request carried, by their number."""
    return [m["content"].split()[1] for m in messages if m["role"] == "assistant"]


async def test_a_turn_with_a_photo_keeps_less_history(
    llm: OpenAIFake, channel: FileChannel, tmp_path: Path
) -> None:
    async with App(settings(llm, tmp_path), channels={"telegram.main": channel}) as app:
        for n in range(1, 7):
            attachments = (file("photo", "photo.png"),) if n == 5 else ()
            llm.queue_text(f"answer {n} {ANSWER}")
            await app.gateway.deliver(message(n, *attachments))
            await channel.wait_for(f"answer {n} ")
    bodies = [r.body["messages"] for r in llm.requests]
    assert answers(bodies[3]) == ["1", "2", "3"]  # text alone: everything fits
    with_photo = bodies[4]
    assert len(image_urls(with_photo)) == 1
    # 1,600 for the photo: only the two newest earlier turns fit beside it
    assert answers(with_photo) == ["3", "4"]
    assert with_photo[1]["content"] == "question 3"
    # the bytes went with their turn only: the next one keeps every turn again
    assert image_urls(bodies[5]) == []
    assert answers(bodies[5]) == ["1", "2", "3", "4", "5"]


def test_an_image_counts_by_its_pixels_within_bounds() -> None:
    def tokens(width: int, height: int) -> int:
        return image_tokens(ImagePart(media_type="image/png", data=b"", width=width, height=height))

    assert tokens(750, 100) == 100
    assert tokens(1568, 784) == MAX_IMAGE_TOKENS  # 1,639 by the formula
    assert tokens(10, 10) == MIN_IMAGE_TOKENS
    assert tokens(0, 0) == MAX_IMAGE_TOKENS  # unknown: the most


def test_a_usage_estimate_counts_an_image_by_the_same_rule() -> None:
    photo = ImagePart(media_type="image/png", data=b"", width=1000, height=600)
    text = ChatMessage(role="user", content="what is in it?")
    shown = ChatMessage(role="user", content="what is in it?", images=(photo, photo))
    reply = ProviderReply(text="a cat")
    plain = estimated_usage(CompletionRequest(system="", messages=[text]), reply)
    pictured = estimated_usage(CompletionRequest(system="", messages=[shown]), reply)
    assert pictured.input_tokens - plain.input_tokens == 2 * 800  # 1000×600 / 750 each
