"""The provider chain in a few words (chat banner, ``daemon_ready``)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.config import Settings
from bot.providers.summary import describe_chain


def settings(providers: dict[str, dict[str, Any]], **agent: Any) -> Settings:
    return Settings.model_validate({"agent": agent, "providers": providers})


@pytest.mark.parametrize(
    ("provider", "line"),
    [
        (
            {"base_url": "http://127.0.0.1:11434/v1", "model": "phi3"},
            "default: openai phi3 at http://127.0.0.1:11434/v1, tools text",
        ),
        (
            {"base_url": "http://127.0.0.1:11434/v1", "model": "qwen2.5:7b"},
            "default: openai qwen2.5:7b at http://127.0.0.1:11434/v1, tools native",
        ),
        (
            {"model": "gpt-4o-mini"},
            "default: openai gpt-4o-mini at https://api.openai.com/v1, tools native",
        ),
        (
            {"kind": "anthropic", "model": "claude-sonnet-4"},
            "default: anthropic claude-sonnet-4 at https://api.anthropic.com, tools native",
        ),
        (
            {
                "base_url": "https://bob:hunter2@llm.example.com/v1",
                "model": "m",
                "tool_mode": "text",
            },
            "default: openai m at https://llm.example.com/v1, tools text",
        ),
    ],
)
def test_each_kind_names_model_endpoint_and_tool_mode(provider: dict[str, Any], line: str) -> None:
    (summary,) = describe_chain(settings({"default": provider}))
    assert summary.text() == line
    assert "hunter2" not in repr(summary)


def test_the_chain_is_the_primary_then_the_fallbacks_in_order() -> None:
    chain = describe_chain(
        settings(
            {
                "local": {"base_url": "http://10.0.0.5:8000/v1", "model": "llama3.1:8b"},
                "cloud": {"kind": "anthropic", "model": "claude-haiku"},
            },
            provider="local",
            fallback=["cloud", "local"],
        )
    )
    assert [(s.name, s.endpoint, s.tool_mode) for s in chain] == [
        ("local", "http://10.0.0.5:8000/v1", "native"),
        ("cloud", "https://api.anthropic.com", "native"),
    ]


@pytest.mark.parametrize(
    ("provider", "line"),
    [
        (
            {"kind": "embedded", "model_path": "/opt/models/tiny-chat.Q4_0.gguf"},
            "default: embedded tiny-chat.Q4_0 in-process tiny-chat.Q4_0.gguf, tools off",
        ),
        (
            {"kind": "embedded", "model_path": "m.gguf", "model": "mine", "tool_mode": "text"},
            "default: embedded mine in-process m.gguf, tools text",
        ),
    ],
)
def test_an_embedded_model_runs_in_process(provider: dict[str, Any], line: str) -> None:
    (summary,) = describe_chain(settings({"default": provider}))
    assert summary.in_process
    assert summary.text() == line


def test_no_provider_configured_is_an_empty_chain() -> None:
    assert describe_chain(Settings()) == ()
