"""What the configured provider chain is, in a few words: the chat banner and the daemon's
``daemon_ready`` event name the provider, its model, where it is reached and the tool mode.

Read from :class:`~bot.config.Settings` alone: no vendor SDK is imported and no client is
built, so describing the chain costs nothing at start-up and works before (or without) a
provider being reachable.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bot.config import ProviderConfig, Settings
from bot.providers.endpoint import DEFAULT_ENDPOINTS, shown_url
from bot.providers.factory import resolve_tool_mode

#: Kinds whose model runs inside the hatchway process (no endpoint to reach).
IN_PROCESS_KINDS = frozenset({"embedded"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderSummary:
    """One provider of the chain as people are shown it. ``endpoint`` is a URL without
    credentials, or ``in-process <model file>`` for a model hatchway runs itself;
    ``tool_mode`` is ``native``, ``text`` or ``off``."""

    name: str
    kind: str
    model: str
    endpoint: str
    tool_mode: str

    @property
    def in_process(self) -> bool:
        return self.kind in IN_PROCESS_KINDS

    def text(self) -> str:
        """``default: openai gpt-4o-mini at http://127.0.0.1:11434/v1, tools native``."""
        where = self.endpoint if self.in_process else f"at {self.endpoint}"
        model = self.model or "(no model)"
        return f"{self.name}: {self.kind} {model} {where}, tools {self.tool_mode}"


def summarise(name: str, config: ProviderConfig) -> ProviderSummary:
    """One configured provider, described."""
    return ProviderSummary(
        name=name,
        kind=config.kind,
        model=config.model,
        endpoint=_endpoint(config),
        tool_mode=resolve_tool_mode(config),
    )


def describe_chain(settings: Settings) -> tuple[ProviderSummary, ...]:
    """``agent.provider`` then each of ``agent.fallback``, as configured (a name with no
    ``[providers]`` table is left out; building the provider reports it)."""
    names = dict.fromkeys([settings.agent.provider, *settings.agent.fallback])
    return tuple(summarise(n, settings.providers[n]) for n in names if n in settings.providers)


def _endpoint(config: ProviderConfig) -> str:
    if config.kind in IN_PROCESS_KINDS:
        # the file's name is what tells models apart; its folder is an install detail
        model_file = Path(config.model_path).name if config.model_path else "(no model file)"
        return f"in-process {model_file}"
    if config.base_url:
        return shown_url(config.base_url) or "(base_url is not a URL)"
    return DEFAULT_ENDPOINTS.get(config.kind, "(default endpoint)")
