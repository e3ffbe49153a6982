"""Discord adapter health with the real discord.py: honest CONNECTED, clear failures for a bad
token or a missing privileged intent, and reconnect/resume surfaced while it happens."""

from __future__ import annotations

import asyncio

import pytest

from bot.channel import HealthState
from bot.errors import ChannelAuthError, ChannelError
from bot.store import Store
from tests.fakes.channel_health import wait_for_health
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import (
    BOT,
    BOT_ID,
    RecordingHost,
    make_channel,
    running,
    said,
)

pytestmark = pytest.mark.usefixtures("discord_env")


async def test_connected_only_after_ready_and_stopped_after_cancel(
    fake: FakeDiscord, store: Store
) -> None:
    channel = make_channel(fake, store)
    before = channel.health.state
    async with running(channel, RecordingHost()):
        during = channel.health.state
        assert fake.identifies == 1 and fake.calls_to("GET", "/users/@me")
        async with asyncio.timeout(10):
            while "1 guild" not in channel.health.detail:  # noqa: ASYNC110 (no notification)
                await asyncio.sleep(0.005)
        assert channel.health.state is HealthState.CONNECTED
    assert (before, during) == (HealthState.STARTING, HealthState.CONNECTED)
    assert channel.health.state is HealthState.STOPPED


async def test_connected_and_serving_before_discord_py_waits_out_guild_ready_timeout(
    fake: FakeDiscord, store: Store
) -> None:
    # discord.py holds on_ready until guild_ready_timeout has passed with no new guild; the
    # adapter is connected from the gateway's READY, when messages start to flow.
    channel = make_channel(fake, store, guild_ready_timeout_s=60)
    host = RecordingHost()
    async with running(channel, host):
        assert channel.health.state is HealthState.CONNECTED
        assert "guild" not in channel.health.detail  # on_ready has not run
        message = said(fake, f"<@{BOT_ID}> hello", mentions=[BOT])
        await fake.dispatch("MESSAGE_CREATE", message)
        [envelope] = await host.wait_envelopes(1)
    assert envelope.text == "hello"


async def test_invalid_token_fails_with_auth_error(
    fake: FakeDiscord, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "not-the-right-token-0123456789"
    monkeypatch.setenv("HATCHWAY_DISCORD_TOKEN", secret)
    channel = make_channel(fake, store)
    with pytest.raises(ChannelAuthError, match="refused the bot token"):
        await asyncio.wait_for(channel.run(RecordingHost()), 10)
    assert channel.health.state is HealthState.FAILED
    assert "401" in channel.health.detail and secret not in channel.health.detail
    assert fake.identifies == 0  # never reached the gateway


async def test_missing_token_variable_fails_clearly(
    fake: FakeDiscord, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HATCHWAY_DISCORD_TOKEN")
    channel = make_channel(fake, store)
    with pytest.raises(ChannelAuthError, match="HATCHWAY_DISCORD_TOKEN"):
        await channel.run(RecordingHost())
    assert channel.health.state is HealthState.FAILED
    assert fake.calls == []


@pytest.mark.parametrize(
    ("close_code", "detail"),
    [
        (4014, "Message Content intent"),
        (4004, "refused the bot token"),
    ],
)
async def test_gateway_refusal_fails_with_a_clear_detail(
    fake: FakeDiscord, store: Store, close_code: int, detail: str
) -> None:
    fake.identify_close_code = close_code
    channel = make_channel(fake, store)
    with pytest.raises(ChannelAuthError):
        await asyncio.wait_for(channel.run(RecordingHost()), 10)
    assert channel.health.state is HealthState.FAILED
    assert detail in channel.health.detail
    assert fake.identifies == 1  # no retry loop against a fatal close


async def test_a_bot_discord_requires_to_shard_fails_with_the_reason(
    fake: FakeDiscord, store: Store
) -> None:
    # One unsharded session per alias (its lease is the one shard's): a bot in too many
    # guilds for it is refused by the gateway with 4011, and told so instead of retrying.
    fake.identify_close_code = 4011
    channel = make_channel(fake, store)
    with pytest.raises(ChannelError, match="sharding"):
        await asyncio.wait_for(channel.run(RecordingHost()), 10)
    assert channel.health.state is HealthState.FAILED
    assert "4011" in channel.health.detail and "2,500 guilds" in channel.health.detail
    assert fake.identifies == 1


async def test_dropped_gateway_is_reconnecting_until_resumed(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        fake.resume_gate.clear()
        await fake.drop_connection(4000)
        await wait_for_health(channel, HealthState.RECONNECTING)
        assert "resum" in channel.health.detail
        fake.resume_gate.set()
        await wait_for_health(channel, HealthState.CONNECTED)
        await fake.dispatch("MESSAGE_CREATE", said(fake, "after the resume"))
        [envelope] = await host.wait_envelopes(1)
    assert fake.resumes == 1 and fake.identifies == 1
    assert envelope.text == "after the resume"


async def test_discord_pys_late_ready_after_a_drop_does_not_say_connected(
    fake: FakeDiscord, store: Store
) -> None:
    """discord.py dispatches "ready" guild_ready_timeout_s after the session's READY, also
    when the gateway dropped in between: the channel stays RECONNECTING until the resume."""
    channel = make_channel(fake, store, guild_ready_timeout_s=60)
    async with running(channel, RecordingHost()):
        fake.resume_gate.clear()
        await fake.drop_connection(4000)
        await wait_for_health(channel, HealthState.RECONNECTING)
        await channel.gateway_ready()  # what discord.py's delayed "ready" runs
        assert channel.health.state is HealthState.RECONNECTING
        assert "resum" in channel.health.detail
        fake.resume_gate.set()
        await wait_for_health(channel, HealthState.CONNECTED)
