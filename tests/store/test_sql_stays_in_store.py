"""SQL is written in ``bot/store`` only (docs/architecture.md, Storage): every other module asks
a repository (``store.inbox``, ``store.forget``, …) for what it needs. This reads the source of
``bot`` and ``channels`` and fails on a string outside ``bot/store`` that reads as a statement."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "bot" / "store"

STATEMENT = re.compile(
    r"\bSELECT\b.*\bFROM\b|\bINSERT\s+(OR\s+\w+\s+)?INTO\b|\bUPDATE\s+\w+\s+SET\b"
    r"|\bDELETE\s+FROM\b|\b(CREATE|DROP|ALTER)\s+(TABLE|INDEX|TRIGGER|VIEW)\b|\bPRAGMA\s+\w+",
    re.DOTALL,
)


def statements_in(source: str) -> list[tuple[int, str]]:
    """The string literals of ``source`` (f-strings' literal parts joined) that read as SQL;
    docstrings (a string standing alone as a statement) may name a statement."""
    tree = ast.parse(source)
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    found = []
    for node in ast.walk(tree):
        if id(node) in prose:
            continue
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
                for v in node.values
            )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if STATEMENT.search(text):
            found.append((node.lineno, text.strip().splitlines()[0][:80]))
    return found


def test_the_check_sees_a_statement() -> None:
    assert statements_in('rows = await db.fetchall("SELECT DISTINCT channel FROM inbox")')
    assert statements_in('sql = f"DELETE FROM {table} WHERE id = ?"')
    assert statements_in('run("UPDATE inbox SET status = ?")')
    assert not statements_in('help = "delete what one person left; select a channel"')
    assert not statements_in('"""Runs ``PRAGMA integrity_check`` through the store."""')


def test_no_sql_outside_the_store() -> None:
    outside = [
        f"{path.relative_to(ROOT)}:{line}: {text}"
        for package in ("bot", "channels")
        for path in sorted((ROOT / package).rglob("*.py"))
        if STORE not in path.parents
        for line, text in statements_in(path.read_text(encoding="utf-8"))
    ]
    assert outside == []
