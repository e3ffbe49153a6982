"""The settings tables the voice tests share: the model on the OpenAI fake, and
``[transcription]`` on the transcription fake."""

from __future__ import annotations

from typing import Any

from tests.fakes.openai_server import OpenAIFake
from tests.fakes.transcription_server import TranscriptionFake
from tests.voice.conftest import KEY_ENV


def model(llm: OpenAIFake) -> dict[str, Any]:
    return {
        "default": {
            "kind": "openai",
            "base_url": llm.base_url,
            "model": "gpt-4o",
            "api_key_env": KEY_ENV,
            "max_retries": 0,
        }
    }


def transcription(whisper: TranscriptionFake, **voice: Any) -> dict[str, Any]:
    return {
        "provider": "whisper",
        "providers": {"whisper": {"base_url": whisper.base_url, "max_retries": 0, "timeout_s": 20}},
        **voice,
    }


def user_text(llm: OpenAIFake) -> str:
    """The last user message of the model's only request."""
    [request] = llm.requests
    content = [m for m in request.body["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, str) else "\n".join(p["text"] for p in content)
