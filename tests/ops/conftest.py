"""Shared pieces of the ops tests: a config writer and an LLM fake that can hold its answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from tests.fakes.openai_server import OpenAIFake


class HeldOpenAI(OpenAIFake):
    """The OpenAI fake, plus: with :meth:`hold_next`, the next request is answered only once
    the test calls :meth:`release` (the request's arrival sets :attr:`arrived`)."""

    def __init__(self) -> None:
        super().__init__(model="gpt-4o-mini")
        self.arrived = asyncio.Event()
        self._release = asyncio.Event()
        self._hold = False

    def hold_next(self) -> None:
        self._hold = True
        self.arrived.clear()
        self._release.clear()

    def release(self) -> None:
        self._release.set()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if self._hold:
            self._hold = False
            self.arrived.set()
            await self._release.wait()
        return await super()._handle(request)


@pytest.fixture
async def llm() -> AsyncIterator[HeldOpenAI]:
    fake = HeldOpenAI()
    async with fake:
        yield fake
        fake.release()


def write_config(
    path: Path,
    *,
    llm_url: str,
    allowed_users: list[str],
    extra: str = "",
    server: bool = True,
) -> Path:
    """A daemon config: console channel with the given allow-list (DMs by allow-list),
    loopback HTTP on a free port, JSON logs, the state next to the file."""
    users = ", ".join(f'"{u}"' for u in allowed_users)
    path.write_text(
        f"""
[agent]
system_prompt = "test"

[providers.default]
kind = "openai"
base_url = "{llm_url}"
model = "gpt-4o-mini"
api_key_env = "HATCHWAY_TEST_KEY"
max_retries = 0

[channels.console.main]
allowed_users = [{users}]
dm_policy = "allowlist"

[server]
enabled = {str(server).lower()}
host = "127.0.0.1"
port = 0

[logging]
level = "info"
format = "json"
{extra}
""",
        encoding="utf-8",
    )
    return path
