"""Canonical-path file locks, process-wide.

Paths are resolved with ``realpath`` (relative paths against the workspace), so a symlink
and its target share one lock. Several paths are locked in sorted order, so two calls
locking the same set in different orders cannot deadlock. Unused locks are dropped.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping
from types import TracebackType


def canonical_paths(paths: Iterable[str], *, base: str | None = None) -> tuple[str, ...]:
    """Sorted, de-duplicated real paths."""
    root = base or os.getcwd()
    return tuple(sorted({os.path.realpath(os.path.join(root, p)) for p in paths if p}))


def path_arguments(names: Iterable[str], arguments: Mapping[str, object]) -> list[str]:
    """The string values (or lists of strings) of the named path arguments."""
    found: list[str] = []
    for name in names:
        value = arguments.get(name)
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            found.extend(v for v in value if isinstance(v, str))
    return found


class _Held:
    __slots__ = ("_acquired", "_locks", "_paths")

    def __init__(self, locks: PathLocks, paths: tuple[str, ...]) -> None:
        self._locks = locks
        self._paths = paths
        self._acquired: list[str] = []

    async def __aenter__(self) -> tuple[str, ...]:
        try:
            for path in self._paths:
                lock = self._locks._take(path)
                try:
                    await lock.acquire()
                except BaseException:
                    self._locks._drop(path)
                    raise
                self._acquired.append(path)
        except BaseException:
            self._release()
            raise
        return self._paths

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._release()

    def _release(self) -> None:
        for path in reversed(self._acquired):
            self._locks._locks[path][0].release()
            self._locks._drop(path)
        self._acquired.clear()


class PathLocks:
    """One lock per canonical path, shared by every turn of the process."""

    __slots__ = ("_locks",)

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def hold(self, paths: Iterable[str], *, base: str | None = None) -> _Held:
        """``async with locks.hold(paths):`` — every path's lock, taken in sorted order."""
        return _Held(self, canonical_paths(paths, base=base))

    def held(self) -> tuple[str, ...]:
        """Canonical paths whose lock exists now (taken or awaited)."""
        return tuple(sorted(self._locks))

    def _take(self, path: str) -> asyncio.Lock:
        lock, users = self._locks.get(path, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[path] = (lock, users + 1)
        return lock

    def _drop(self, path: str) -> None:
        lock, users = self._locks[path]
        if users <= 1:
            del self._locks[path]
        else:
            self._locks[path] = (lock, users - 1)
