"""``?`` numbered ``$n`` once per statement text, quoted text and comments left alone."""

from __future__ import annotations

import pytest

from bot.store.postgres.placeholders import numbered


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 1", "SELECT 1"),
        ("SELECT * FROM t WHERE a = ? AND b = ?", "SELECT * FROM t WHERE a = $1 AND b = $2"),
        ("WHERE a = '?' AND b = ?", "WHERE a = '?' AND b = $1"),
        ("WHERE a = 'it''s ?' AND b = ?", "WHERE a = 'it''s ?' AND b = $1"),
        ('SELECT "odd?name" FROM t WHERE x = ?', 'SELECT "odd?name" FROM t WHERE x = $1'),
        ("SELECT ? -- what?\nFROM t WHERE x = ?", "SELECT $1 -- what?\nFROM t WHERE x = $2"),
        ("SELECT /* ? */ ? FROM t", "SELECT /* ? */ $1 FROM t"),
        ("x LIKE ? ESCAPE '\\' AND y = ?", "x LIKE $1 ESCAPE '\\' AND y = $2"),
        (
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        ),
        ("SELECT 'unterminated ?", "SELECT 'unterminated ?"),
    ],
)
def test_numbering(sql: str, expected: str) -> None:
    assert numbered(sql) == expected


def test_each_text_is_rewritten_once() -> None:
    sql = "SELECT * FROM inbox WHERE channel = ? AND message_id = ? -- once"
    before = numbered.cache_info()
    first = numbered(sql)
    assert numbered(sql) is first
    after = numbered.cache_info()
    assert (after.misses - before.misses, after.hits - before.hits) == (1, 1)
