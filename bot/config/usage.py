"""``[pricing."<model>"]`` and ``[budgets]``: what model calls cost, and how much may be spent.

Prices are per million tokens of each kind (:class:`bot.providers.base.Usage`), in whatever
currency the table is written in: hatchway only multiplies and adds. A model is looked up
by the name its replies give; a key with ``*`` or ``?`` is a shell-style pattern
(``"claude-sonnet-4-*"``), tried after the exact names, longest first. A model with no price
counts tokens only (its rows' cost is empty, and cost budgets do not count it).

Budgets cap the tokens (all four kinds) or the cost of model calls per day or per month, in
``time_zone``: ``per_user`` and ``per_conversation`` apply to every sender and every
conversation, ``agents.<name>`` and ``channels."<kind.alias>"`` to one agent or one channel.
``budget_exempt`` lists sender ids who are never stopped; ``"approvers"`` in it stands for
the approvers of the message's channel (its ``approvers`` ids).
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from bot.config_model import ConfigModel
from bot.timezones import find_zone

#: The entry of ``budget_exempt`` that stands for the channel's approvers.
APPROVERS = "approvers"


class ModelPrice(ConfigModel):
    """One ``[pricing."<model>"]`` table: per million tokens. Cache writes and reads cost
    what input does unless set (Anthropic charges more for writes, both charge less for
    reads). A transcription model is priced per minute of audio (``audio_minute``) and
    needs no token prices."""

    input: float = Field(default=0.0, ge=0)
    output: float = Field(default=0.0, ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    audio_minute: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _some_price(self) -> ModelPrice:
        if self.audio_minute is None and not {"input", "output"} <= self.model_fields_set:
            raise ValueError(
                "a model's price needs input and output (per million tokens), or"
                " audio_minute for a transcription model"
            )
        return self


class BudgetLimits(ConfigModel):
    """The limits of one budget table; unset: no limit of that kind. A limit is spent once
    the window's usage reaches it (0 stops every call)."""

    daily_tokens: int | None = Field(default=None, ge=0)
    monthly_tokens: int | None = Field(default=None, ge=0)
    daily_cost: float | None = Field(default=None, ge=0)
    monthly_cost: float | None = Field(default=None, ge=0)

    @property
    def empty(self) -> bool:
        return (
            self.daily_tokens is None
            and self.monthly_tokens is None
            and self.daily_cost is None
            and self.monthly_cost is None
        )

    @property
    def monthly(self) -> bool:
        return self.monthly_tokens is not None or self.monthly_cost is not None


class BudgetsConfig(ConfigModel):
    """``[budgets]`` (see the module doc). ``refresh_s``: how often a daemon reads the sums
    other replicas wrote (its own calls it counts as they happen)."""

    time_zone: str = "UTC"
    budget_exempt: list[str] = Field(default=[])
    refresh_s: float = Field(default=30.0, gt=0)
    per_user: BudgetLimits = Field(default_factory=BudgetLimits)
    per_conversation: BudgetLimits = Field(default_factory=BudgetLimits)
    agents: dict[str, BudgetLimits] = Field(default={})
    channels: dict[str, BudgetLimits] = Field(default={})

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        if find_zone(value) is None:
            raise ValueError(f"{value!r} is not an IANA time zone (e.g. Europe/Berlin, UTC)")
        return value

    @model_validator(mode="after")
    def _channel_names(self) -> BudgetsConfig:
        for name in self.channels:
            kind, dot, alias = name.partition(".")
            if not (kind and dot and alias):
                raise ValueError(f'budgets.channels."{name}": name a channel as "kind.alias"')
        return self

    @property
    def any(self) -> bool:
        """Whether any budget is set."""
        tables = [self.per_user, self.per_conversation, *self.agents.values()]
        return not all(limits.empty for limits in [*tables, *self.channels.values()])
