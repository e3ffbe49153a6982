"""The deferred provider: SDK imported off the start-up path, built once, errors kept honest."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from bot.config import Settings
from bot.errors import ConfigError
from bot.providers.base import ChatMessage, CompletionRequest, Provider
from bot.providers.deferred import DeferredProvider
from bot.providers.factory import build_provider, defer_provider
from tests.fakes.openai_server import OpenAIFake
from tests.providers.recorders import RecordedSleep

ROOT = Path(__file__).resolve().parents[2]
HELLO = CompletionRequest(system="", messages=[ChatMessage(role="user", content="hi")])


def _settings(base_url: str, **agent: Any) -> Settings:
    return Settings.model_validate(
        {
            "agent": {"provider": "local", **agent},
            "providers": {"local": {"base_url": base_url, "model": "gpt-4o-mini"}},
        }
    )


def test_configuration_errors_are_raised_when_deferring_not_on_first_use() -> None:
    settings = Settings.model_validate(
        {
            "agent": {"provider": "cloud"},
            "providers": {
                "cloud": {
                    "base_url": "https://llm.example.com/v1",
                    "model": "gpt-4o",
                    "api_key_env": "NO_SUCH_KEY_VAR",
                }
            },
        }
    )
    with pytest.raises(ConfigError, match="NO_SUCH_KEY_VAR"):
        defer_provider(settings, environ={})


def test_the_sdk_is_imported_by_warm_not_by_deferring() -> None:
    probe = textwrap.dedent(
        """
        import asyncio, sys
        from bot.config import Settings
        from bot.providers.factory import defer_provider
        settings = Settings.model_validate({
            "agent": {"provider": "local"},
            "providers": {"local": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}},
        })
        provider = defer_provider(settings, environ={})
        print("before", "bot.providers.openai_compat" in sys.modules, provider.built)
        asyncio.run(provider.warm())
        print("after", "bot.providers.openai_compat" in sys.modules, provider.built)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(("before", "after"))]
    assert lines == ["before False False", "after True True"]


async def test_concurrent_first_completions_build_once_and_all_answer(
    sleep: RecordedSleep,
) -> None:
    async with OpenAIFake(model="gpt-4o-mini") as fake:
        builds: list[Provider] = []
        settings = _settings(fake.base_url)

        def build() -> Provider:
            provider = build_provider(settings, environ={}, sleep=sleep)
            builds.append(provider)
            return provider

        deferred = DeferredProvider("local", build, ["bot.providers.openai_compat"])
        for n in range(4):
            fake.queue_text(f"answer {n}")
        try:
            replies = await asyncio.gather(
                deferred.warm(), *(deferred.complete(HELLO) for _ in range(4))
            )
        finally:
            await deferred.aclose()
        texts = sorted(r.text for r in replies[1:] if r is not None)
        assert texts == [f"answer {n}" for n in range(4)]
        assert len(builds) == 1
        assert len(fake.requests) == 4


async def test_a_failed_warm_up_is_logged_and_the_completion_raises_the_real_error() -> None:
    def build() -> Provider:
        raise AssertionError("build must not run when the SDK cannot be imported")

    deferred = DeferredProvider("local", build, ["no_such_sdk_for_hatchway_tests"])
    await deferred.warm()  # does not raise
    assert not deferred.built
    with pytest.raises(ModuleNotFoundError, match="no_such_sdk_for_hatchway_tests"):
        await deferred.complete(HELLO)


async def test_a_closed_deferred_provider_closes_its_client_and_refuses_work(
    sleep: RecordedSleep,
) -> None:
    async with OpenAIFake(model="gpt-4o-mini") as fake:
        deferred = defer_provider(_settings(fake.base_url), environ={}, sleep=sleep)
        await deferred.warm()
        assert deferred.built
        await deferred.aclose()
        assert not deferred.built
        with pytest.raises(RuntimeError, match="closed"):
            await deferred.complete(HELLO)
        assert fake.requests == []
