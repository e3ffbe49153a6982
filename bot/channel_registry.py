"""Channel kinds, written once: ``bot`` finds each platform by name, never by import.

:data:`CHANNEL_PACKAGES` maps every kind to its package in ``channels/``. A package provides

* ``config.CHANNEL_CONFIG``: its pydantic model (a :class:`~bot.channel_config.ChannelCommon`
  subclass). Imported with the settings, which validate ``[channels.<kind>.<alias>]`` with
  it (:class:`bot.config.ChannelsConfig`), so it imports no platform SDK;
* ``adapter.create(ref, config, context) -> Channel``: the factory, imported only when a
  channel of its kind is built, so an unused platform SDK costs nothing at start-up.

Adding a kind is one line here plus the package. The import-linter contract that keeps
``bot`` from importing ``channels`` holds because both are looked up with ``importlib``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, cast

from bot.channel_config import ChannelCommon
from bot.errors import ConfigError

if TYPE_CHECKING:
    from aiohttp import web

    from bot.channel import Channel
    from bot.envelope import ChannelRef
    from bot.store import Store

#: Every channel kind and its package, in the order configured channels are listed.
CHANNEL_PACKAGES: Mapping[str, str] = MappingProxyType(
    {
        "console": "channels.console",
        "telegram": "channels.telegram",
        "slack": "channels.slack",
        "discord": "channels.discord",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelContext:
    """What the daemon gives an adapter at creation.

    ``store`` holds small durable state (``store.channel_state``: polling offsets and the
    like). ``web_app`` is the daemon's HTTP application, for adapters that receive events over
    HTTP (Slack Events API); routes must be added before the daemon starts serving.
    """

    store: Store
    web_app: web.Application | None = None


ChannelFactory = Callable[["ChannelRef", ChannelCommon, ChannelContext], "Channel"]


def known_kinds() -> list[str]:
    return sorted(CHANNEL_PACKAGES)


def config_models() -> dict[str, type[ChannelCommon]]:
    """Each kind's config model, in :data:`CHANNEL_PACKAGES` order (imports the light
    ``config`` modules only)."""
    models: dict[str, type[ChannelCommon]] = {}
    for kind, package in CHANNEL_PACKAGES.items():
        model = importlib.import_module(f"{package}.config").CHANNEL_CONFIG
        if not (isinstance(model, type) and issubclass(model, ChannelCommon)):
            raise TypeError(f"{package}.config.CHANNEL_CONFIG is not a ChannelCommon model")
        models[kind] = model
    return models


def create_channel(
    kind: str, alias: str, config: ChannelCommon, context: ChannelContext
) -> Channel:
    """Import the adapter module for ``kind`` and build the channel."""
    # Imported here, not with the module: bot.config loads this module for the table alone.
    from bot.envelope import ChannelRef

    package = CHANNEL_PACKAGES.get(kind)
    if package is None:
        raise ConfigError(f"channels.{kind}: unknown channel kind; known: {known_kinds()}")
    module = importlib.import_module(f"{package}.adapter")
    factory = cast(ChannelFactory, module.create)
    return factory(ChannelRef(kind=kind, alias=alias), config, context)
