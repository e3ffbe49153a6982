"""No import cycle hides behind ``TYPE_CHECKING`` but the one shape docs/architecture.md
allows (Layers, "Type-level cycles"): a module that names, for its types only, a sibling of
its package that imports it at runtime. import-linter's contracts leave type-only imports
out; this reads the source of ``bot`` and ``channels`` with them in."""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"

#: (module, the sibling it names for types only, which imports it at runtime)
ALLOWED = {
    ("bot.store.sqlite.transaction", "bot.store.sqlite.database"),
    ("bot.store.postgres.transaction", "bot.store.postgres.database"),
    ("bot.telemetry.spans", "bot.telemetry.live"),
}

Edge = tuple[str, str, bool]


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(sources: dict[str, tuple[str, bool]]) -> list[Edge]:
    """Every import between the modules of ``sources`` (name: (source, is a package)), with
    whether it is made for types only (inside ``if TYPE_CHECKING:``)."""
    known = set(sources)
    edges: list[Edge] = []

    def target(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    for module, (source, package) in sources.items():
        base = module if package else module.rpartition(".")[0]
        typed: set[int] = set()
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and _type_checking(node.test):
                typed |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                start = base
                for _ in range(max(node.level - 1, 0)):
                    start = start.rpartition(".")[0]
                prefix = node.module or ""
                if node.level:
                    prefix = f"{start}.{prefix}".strip(".")
                names = [f"{prefix}.{alias.name}" for alias in node.names]
            for name in names:
                found = target(name)
                if found is not None and found != module:
                    edges.append((module, found, id(node) in typed))
    return edges


def type_level_cycles(edges: list[Edge]) -> set[tuple[str, str]]:
    """The type-only imports ``a -> b`` where ``b`` leads back to ``a`` (by any import)."""
    graph: dict[str, set[str]] = {}
    for importer, imported, _typed in edges:
        graph.setdefault(importer, set()).add(imported)
    cycles = set()
    for importer, imported, typed in edges:
        if not typed:
            continue
        seen, todo = {imported}, deque([imported])
        while todo:
            at = todo.popleft()
            if at == importer:
                cycles.add((importer, imported))
                break
            for nxt in graph.get(at, ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
    return cycles


def _sources() -> dict[str, tuple[str, bool]]:
    return {
        _module_name(path, ROOT): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
        for package in ("bot", "channels")
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def test_only_the_allowed_type_level_cycles() -> None:
    assert type_level_cycles(imports(_sources())) == ALLOWED


def test_the_allowed_ones_are_documented() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    for module, sibling in ALLOWED:
        for name in (module, sibling):
            assert f"`{name.replace('.', '/')}.py`" in text, name


def test_the_reading_finds_a_cycle_behind_type_checking() -> None:
    sources = {
        "p": ("", True),
        "p.a": ("import typing\nif typing.TYPE_CHECKING:\n    from p.b import B\n", False),
        "p.b": ("from p.c import helper\n", False),
        "p.c": ("def helper():\n    from .a import A\n", False),
        "p.d": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import p.a\n", False),
    }
    edges = imports(sources)
    assert ("p.a", "p.b", True) in edges and ("p.c", "p.a", False) in edges
    assert type_level_cycles(edges) == {("p.a", "p.b")}
