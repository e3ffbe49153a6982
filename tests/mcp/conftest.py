"""Fixtures for MCP tests: the demo server's command line and an App around it."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.config import Settings, parse_settings
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.untrusted import untrusted
from tests.fakes.channel import FakeTerminal
from tests.fakes.scripted_provider import ScriptedProvider

DEMO_SERVER = [sys.executable, str(Path(__file__).with_name("demo_server.py"))]
CONSOLE = ChannelRef(kind="console", alias="main")
SECRET = "s3cr3t-token-value-0123456789"


def output(tool: str, text: str) -> str:
    """The result of ``tool`` (its wrapped name) as the model reads it: the server's text
    marked as data (tests/mcp/test_untrusted_output.py checks the marking itself)."""
    return untrusted(f"MCP tool {tool}", text)


def demo_config(**overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "command": DEMO_SERVER,
        "reconnect_initial_s": 0.05,
        "reconnect_max_s": 0.5,
        "env_from": {"DEMO_TOKEN": "HATCHWAY_TEST_DEMO_TOKEN"},
    }
    config.update(overrides)
    return config


def make_settings(tmp_path: Path, mcp: dict[str, Any]) -> Settings:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": 60.0, "parallel_tools": False},
            "channels": {"console": {"main": {}}},
            "mcp": mcp,
        },
        environ={},
        require_provider=False,
    )


def console_message(text: str, message_id: str) -> IngressEnvelope:
    return IngressEnvelope(
        channel=CONSOLE,
        message_id=message_id,
        conversation_id="local",
        sender=Sender(id="ana", display_name="Ana"),
        text=text,
        reply_target=DeliveryTarget(channel=CONSOLE, conversation_id="local"),
        is_direct=True,
        addressed_to_bot=True,
        capabilities=Capabilities(terminal_prompt=True),
    )


AppFactory = Callable[..., Awaitable[tuple[App, FakeTerminal]]]


@pytest.fixture
def provider() -> ScriptedProvider:
    return ScriptedProvider()


@pytest.fixture
async def start_app(
    tmp_path: Path, provider: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[AppFactory]:
    monkeypatch.setenv("HATCHWAY_TEST_DEMO_TOKEN", SECRET)
    started: list[App] = []

    async def start(
        mcp: dict[str, Any], answers: tuple[str | None, ...] = ()
    ) -> tuple[App, FakeTerminal]:
        terminal = FakeTerminal(CONSOLE, list(answers))
        app = App(
            make_settings(tmp_path, mcp), provider=provider, channels={"console.main": terminal}
        )
        await app.start()
        started.append(app)
        async with asyncio.timeout(60):
            await app.mcp.wait_ready()
        return app, terminal

    yield start
    for app in started:
        await app.stop(drain_timeout_s=5.0)
