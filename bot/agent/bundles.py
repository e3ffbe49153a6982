"""One :class:`~bot.agent.turn.AgentBundle` per agent (``[agent]`` and ``[agents.<name>]``).

Every agent's bundle is the shared one (store, approval gate, hooks, tool scheduler, path
locks, receipt signer, MCP catalog) with its own settings (:meth:`Settings.agent_for`: prompt,
iterations, history length, ...), its own tools (``allowed_tools``/``excluded_tools``,
:mod:`bot.agent.tool_filter`) and its own provider chain. Agents whose chains come out the same
(the same providers, temperature, max tokens and system prompt handling) share one provider:
:class:`ProviderPool` builds each distinct chain once, through the provider factory, from the
settings as that agent sees them (:meth:`Settings.as_agent`), and keeps it for later reloads.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Hashable, Sequence

from bot.agent.tool_filter import ToolFilter, filtered
from bot.agent.turn import AgentBundle
from bot.attachments.lines import ImageSight
from bot.config import DEFAULT_AGENT, Settings
from bot.errors import ConfigError
from bot.providers.base import Provider
from bot.providers.factory import defer_provider, own_system_prompt
from bot.providers.vision import takes_images
from bot.tools.builtin.attachment_viewing import IMAGE_TOOLS
from bot.tools.spec import ToolSpec

ProviderWrap = Callable[[Provider], Provider]


def chain_key(settings: Settings) -> Hashable:
    """What makes two agents' provider chains the same: each provider's configuration (with
    the agent's temperature and max tokens applied) and the system prompt it is sent in place
    of the agent's."""
    agent = settings.agent
    names = dict.fromkeys([agent.provider, *agent.fallback])
    return tuple(
        (
            name,
            settings.providers[name].model_dump_json(),
            own_system_prompt(settings.providers[name], agent),
        )
        for name in names
        if name in settings.providers
    )


def sees_images(settings: Settings) -> bool:
    """Whether the agent ``settings`` is seen as (:meth:`Settings.as_agent`) can be shown an
    image: ``[attachments]`` is on and a provider of its chain is sent images
    (:func:`bot.providers.vision.takes_images`). A chain none of whose providers is
    configured (a provider the caller built) is taken to see them."""
    if not settings.attachments.enabled:
        return False
    agent = settings.agent
    configured = [
        settings.providers[n] for n in (agent.provider, *agent.fallback) if n in settings.providers
    ]
    return not configured or any(takes_images(config) for config in configured)


def _offered(tools: list[ToolSpec], settings: Settings) -> list[ToolSpec]:
    """``tools`` without those that show images when the agent cannot see any: a tool that
    cannot work is not offered."""
    if sees_images(settings):
        return tools
    return [tool for tool in tools if tool.name not in IMAGE_TOOLS]


def image_sight(bundle: AgentBundle, excluded: Sequence[str] = ()) -> ImageSight:
    """What a turn of ``bundle``'s agent can do with an image, for the lines its attachments
    get: shown with the message when the agent sees images, and ``view_attachment`` named
    only when the turn offers it (its bundle has it, and neither the agent's
    ``excluded_tools`` nor the channel's, ``excluded``, takes it away)."""
    if bundle.registry is not None:
        names = {spec.name for spec in bundle.registry.specs}
    else:
        names = {tool.name for tool in bundle.tools}
    names -= {*bundle.services.settings.excluded_tools, *excluded}
    return ImageSight(shown=bundle.sees_images, viewer=bool(names & IMAGE_TOOLS))


class ProviderPool:
    """The provider chain of each agent, built once per distinct chain. ``given`` is the
    default agent's provider when the caller built it (the daemon's, metered; a test's
    scripted one); the pool never closes that one. ``wrap`` is applied to every chain the
    pool builds (metrics). ``[providers]`` is read once, from the start-up settings: a
    reload that changes it needs a restart, as for the default agent."""

    def __init__(
        self,
        settings: Settings,
        *,
        given: Provider | None = None,
        wrap: ProviderWrap | None = None,
    ) -> None:
        self._wrap = wrap
        self._built: dict[Hashable, Provider] = {}
        self._given = given
        self._given_key = chain_key(settings.as_agent(DEFAULT_AGENT)) if given else None
        self._providers = settings.providers

    def provider_for(self, settings: Settings, agent: str) -> Provider:
        """Agent ``agent``'s chain under ``settings``; :class:`ConfigError` for a chain
        that cannot be built (an unknown provider, a missing API key)."""
        if settings.providers is not self._providers:
            settings = settings.model_copy(update={"providers": self._providers})
        seen = settings.as_agent(agent)
        key = chain_key(seen)
        if self._given is not None and (key == self._given_key or agent == DEFAULT_AGENT):
            # the default agent always runs on the given provider (a test's, the daemon's)
            return self._given
        provider = self._built.get(key)
        if provider is None:
            try:
                provider = defer_provider(seen)
            except ConfigError as exc:
                raise ConfigError(f"agents.{agent}: {exc}") from None
            if self._wrap is not None:
                provider = self._wrap(provider)
            self._built[key] = provider
        return provider

    async def aclose(self) -> None:
        """Close every chain the pool built (each even when another fails)."""
        built, self._built = list(self._built.values()), {}
        closed = await asyncio.gather(*(p.aclose() for p in built), return_exceptions=True)
        for outcome in closed:
            if isinstance(outcome, BaseException):
                raise outcome


def build_bundles(
    settings: Settings, shared: AgentBundle, providers: ProviderPool
) -> dict[str, AgentBundle]:
    """Every agent's bundle, ``default`` first: ``shared`` (the default agent's tools,
    services and MCP catalog) with each agent's settings, tools and provider; an agent that
    cannot see images (:func:`sees_images`) is not offered ``view_attachment``."""
    bundles: dict[str, AgentBundle] = {}
    for name in settings.agent_names():
        config = settings.agent_for(name)
        tools = ToolFilter.of(config)
        kept = tools.kept(shared.tools) if tools.narrows else list(shared.tools)
        seen = settings.as_agent(name)
        bundles[name] = dataclasses.replace(
            shared,
            name=name,
            sees_images=sees_images(seen),
            provider=providers.provider_for(settings, name),
            services=dataclasses.replace(shared.services, settings=config),
            tools=_offered(kept, seen),
            dynamic=filtered(shared.dynamic, tools),
        )
    return bundles


def streams(settings: Settings, agent: str) -> bool:
    """Whether agent ``agent``'s primary provider streams its answers."""
    primary = settings.providers.get(settings.agent_for(agent).provider)
    return bool(primary and primary.stream)
