"""A daemon's App for trace and log tests: the in-process Slack-like channel with an approver,
the OpenAI-compatible provider over loopback HTTP to the scripted fake, a real SQLite file,
and, when traces are on, the SDK's in-memory exporter in place of OTLP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bot.app import App
from bot.config import Settings, parse_settings
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.providers.base import Provider
from tests.fakes.channel import FakeChannel
from tests.fakes.openai_server import OpenAIFake

SLACK = ChannelRef(kind="slack", alias="team")
APPROVER = "U_ADMIN"
REQUESTER = "U_ALICE"
KEY_ENV = "HATCHWAY_TEST_OPENAI_KEY"
KEY = "sk-test-telemetry-key-0000"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture
async def fake() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake() as server:
        yield server


def settings_for(
    fake: OpenAIFake, tmp_path: Path, *, telemetry: Mapping[str, Any] | None = None
) -> Settings:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": 30.0},
            "channels": {"slack": {"team": {"allowed_users": ["*"], "approvers": [APPROVER]}}},
            "providers": {
                "default": {
                    "kind": "openai",
                    "base_url": fake.base_url,
                    "model": "scripted",
                    "api_key_env": KEY_ENV,
                    "max_retries": 2,
                    "tool_mode": "native",
                }
            },
            "telemetry": dict(telemetry or {"enabled": True}),
        },
        environ={KEY_ENV: KEY},
    )


def message(text: str, message_id: str, *, conversation: str = "C1") -> IngressEnvelope:
    return IngressEnvelope(
        channel=SLACK,
        message_id=message_id,
        conversation_id=conversation,
        sender=Sender(id=REQUESTER, display_name="Alice"),
        text=text,
        reply_target=DeliveryTarget(channel=SLACK, conversation_id=conversation),
        is_group=True,
        addressed_to_bot=True,
        capabilities=Capabilities(approval_backchannel=True),
    )


@asynccontextmanager
async def running(
    settings: Settings,
    channel: FakeChannel,
    exporter: InMemorySpanExporter | None = None,
    *,
    provider: Provider | None = None,
) -> AsyncIterator[App]:
    """The App with ``channel`` as ``slack.team`` (and ``provider`` instead of the one the
    settings name); stopped, its spans exported, on leaving."""
    app = App(settings, provider=provider, channels={str(SLACK): channel}, span_exporter=exporter)
    await app.start()
    try:
        await channel.running.wait()
        yield app
    finally:
        await app.stop(drain_timeout_s=5.0)


def values_of(span: ReadableSpan) -> list[str]:
    """Every attribute value of ``span`` and of its events, as text."""
    values = [str(v) for v in (span.attributes or {}).values()]
    for event in span.events:
        values += [str(v) for v in (event.attributes or {}).values()]
    return values
