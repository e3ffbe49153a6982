"""``[channels]``: :data:`ChannelsConfig`, one ``alias → model`` section per channel kind.

The kinds and their models are not written here: they come from :mod:`bot.channel_registry`
(each platform's ``channels/<kind>/config.py``), and the model is built from them once, when
this module is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import GenericAlias
from typing import TYPE_CHECKING, Any, Self

from pydantic import Field, create_model, model_validator

from bot.channel_config import ChannelCommon
from bot.channel_registry import config_models
from bot.config_model import ConfigModel, renamed_tables

_CHANNEL_MODELS = config_models()


class _ChannelSections(ConfigModel):
    """``[channels.<kind>.<alias>]`` tables. Its fields, one ``alias → model`` section per
    kind, are made from :mod:`bot.channel_registry` (see :data:`ChannelsConfig`)."""

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: object) -> object:
        if not isinstance(data, Mapping):
            return data
        return {
            kind: renamed_tables(
                section, _CHANNEL_MODELS.get(kind, ConfigModel), f"channels.{kind}"
            )
            for kind, section in data.items()
        }

    def all(self) -> list[tuple[str, str, ChannelCommon]]:
        """Every configured channel as ``(kind, alias, config)``, kinds in registry order."""
        out: list[tuple[str, str, ChannelCommon]] = []
        for kind in type(self).model_fields:
            section: Mapping[str, ChannelCommon] = getattr(self, kind)
            out.extend((kind, alias, cfg) for alias, cfg in section.items())
        return out

    def get(self, kind: str, alias: str) -> ChannelCommon | None:
        section: Mapping[str, ChannelCommon] = getattr(self, kind, {})
        return section.get(alias)

    @classmethod
    def embedded_console(cls) -> Self:
        """Only ``console.main`` with the console's defaults: the channel ``hatchway run``
        and ``hatchway chat`` use when no other is configured."""
        return cls.model_validate({"console": {"main": {}}})


def _channels_model() -> type[_ChannelSections]:
    sections: dict[str, Any] = {
        kind: (GenericAlias(dict, (str, model)), Field(default={}))
        for kind, model in _CHANNEL_MODELS.items()
    }
    return create_model(
        "ChannelsConfig",
        __base__=_ChannelSections,
        __module__=__name__,
        __doc__=_ChannelSections.__doc__,
        **sections,
    )


if TYPE_CHECKING:
    ChannelsConfig = _ChannelSections
else:
    #: ``[channels]``: a pydantic model with one field per registered kind, built once here so
    #: that the list of kinds is written only in :data:`bot.channel_registry.CHANNEL_PACKAGES`;
    #: validation errors name the key as ``channels.<kind>.<alias>.<key>``.
    ChannelsConfig = _channels_model()
