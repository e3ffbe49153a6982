"""The daemon's channel adapters: which ones it runs, and keeping each one running.

An adapter reconnects on its own after a network error (its ``reconnect_*`` keys); what
reaches :func:`run_channel` is a crash (a bug), restarted here with jittered backoff, or an
authentication error, which stops the adapter for good (its health says why).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import structlog

from bot.backoff import Backoff, BackoffPolicy, cancel_requested, sleep_before_retry
from bot.channel import Channel, ChannelHost
from bot.channel_registry import ChannelContext, create_channel
from bot.config import ChannelsConfig, Settings
from bot.errors import ChannelAuthError

log = structlog.get_logger(__name__)

#: Restarts of an adapter that crashed (a bug, not a network error: adapters reconnect
#: themselves with their own reconnect_* keys).
CHANNEL_RESTART = BackoffPolicy(initial_s=1.0, max_s=60.0)


def with_default_channel(settings: Settings, *, given: bool = False) -> Settings:
    """With no channel configured (and none given), the console is the embedded default:
    it is added to the settings so that access policy and approvals see it too."""
    if given or any(cfg.enabled for _, _, cfg in settings.channels.all()):
        return settings
    channels = ChannelsConfig.embedded_console()
    return settings.model_copy(update={"channels": channels})


def build_channels(
    settings: Settings, context: ChannelContext, given: Mapping[str, Channel]
) -> dict[str, Channel]:
    """The adapter of each enabled channel alias, by ``kind.alias``, then the ``given``
    ones (tests, the bench), which take the place of a configured alias of the same name."""
    channels: dict[str, Channel] = {}
    for kind, alias, cfg in settings.channels.all():
        if not cfg.enabled:
            continue
        name = f"{kind}.{alias}"
        if name in given:
            continue
        channels[name] = create_channel(kind, alias, cfg, context)
    channels.update(given)
    return channels


async def run_channel(name: str, channel: Channel, host: ChannelHost) -> None:
    """Run one adapter; restart it with jittered backoff when it fails, except on an
    authentication error, which stops it for good (health says why)."""
    backoff = Backoff(CHANNEL_RESTART)
    while True:
        try:
            await channel.run(host)
            log.info("channel_finished", channel=name)
            return
        except ChannelAuthError as exc:
            log.error("channel_auth_failed", channel=name, error=str(exc))
            return
        except Exception as exc:
            if cancel_requested():
                # the stop, turned into an error by the platform library
                raise asyncio.CancelledError from exc
            # Boundary: an adapter crash is logged and the adapter restarted.
            log.exception("channel_crashed", channel=name, error=type(exc).__name__)
            await sleep_before_retry(backoff.next_delay())
