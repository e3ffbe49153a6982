"""docs/architecture.md's error tree ("Errors") is the one the source defines: every subclass
of ``HatchwayError`` in ``bot`` and ``channels`` drawn under its own base, every other
exception class named in the paragraph after it, nothing drawn that the source lacks.

The source is read, not imported: a class counts wherever it is defined, whether or not its
module loads without an optional extra."""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
ROOT_ERROR = "HatchwayError"
BUILTIN_ERRORS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def exception_classes(sources: dict[str, str]) -> dict[str, str]:
    """Every exception class the sources define, by name, with the name of its base (the
    first base that is an exception). A base is looked up in the class's own module first."""
    defined: dict[tuple[str, str], list[str]] = {}
    for path, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
                defined[(path, node.name)] = bases
    found: dict[tuple[str, str], str] = {}
    changed = True
    while changed:
        changed = False
        for (path, name), bases in defined.items():
            if (path, name) in found:
                continue
            for base in bases:
                here = (path, base) in defined
                known = (path, base) in found if here else any(n == base for _p, n in found)
                if known or (not here and base in BUILTIN_ERRORS):
                    found[(path, name)] = base
                    changed = True
                    break
    names = [name for _path, name in found]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    assert duplicated == [], f"exception classes named alike: {duplicated}"
    return {name: base for (_path, name), base in found.items()}


def under(classes: dict[str, str], root: str) -> dict[str, str]:
    """The classes whose chain of bases reaches ``root``, with their base."""
    kept: dict[str, str] = {}
    for name in classes:
        chain, at = [name], name
        while at in classes and at != root:
            at = classes[at]
            chain.append(at)
        if at == root and name != root:
            kept[name] = classes[name]
    return kept


def drawn(text: str) -> tuple[dict[str, str], set[str]]:
    """The tree drawn in the "Errors" section (each class with its parent) and the names
    in backticks of the paragraph that begins "Outside the tree"."""
    section = text.split("\n## Errors\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```\n", 2)[1]
    parents: dict[str, str] = {}
    stack: list[str] = []
    for line in block.splitlines():
        match = re.match(r"^([│├└─ ]*)(\w+)", line)
        assert match, line
        depth = len(match.group(1)) // 4
        del stack[depth:]
        if stack:
            parents[match.group(2)] = stack[-1]
        stack.append(match.group(2))
    outside = section.split("Outside the tree", 1)[1].split("\n\n", 1)[0]
    named = {n for n in re.findall(r"`([A-Za-z_]\w*)`", outside)}
    return parents, named


def _sources() -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for package in ("bot", "channels")
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def test_the_drawing_is_the_source_tree() -> None:
    classes = exception_classes(_sources())
    tree = under(classes, ROOT_ERROR)
    parents, _outside = drawn(ARCHITECTURE.read_text(encoding="utf-8"))
    assert sorted(set(tree) - set(parents)) == [], "defined, not drawn"
    assert sorted(set(parents) - set(tree)) == [], "drawn, not defined"
    assert parents == tree


def test_every_other_exception_class_is_named() -> None:
    classes = exception_classes(_sources())
    others = set(classes) - set(under(classes, ROOT_ERROR)) - {ROOT_ERROR}
    _parents, outside = drawn(ARCHITECTURE.read_text(encoding="utf-8"))
    assert sorted(others - outside) == [], "defined, not named"
    assert sorted(outside - others) == [], "named, not defined"


def test_the_reading_sees_a_class_and_its_base() -> None:
    sources = {
        "a.py": "class Base(Exception): ...\nclass Plain: ...\n",
        "b.py": "from a import Base\nclass Leaf(Base): ...\nclass Other(ValueError): ...\n",
        "c.py": "class _Refused(Plain): ...\n",
    }
    classes = exception_classes(sources)
    assert classes == {"Base": "Exception", "Leaf": "Base", "Other": "ValueError"}
    assert under(classes, "Base") == {"Leaf": "Base"}
    text = (
        "\n## Errors\n\n```\nRoot\n├── A  x\n│   └── B  y\n└── C\n```\n\nOutside the tree: `D`.\n"
    )
    assert drawn(text) == ({"A": "Root", "B": "A", "C": "Root"}, {"D"})
