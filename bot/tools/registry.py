"""The tool registry and its per-turn scoping.

A :class:`ToolRegistry` is a checked collection of :class:`ToolSpec` (unique names; each
schema is compiled, and so checked, when its tool is first called: :mod:`bot.tools.schema`).
:meth:`ToolRegistry.scoped` narrows it to what one turn may offer: minus excluded tools,
narrowed by ``restrict_to``, and without prompt-requiring tools when the conversation can
neither prompt nor backchannel and ``hide_unapprovable_tools`` is set.
:meth:`ToolRegistry.executor` refuses to build while any spec lacks a handler, so a missing
handler is found before a provider is paid, not on the first dispatch.

Both are asked at the start of every turn, so a registry keeps what they built: a registry
is immutable, and a daemon sees few distinct scopes (they come from its configuration).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bot.envelope import IngressEnvelope
from bot.errors import RegistryError
from bot.providers.base import ToolDefinition
from bot.tools.schema import ArgumentValidator, validator_for
from bot.tools.spec import ToolHandler, ToolSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolScope:
    """What one turn may offer. ``restrict_to`` of ``None`` means no narrowing."""

    excluded: frozenset[str] = frozenset()
    restrict_to: frozenset[str] | None = None
    hide_prompting: bool = False

    @classmethod
    def for_turn(
        cls,
        *,
        envelope: IngressEnvelope,
        excluded: Iterable[str] = (),
        restrict_to: Iterable[str] | None = None,
        hide_unapprovable_tools: bool = False,
    ) -> ToolScope:
        """Scope for one envelope: prompt-requiring tools are hidden only when the setting
        asks for it *and* nobody can be asked here."""
        caps = envelope.capabilities
        can_ask = (caps.terminal_prompt or caps.approval_backchannel) and not envelope.background
        return cls(
            excluded=frozenset(excluded),
            restrict_to=None if restrict_to is None else frozenset(restrict_to),
            hide_prompting=hide_unapprovable_tools and not can_ask,
        )

    def offers(self, spec: ToolSpec) -> bool:
        if spec.name in self.excluded:
            return False
        if self.restrict_to is not None and spec.name not in self.restrict_to:
            return False
        # a tool with an approval_check may not need a prompt for a given call: keep it
        return not (self.hide_prompting and spec.requires_approval and spec.approval_check is None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolEntry:
    """A runnable tool: its spec, its handler (never missing), its compiled validator."""

    spec: ToolSpec
    handler: ToolHandler
    validator: ArgumentValidator


class ToolExecutor:
    """Runnable tools of one scope, plus the names the scope withheld (so that "excluded"
    and "unknown" are told apart)."""

    __slots__ = ("_entries", "_withheld")

    def __init__(self, entries: Mapping[str, ToolEntry], withheld: frozenset[str]) -> None:
        self._entries = dict(entries)
        self._withheld = withheld

    def lookup(self, name: str) -> ToolEntry | None:
        return self._entries.get(name)

    def is_withheld(self, name: str) -> bool:
        return name in self._withheld

    def __len__(self) -> int:
        return len(self._entries)


MAX_SCOPES = 64  # scoped registries kept per registry; more are built anew


class ToolRegistry:
    """An immutable, checked collection of tool specs."""

    __slots__ = ("_definitions", "_executor", "_scoped", "_specs", "_validators", "_withheld")

    def __init__(self, specs: Iterable[ToolSpec], *, _withheld: frozenset[str] = frozenset()):
        self._specs: dict[str, ToolSpec] = {}
        self._validators: dict[str, ArgumentValidator] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise RegistryError(f"tool {spec.name!r} is registered twice")
            self._validators[spec.name] = validator_for(spec.parameters)
            self._specs[spec.name] = spec
        self._withheld = _withheld
        self._definitions = tuple(
            ToolDefinition(name=s.name, description=s.description, parameters=s.parameters)
            for s in self._specs.values()
        )
        self._scoped: dict[ToolScope, ToolRegistry] = {}
        self._executor: ToolExecutor | None = None

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(self._specs.values())

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __len__(self) -> int:
        return len(self._specs)

    def scoped(self, scope: ToolScope) -> ToolRegistry:
        """The tools ``scope`` offers; the rest are remembered as withheld."""
        scoped = self._scoped.get(scope)
        if scoped is None:
            kept: list[ToolSpec] = []
            withheld = set(self._withheld)
            for spec in self._specs.values():
                if scope.offers(spec):
                    kept.append(spec)
                else:
                    withheld.add(spec.name)
            scoped = ToolRegistry(kept, _withheld=frozenset(withheld))
            if len(self._scoped) < MAX_SCOPES:
                self._scoped[scope] = scoped
        return scoped

    def check_schemas(self) -> None:
        """Compile every spec's validator now; raises :class:`RegistryError` naming the first
        tool whose schema is not valid JSON Schema (a turn finds it at that tool's first
        call)."""
        for name, validator in self._validators.items():
            try:
                validator.check()
            except RegistryError as exc:
                raise RegistryError(f"tool {name!r}: {exc}") from None

    def definitions(self) -> tuple[ToolDefinition, ...]:
        """What the model is told, in registration order."""
        return self._definitions

    def executor(self) -> ToolExecutor:
        """Runnable entries for every spec. Raises :class:`RegistryError` naming every spec
        that has no handler."""
        if self._executor is None:
            missing = sorted(n for n, s in self._specs.items() if s.handler is None)
            if missing:
                raise RegistryError(f"tools without a handler: {', '.join(missing)}")
            entries = {
                name: ToolEntry(spec=spec, handler=spec.handler, validator=self._validators[name])
                for name, spec in self._specs.items()
                if spec.handler is not None
            }
            self._executor = ToolExecutor(entries, self._withheld)
        return self._executor


class RegistryCache:
    """The registry of the tools a turn starts with (the static ones, then those a dynamic
    source has at the moment), built again only when they are other spec objects than last
    time: static specs never change, and an MCP server's are replaced only when it lists
    changed tools. Its scopes and executors are kept with it (:meth:`ToolRegistry.scoped`)."""

    __slots__ = ("_registry", "_specs")

    def __init__(self) -> None:
        self._specs: tuple[ToolSpec, ...] = ()
        self._registry: ToolRegistry | None = None

    def registry(self, specs: Sequence[ToolSpec]) -> ToolRegistry:
        """The registry of ``specs``; raises :class:`RegistryError` as the constructor does."""
        same = len(specs) == len(self._specs) and all(map(operator.is_, specs, self._specs))
        if self._registry is None or not same:
            self._registry = ToolRegistry(specs)
            self._specs = tuple(specs)
        return self._registry
