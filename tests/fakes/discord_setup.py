"""The Discord side of a test: the bot, the people and the channels of its guild, the
adapter or daemon settings wired to a :class:`~tests.fakes.discord_server.FakeDiscord`, and
a host that answers clicks like the approval rules."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from bot.channel import Channel, ChannelHost, HealthState
from bot.channel_registry import ChannelContext, create_channel
from bot.config import Settings, parse_settings
from bot.store import Store
from channels.discord.adapter import DiscordChannel
from channels.discord.config import DiscordChannelConfig
from tests.fakes.channel_health import wait_for_health
from tests.fakes.discord_payloads import JSON, message_payload, user_payload
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.recording_host import RecordingHost as SharedRecordingHost
from tests.fakes.recording_host import approver_verdict

BOT_ID = "900000000000000001"
GENERAL = "800000000000000010"
DM = "800000000000000040"
APPROVER_ROLE = "700000000000000001"
BOT = user_payload(BOT_ID, "hatchway", bot=True)
ALICE = user_payload("100000000000000001", "alice")
BOB = user_payload("100000000000000002", "bob")
CAROL = user_payload("100000000000000003", "carol")


def make_channel(fake: FakeDiscord, store: Store, **options: Any) -> DiscordChannel:
    """The adapter alone, built through the channel registry, on ``store``."""
    options.setdefault("guild_ready_timeout_s", 0.05)
    options.setdefault("gateway_url", fake.gateway_url)
    config = DiscordChannelConfig(api_base_url=fake.base_url, **options)
    channel = create_channel("discord", "main", config, ChannelContext(store=store))
    assert isinstance(channel, DiscordChannel)
    return channel


def settings_for(fake: FakeDiscord, tmp_path: Path, **approval: Any) -> Settings:
    """Daemon settings with one Discord channel: only :data:`ALICE` may talk, :data:`BOB`
    approves; ``approval`` keys go into ``[approval]`` (a 30 s timeout unless given). The
    token comes from HATCHWAY_DISCORD_TOKEN."""
    discord_main: dict[str, Any] = {
        "api_base_url": fake.base_url,
        "gateway_url": fake.gateway_url,
        "guild_ready_timeout_s": 0.05,
        "allowed_users": [ALICE["id"]],
        "approvers": [BOB["id"]],
    }
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "approval": {"timeout_s": 30, **approval},
            "channels": {"discord": {"main": discord_main}},
        },
        environ={},
        require_provider=False,
    )


def said(fake: FakeDiscord, content: str, **fields: Any) -> JSON:
    """A MESSAGE_CREATE payload: by :data:`ALICE` in #general unless ``fields`` say otherwise."""
    fields.setdefault("channel_id", GENERAL)
    fields.setdefault("author", ALICE)
    if fields["channel_id"] != DM:
        fields.setdefault("guild_id", fake.guild_of(fields["channel_id"]))
    return message_payload(id=fake.new_id(), content=content, **fields)


class RecordingHost(SharedRecordingHost):
    """The shared recording host, answering clicks like the approval rules would: ACCEPTED
    for configured approvers (user id or role) on a pending id, NOT_AUTHORISED for others,
    UNKNOWN for ids it does not hold."""

    def __init__(
        self,
        *,
        approvers: Sequence[str] = (),
        approver_roles: Sequence[str] = (),
        pending: Sequence[str] = (),
    ) -> None:
        super().__init__(
            approver_verdict(approvers=approvers, approver_roles=approver_roles, pending=pending)
        )


@contextlib.asynccontextmanager
async def running(channel: Channel, host: ChannelHost) -> AsyncIterator[asyncio.Task[None]]:
    """Run ``channel`` until the block ends (then cancel it and wait for it to stop)."""
    task = asyncio.create_task(channel.run(host))
    try:
        await wait_for_health(channel, HealthState.CONNECTED, HealthState.FAILED)
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
