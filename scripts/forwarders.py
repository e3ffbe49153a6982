"""Count one-line forwarders: methods whose only statement calls ``self.<attribute>.<method>(…)``.

A forwarder restates another object's method on its owner (``return await
self._files.send_file(...)``); a channel exposes an optional surface as an attribute instead
(``channel.files``, docs/architecture.md "Channels"). A method counts when, after its
docstring, its body is one statement, an expression or a ``return``, that is a call (awaited
or not) of a method of an attribute of ``self``, whatever its arguments.
``tests/docs/test_forwarders.py`` keeps the count in ``channels/`` at most
:data:`CHANNELS_LIMIT`.

Usage, from the checkout:

    python scripts/forwarders.py            # the count in channels/ and in the whole tree
    python scripts/forwarders.py --list     # and every forwarder, one line each
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The most forwarders ``channels/`` may hold (issue 38 §2: at most 20); lower it as more go,
#: never raise it.
CHANNELS_LIMIT = 20

#: The folders of the tree that are counted (the checkout's own code, no virtualenvs).
TREE = ("bot", "channels", "tests", "bench", "scripts")


@dataclass(frozen=True, slots=True, kw_only=True)
class Forwarder:
    path: str
    line: int
    owner: str
    method: str
    target: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.owner}.{self.method} → self.{self.target}"


def forwarded_call(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """``attribute.method`` when ``function`` is a forwarder (the module doc), else None."""
    body = function.body
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Expr | ast.Return):
        return None
    value = body[0].value
    if isinstance(value, ast.Await):
        value = value.value
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return None
    holder = value.func.value
    if (
        isinstance(holder, ast.Attribute)
        and isinstance(holder.value, ast.Name)
        and holder.value.id == "self"
    ):
        return f"{holder.attr}.{value.func.attr}"
    return None


def forwarders(source: str, path: str) -> Iterator[Forwarder]:
    """The forwarders among the methods of the classes defined in ``source``."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        for member in node.body:
            if not isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            target = forwarded_call(member)
            if target is not None:
                yield Forwarder(
                    path=path,
                    line=member.lineno,
                    owner=node.name,
                    method=member.name,
                    target=target,
                )


def found_under(folder: Path) -> list[Forwarder]:
    """Every forwarder in the Python files under ``folder``, by path and line."""
    found: list[Forwarder] = []
    for file in sorted(folder.rglob("*.py")):
        found.extend(forwarders(file.read_text(encoding="utf-8"), str(file.relative_to(ROOT))))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print every forwarder")
    arguments = parser.parse_args()
    tree = [f for folder in TREE if (ROOT / folder).is_dir() for f in found_under(ROOT / folder)]
    if arguments.list:
        for forwarder in tree:
            print(forwarder)
    for folder in TREE:
        count = sum(1 for f in tree if f.path.startswith(f"{folder}/"))
        limit = f" (at most {CHANNELS_LIMIT})" if folder == "channels" else ""
        print(f"{folder}/: {count}{limit}")
    print(f"whole tree: {len(tree)}")


if __name__ == "__main__":
    main()
