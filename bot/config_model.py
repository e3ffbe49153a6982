"""The base of every configuration model, the shared reconnect keys, and renamed keys.

Every table of ``hatchway.toml`` is a :class:`ConfigModel`: unknown keys are errors (named
with their dotted path by :mod:`bot.config`), values are frozen, and schemas are built on
first validation. An empty list or table defaults to ``Field(default=[])`` (``{}``), not
``default_factory=list``: pydantic copies a mutable default for each instance all the same,
and a builtin factory costs a parse of its text signature each time a schema holding it is
built (about a quarter of ``Settings``' first validation, which every start pays). The
platform models in ``channels/<kind>/config.py`` build on it through
:class:`bot.channel_config.ChannelCommon`.

A key that was renamed keeps working for one release: the model lists it in
``renamed_keys`` (old → new), and the section that holds such tables passes each one through
:func:`renamed` with its dotted path, which moves the value to the new key and logs
``config_key_renamed`` naming both. Setting both spellings is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from bot.backoff import BackoffPolicy


class ConfigModel(BaseModel):
    """A table of the configuration file."""

    # Schemas are built on first validation: a model only ever nested in Settings is then
    # built once, inside Settings' schema, instead of once on its own as well (start-up).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    #: Keys accepted under an old name for one release (old → new); see :func:`renamed`.
    renamed_keys: ClassVar[Mapping[str, str]] = {}


class Reconnecting(ConfigModel):
    """The backoff keys of anything that reconnects (channels, MCP servers): the first
    delay, doubling with jitter up to the longest (:mod:`bot.backoff`)."""

    reconnect_initial_s: float = Field(default=1.0, gt=0)
    reconnect_max_s: float = Field(default=60.0, gt=0)

    def reconnect_backoff(self) -> BackoffPolicy:
        return BackoffPolicy(initial_s=self.reconnect_initial_s, max_s=self.reconnect_max_s)


def renamed(data: object, model: type[ConfigModel], where: str) -> object:
    """``data`` (one table, before validation) with ``model``'s old key names replaced by the
    new ones; each replacement is logged with the table's dotted path ``where``. Anything
    that is not a table is returned as it is, for validation to reject."""
    if not model.renamed_keys or not isinstance(data, Mapping):
        return data
    table = dict(data)
    for old, new in model.renamed_keys.items():
        if old not in table:
            continue
        if new in table:
            raise ValueError(f"{where}: {old} is the old name of {new}; set only {new}")
        table[new] = table.pop(old)
        # structlog is imported only here: it doubles the import time of bot.config, which
        # start-up and the CLI load before logging is needed.
        import structlog

        structlog.get_logger(__name__).warning(
            "config_key_renamed",
            old=f"{where}.{old}",
            new=f"{where}.{new}",
            hint=f"rename {old} to {new}; the old name will stop working in the next release",
        )
    return table


def renamed_tables(data: object, model: type[ConfigModel], where: str) -> object:
    """:func:`renamed` for every table of a ``name → table`` section (``where.<name>``)."""
    if not isinstance(data, Mapping):
        return data
    return {name: renamed(table, model, f"{where}.{name}") for name, table in data.items()}
