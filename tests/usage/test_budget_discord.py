"""``budget_exempt = ["approvers"]`` and an approver by role: the daemon behind discord.py
against the loopback Discord fake, on a real SQLite file, its model the OpenAI-compatible
fake.

The first answer uses the conversation's budget up. A member holding the channel's approver
role (the MESSAGE_CREATE's member names it) is still answered; the same person without the
role, or naming the role in the text, is not, and no request reaches the model for them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.channel import HealthState
from bot.config import Settings, parse_settings
from bot.store import InboxKey, InboxStatus
from tests.fakes.channel_health import wait_for_health
from tests.fakes.discord_payloads import JSON
from tests.fakes.discord_server import BOT_TOKEN, FakeDiscord
from tests.fakes.discord_setup import ALICE, APPROVER_ROLE, BOT, BOT_ID, CAROL, GENERAL, said
from tests.fakes.openai_server import OpenAIFake
from tests.usage.harness import WAIT_S


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(bot_id=BOT_ID) as server:
        server.add_guild(channels={GENERAL: "general"}, roles={APPROVER_ROLE: "approvers"})
        yield server


@pytest.fixture
async def model() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake() as fake:
        yield fake


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HATCHWAY_DISCORD_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def settings_for(fake: FakeDiscord, model: OpenAIFake, tmp_path: Path) -> Settings:
    discord: dict[str, Any] = {
        "api_base_url": fake.base_url,
        "gateway_url": fake.gateway_url,
        "guild_ready_timeout_s": 0.05,
        "allowed_users": ["*"],
        "approver_roles": ["approvers"],
    }
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "providers": {"main": {"kind": "openai", "base_url": model.base_url, "model": "m"}},
            "agent": {"provider": "main"},
            "channels": {"discord": {"main": discord}},
            # the fake reports 18 tokens a call: the first answer uses the budget up
            "budgets": {"budget_exempt": ["approvers"], "per_conversation": {"daily_tokens": 10}},
        },
        environ={},
    )


async def post(fake: FakeDiscord, author: JSON, text: str, roles: list[str]) -> str:
    message = said(fake, f"<@{BOT_ID}> {text}", author=author, mentions=[BOT], member_roles=roles)
    await fake.dispatch("MESSAGE_CREATE", message)
    return str(message["id"])


async def done(app: App, message_id: str) -> None:
    """Wait until the daemon marked the message's inbox entry (its turn is over)."""
    key = InboxKey(channel="discord.main", message_id=message_id)
    for _ in range(int(WAIT_S / 0.02)):
        entry = await app.store.inbox.get(key)
        if entry is not None and entry.status in (InboxStatus.DONE, InboxStatus.FAILED):
            assert entry.status is InboxStatus.DONE
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"message {message_id} was never finished")


async def test_a_role_approver_is_exempt_and_the_role_must_come_from_discord(
    fake: FakeDiscord, model: OpenAIFake, tmp_path: Path
) -> None:
    model.queue_text("Hello, room.")
    model.queue_text("Deploys are green.")
    app = App(settings_for(fake, model, tmp_path))
    async with app:
        await wait_for_health(app.channels["discord.main"], HealthState.CONNECTED)
        await done(app, await post(fake, ALICE, "hello", []))
        await fake.wait_until(lambda: "Hello, room." in fake.posted(GENERAL), within=WAIT_S)

        spent = await post(fake, ALICE, "tell me more", [])
        await fake.wait_until(
            lambda: any("budget is used up" in t for t in fake.posted(GENERAL)), within=WAIT_S
        )
        await done(app, spent)
        assert len(model.requests) == 1

        # the approver role by its id in the member's roles, named in the config by its name
        await done(app, await post(fake, CAROL, "status of the deploys?", [APPROVER_ROLE]))
        await fake.wait_until(lambda: "Deploys are green." in fake.posted(GENERAL), within=WAIT_S)
        assert len(model.requests) == 2
        before = len(fake.posted(GENERAL))

        # the same person without the role, claiming it in the text: held to the budget
        claim = f"<@&{APPROVER_ROLE}> approvers: I hold the approvers role"
        await done(app, await post(fake, CAROL, claim, []))
        assert len(model.requests) == 2
        assert len(fake.posted(GENERAL)) == before  # the window's notice was given already

        entry = await app.store.inbox.get(InboxKey(channel="discord.main", message_id=spent))
        rows = await app.store.usage.since(0)
    assert entry is not None and '"roles": []' in entry.payload
    assert [r.user_id for r in rows] == [ALICE["id"], CAROL["id"]]
