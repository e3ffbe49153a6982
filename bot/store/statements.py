"""Statements as values: what the repositories hand to the engine.

A repository module (``inbox.py``, ``history.py``, …) writes its SQL once, in the subset
SQLite and PostgreSQL share (``?`` placeholders, ``ON CONFLICT``, ``RETURNING``; see the
Storage section of ``docs/architecture.md``), and wraps it in a :class:`Write` or a
:class:`Read`. The engine (a :class:`bot.store.engine.Database`: SQLite's or PostgreSQL's)
decides how those travel: a :class:`~bot.store.unit_of_work.UnitOfWork` of several writes,
and a read after them, commit in one transaction and, on SQLite, in one trip to its thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")

Params = Sequence[Any]
"""The values of a statement's ``?`` placeholders, in order."""


class Row(Protocol):
    """One result row, read by column name (``row["id"]``) or position; what both
    ``sqlite3.Row`` and a PostgreSQL driver's record offer."""

    def __getitem__(self, key: str | int, /) -> Any: ...


@dataclass(frozen=True, slots=True)
class Write:
    """One statement run once per parameter row (``executemany``); it returns nothing."""

    sql: str
    rows: Sequence[Params]


@dataclass(frozen=True, slots=True)
class Read(Generic[T]):
    """One query and how its rows become a value (decoded on the caller's side)."""

    sql: str
    params: Params
    decode: Callable[[list[Row]], T]


def starts_with(column: str) -> str:
    """SQL that holds where ``column`` begins with a prefix, meaning the same on both
    engines; its two placeholders take :func:`prefix_params`. Not ``LIKE``: SQLite's ignores
    ASCII case where PostgreSQL's does not, and ``%`` or ``_`` in the prefix are wildcards
    unless escaped."""
    return f"substr({column}, 1, ?) = ?"


def prefix_params(prefix: str) -> tuple[int, str]:
    """The values of :func:`starts_with`'s placeholders for ``prefix`` (its length counts
    characters, as ``substr`` does on both engines)."""
    return (len(prefix), prefix)
