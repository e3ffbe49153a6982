"""Building the provider chain from settings: keys, tool mode, fallbacks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.config import AgentConfig, ProviderConfig, Settings, parse_settings
from bot.errors import ConfigError
from bot.providers.base import ChatMessage, CompletionRequest, Provider, ToolDefinition
from bot.providers.embedded import EMBEDDED_SYSTEM_PROMPT
from bot.providers.factory import (
    PLACEHOLDER_KEY,
    build_provider,
    is_local_endpoint,
    own_system_prompt,
    resolve_tool_mode,
)
from bot.providers.fallback import FallbackProvider
from bot.providers.openai_compat import OpenAICompatProvider
from bot.providers.text_protocol import TextProtocolProvider
from bot.scrub import scrub_text
from tests.fakes.openai_server import OpenAIFake
from tests.providers.recorders import RecordedSleep

HELLO = CompletionRequest(system="", messages=[ChatMessage(role="user", content="hi")])


def _settings(providers: dict[str, dict[str, Any]], fallback: list[str] | None = None) -> Settings:
    return Settings.model_validate(
        {
            "agent": {"provider": next(iter(providers)), "fallback": fallback or []},
            "providers": providers,
        }
    )


@pytest.mark.parametrize(
    ("config", "mode"),
    [
        ({"kind": "anthropic", "model": "claude-sonnet-4-5"}, "native"),
        ({"kind": "openai", "model": "gpt-4o-mini"}, "native"),
        ({"kind": "openai", "model": "anything", "base_url": None}, "native"),
        ({"base_url": "http://localhost:11434/v1", "model": "llama3.1:8b"}, "native"),
        ({"base_url": "http://localhost:11434/v1", "model": "qwen2.5-coder:7b"}, "native"),
        ({"base_url": "https://openrouter.ai/api/v1", "model": "anthropic/claude-3.5"}, "native"),
        ({"base_url": "http://localhost:11434/v1", "model": "smollm2:135m"}, "text"),
        ({"base_url": "http://localhost:11434/v1", "model": "gemma2:2b"}, "text"),
        ({"base_url": "http://localhost:1234/v1", "model": "phi-3-mini"}, "text"),
        ({"base_url": "http://localhost:1234/v1", "model": "qwen3", "tool_mode": "text"}, "text"),
        ({"base_url": "http://x/v1", "model": "smollm2", "tool_mode": "native"}, "native"),
    ],
)
def test_tool_mode_resolution(config: dict[str, Any], mode: str) -> None:
    assert resolve_tool_mode(ProviderConfig(**config)) == mode


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:11434/v1", True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://192.168.1.20:1234/v1", True),
        ("http://10.0.0.5/v1", True),
        ("http://gpu-box.local:8000/v1", True),
        ("https://openrouter.ai/api/v1", False),
        ("https://api.openai.com/v1", False),
        ("http://8.8.8.8/v1", False),
        (None, False),
    ],
)
def test_local_endpoints(url: str | None, local: bool) -> None:
    assert is_local_endpoint(url) is local


def test_a_remote_provider_without_its_key_names_the_variable() -> None:
    settings = _settings(
        {"main": {"kind": "anthropic", "model": "claude", "api_key_env": "MY_CLAUDE_KEY"}}
    )
    with pytest.raises(ConfigError, match="MY_CLAUDE_KEY"):
        build_provider(settings, environ={})


def test_a_missing_fallback_key_fails_before_anything_is_built() -> None:
    settings = _settings(
        {
            "local": {"base_url": "http://localhost:11434/v1", "model": "llama3.1"},
            "cloud": {
                "base_url": "https://openrouter.ai/api/v1",
                "model": "x",
                "api_key_env": "OPENROUTER_API_KEY",
            },
        },
        fallback=["cloud"],
    )
    with pytest.raises(ConfigError, match=r"providers\.cloud.*OPENROUTER_API_KEY"):
        build_provider(settings, environ={})


async def test_chain_with_tool_modes_and_registered_keys() -> None:
    key = "sk-or-registered-0123456789"
    settings = _settings(
        {
            "local": {"base_url": "http://localhost:11434/v1", "model": "smollm2:135m"},
            "cloud": {
                "base_url": "https://openrouter.ai/api/v1",
                "model": "openai/gpt-4o",
                "api_key_env": "OPENROUTER_API_KEY",
            },
            "claude": {"kind": "anthropic", "model": "claude-x", "api_key_env": "AK"},
        },
        fallback=["cloud", "claude"],
    )
    provider = build_provider(settings, environ={"OPENROUTER_API_KEY": key, "AK": "ak-123456789"})
    from bot.providers.anthropic import AnthropicProvider  # imported by build_provider

    try:
        assert isinstance(provider, FallbackProvider)
        kinds: list[type[Provider]] = [type(p) for p in provider.providers]
        assert kinds == [TextProtocolProvider, OpenAICompatProvider, AnthropicProvider]
        assert [p.name for p in provider.providers] == ["local", "cloud", "claude"]
        assert key not in scrub_text(f"boom {key}")
    finally:
        await provider.aclose()


async def test_a_keyless_local_endpoint_gets_a_placeholder_key(
    openai_fake: OpenAIFake, sleep: RecordedSleep
) -> None:
    settings = _settings(
        {
            "ollama": {
                "base_url": openai_fake.base_url,
                "model": "llama3.1:8b",
                "api_key_env": "UNSET_KEY_VAR",
            }
        }
    )
    provider = build_provider(settings, environ={}, sleep=sleep)
    openai_fake.queue_error(503)
    openai_fake.queue_text("hello from ollama")
    try:
        assert isinstance(provider, OpenAICompatProvider)
        reply = await provider.complete(HELLO)
    finally:
        await provider.aclose()
    assert reply.text == "hello from ollama"
    assert openai_fake.requests[0].headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"
    assert len(sleep.waits) == 1  # the injected sleep reached the retrier


@pytest.mark.parametrize(
    ("config", "mode"),
    [
        ({"kind": "embedded"}, "off"),
        ({"kind": "embedded", "tool_mode": "text"}, "text"),
        ({"kind": "openai", "model": "gpt-4o-mini", "tool_mode": "off"}, "off"),
    ],
)
def test_tool_mode_of_the_embedded_model_and_off(config: dict[str, Any], mode: str) -> None:
    assert resolve_tool_mode(ProviderConfig(**config)) == mode


@pytest.mark.parametrize(
    ("provider", "error"),
    [
        ({"kind": "embedded", "tool_mode": "native"}, 'tool_mode "native" is not available'),
        ({"kind": "embedded", "base_url": "http://localhost:1/v1"}, "base_url is not read"),
        ({"model": "m", "model_path": "/m.gguf"}, 'model_path only apply to kind = "embedded"'),
        ({"model": "m", "context_tokens": 512, "slots": 2}, "context_tokens, slots only apply"),
    ],
)
def test_keys_that_do_not_fit_the_kind_are_named(provider: dict[str, Any], error: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_settings({"providers": {"default": provider}}, environ={})
    assert "providers.default" in str(err.value)
    assert error in str(err.value)


def test_an_embedded_provider_names_its_model_and_file(tmp_path: Path) -> None:
    gguf = tmp_path / "tiny-model.Q4_0.gguf"
    packaged = ProviderConfig(kind="embedded")
    other = ProviderConfig(kind="embedded", model_path=str(gguf))
    named = ProviderConfig(kind="embedded", model_path=str(gguf), model="tiny", max_tokens=64)

    assert packaged.model == "smollm2-135m-instruct"
    assert packaged.model_path is not None
    assert packaged.model_path.endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert packaged.max_tokens == 512
    assert (other.model, other.model_path) == ("tiny-model.Q4_0", str(gguf))
    assert (named.model, named.max_tokens) == ("tiny", 64)


def test_the_embedded_model_has_its_own_short_prompt_unless_one_is_configured() -> None:
    embedded = ProviderConfig(kind="embedded")
    plain = ProviderConfig(model="m")
    own = ProviderConfig(model="m", system_prompt="Be a pirate.")
    agent_default = AgentConfig()
    agent_set = AgentConfig(system_prompt="You are Bob.")

    assert own_system_prompt(embedded, agent_default) == EMBEDDED_SYSTEM_PROMPT
    assert len(EMBEDDED_SYSTEM_PROMPT) < 300  # each token costs time on a small CPU
    assert own_system_prompt(embedded, agent_set) is None  # the agent's is sent
    assert own_system_prompt(plain, agent_default) is None
    assert own_system_prompt(own, agent_set) == "Be a pirate."
    assert own_system_prompt(embedded.model_copy(update={"system_prompt": "Hi."}), agent_set) == (
        "Hi."
    )


async def test_tools_off_and_an_own_system_prompt_reach_the_endpoint(
    openai_fake: OpenAIFake, sleep: RecordedSleep
) -> None:
    settings = _settings(
        {
            "plain": {
                "base_url": openai_fake.base_url,
                "model": "qwen2.5:7b",
                "tool_mode": "off",
                "system_prompt": "Answer in French.",
            }
        }
    )
    tool = ToolDefinition(name="current_time", description="The time.", parameters={})
    request = CompletionRequest(
        system="The agent's prompt.",
        messages=[ChatMessage(role="user", content="hi")],
        tools=[tool],
        response_schema={"type": "object"},
    )
    openai_fake.queue_text("{}")
    provider = build_provider(settings, environ={}, sleep=sleep)
    try:
        await provider.complete(request)
    finally:
        await provider.aclose()

    body = openai_fake.requests[0].body
    assert "tools" not in body
    assert body["messages"][0] == {"role": "system", "content": "Answer in French."}
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": {"type": "object"}},
    }
