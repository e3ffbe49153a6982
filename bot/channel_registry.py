"""Adapters by name: ``bot`` never imports ``channels`` directly.

Each platform module exposes ``create(ref, config, context) -> Channel``; it is imported only
when a channel of its kind is configured, so an unused platform SDK costs nothing at start-up.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from bot.channel import Channel
from bot.config import ChannelCommon
from bot.envelope import ChannelRef
from bot.errors import ConfigError

if TYPE_CHECKING:
    from aiohttp import web

    from bot.store import Store


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelContext:
    """What the daemon gives an adapter at creation.

    ``store`` holds small durable state (``store.channel_state``: polling offsets and the
    like). ``web_app`` is the daemon's HTTP application, for adapters that receive events over
    HTTP (Slack Events API); routes must be added before the daemon starts serving.
    """

    store: Store
    web_app: web.Application | None = None


ChannelFactory = Callable[[ChannelRef, ChannelCommon, ChannelContext], Channel]

_FACTORIES: dict[str, str] = {
    "console": "channels.console:create",
    "telegram": "channels.telegram.adapter:create",
    "slack": "channels.slack.adapter:create",
    "discord": "channels.discord.adapter:create",
}


def known_kinds() -> list[str]:
    return sorted(_FACTORIES)


def create_channel(
    kind: str, alias: str, config: ChannelCommon, context: ChannelContext
) -> Channel:
    """Import the adapter module for ``kind`` and build the channel."""
    target = _FACTORIES.get(kind)
    if target is None:
        raise ConfigError(f"channels.{kind}: unknown channel kind; known: {known_kinds()}")
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    factory = cast(ChannelFactory, getattr(module, attr))
    return factory(ChannelRef(kind=kind, alias=alias), config, context)
