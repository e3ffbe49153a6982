"""Registry and per-turn scoping (pipeline.md §1–2)."""

from __future__ import annotations

import pytest

from bot.envelope import Capabilities
from bot.errors import RegistryError
from bot.tools.registry import MAX_SCOPES, RegistryCache, ToolRegistry, ToolScope
from bot.tools.schema import validator_for
from bot.tools.validation import resolve
from tests.tools.harness import Recorder, make_envelope, spec, text_schema


def test_executor_refuses_to_build_when_a_spec_has_no_handler() -> None:
    registry = ToolRegistry([spec("a", Recorder()), spec("remote", None), spec("b", None)])
    with pytest.raises(RegistryError, match="b, remote"):
        registry.executor()
    assert registry.definitions()[1].name == "remote"  # the model may still see it


def test_executor_of_a_scope_without_the_handlerless_spec_builds() -> None:
    registry = ToolRegistry([spec("a", Recorder()), spec("remote", None)])
    executor = registry.scoped(ToolScope(excluded=frozenset({"remote"}))).executor()
    assert executor.lookup("a") is not None
    assert executor.lookup("remote") is None and executor.is_withheld("remote")


def test_duplicate_names_and_bad_schemas_are_refused() -> None:
    with pytest.raises(RegistryError, match="twice"):
        ToolRegistry([spec("a", Recorder()), spec("a", Recorder())])
    bad = ToolRegistry([spec("bad", Recorder(), parameters={"type": "no-such-type"})])
    with pytest.raises(RegistryError, match="'bad'"):
        bad.check_schemas()
    # a turn finds it at the tool's first call (schemas are compiled then, not at build)
    with pytest.raises(RegistryError, match=r"'bad'.*invalid parameters schema"):
        resolve(bad.executor(), call_id="c1", name="bad", arguments={})


def test_excluded_and_restrict_to_narrow_the_offer() -> None:
    registry = ToolRegistry([spec(n, Recorder()) for n in ("a", "b", "c", "d")])
    scope = ToolScope.for_turn(
        envelope=make_envelope(), excluded=("b",), restrict_to=("a", "b", "c")
    )
    names = [d.name for d in registry.scoped(scope).definitions()]
    assert names == ["a", "c"]


@pytest.mark.parametrize(
    ("capabilities", "background", "hide", "offered"),
    [
        (Capabilities(), False, False, True),  # offered; the auto-deny explains itself
        (Capabilities(), False, True, False),
        (Capabilities(terminal_prompt=True), False, True, True),
        (Capabilities(approval_backchannel=True), False, True, True),
        (Capabilities(approval_backchannel=True), True, True, False),  # background
    ],
)
def test_hide_unapprovable_tools(
    capabilities: Capabilities, background: bool, hide: bool, offered: bool
) -> None:
    registry = ToolRegistry(
        [
            spec("shell", Recorder(), requires_approval=True),
            spec("send", Recorder(), requires_approval=True, approval_check=lambda a, c: False),
            spec("clock", Recorder()),
        ]
    )
    envelope = make_envelope(capabilities=capabilities, background=background)
    scope = ToolScope.for_turn(envelope=envelope, hide_unapprovable_tools=hide)
    names = {d.name for d in registry.scoped(scope).definitions()}
    assert ("shell" in names) is offered
    assert {"send", "clock"} <= names  # per-call approval and safe tools always stay


def test_validators_are_compiled_once_per_schema() -> None:
    schema = text_schema("q")
    assert validator_for(schema) is validator_for(schema)
    first = ToolRegistry([spec("a", Recorder(), parameters=schema)])
    second = ToolRegistry([spec("a", Recorder(), parameters=schema)])
    assert first.executor().lookup("a").validator is second.executor().lookup("a").validator  # type: ignore[union-attr]


def test_a_scope_is_built_once_per_registry() -> None:
    """Every turn asks for its scope and its executor: the same scope gets the same ones,
    while the registry keeps at most MAX_SCOPES of them."""
    registry = ToolRegistry([spec(n, Recorder()) for n in ("a", "b")])
    scope = ToolScope.for_turn(envelope=make_envelope(), excluded=("b",))
    again = ToolScope.for_turn(envelope=make_envelope(), excluded=("b",))
    assert registry.scoped(scope) is registry.scoped(again)
    assert registry.scoped(scope).executor() is registry.scoped(again).executor()
    many = [ToolScope(excluded=frozenset({f"x{n}"})) for n in range(MAX_SCOPES + 1)]
    assert all([d.name for d in registry.scoped(s).definitions()] == ["a", "b"] for s in many)
    assert registry.scoped(many[-1]) is not registry.scoped(many[-1])  # past the bound


def test_the_assembled_registry_is_built_again_only_for_other_specs() -> None:
    a, b = spec("a", Recorder()), spec("b", Recorder())
    cache = RegistryCache()
    first = cache.registry([a, b])
    assert cache.registry([a, b]) is first
    relisted = spec("b", Recorder())  # a server listed its tool again, changed
    assert [d.name for d in cache.registry([a, relisted]).definitions()] == ["a", "b"]
    assert cache.registry([a, relisted]) is not first
    assert [d.name for d in cache.registry([a]).definitions()] == ["a"]
