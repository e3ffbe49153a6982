"""What ``bench/oneshot_cpu.py`` runs in the measured process: ``hatchway chat`` in this
interpreter (``bot.cli.main(["chat"])``), with three meters that only read clocks:

* every module's import, in the CPU time of the thread that imports it
  (``time.thread_time``), its own time without the modules it imports: a finder first on
  ``sys.meta_path`` wraps each found loader's ``exec_module``;
* every dataclass made, in the same clock, by the module that defines it: a wrapper around
  ``dataclasses._process_class`` (CPython's, present from 3.10 to 3.13);
* every collection of the cyclic collector (``gc.callbacks``).

Modules imported before this one (the interpreter's start, ``site``) are not counted, and
neither is a module imported while another thread holds its import lock. At exit the
figures go to ``$ONESHOT_PROBE_OUT`` as JSON, with the process's CPU time (``getrusage``).
No ``__main__`` block: a module the scripts share, not a script of its own.
"""

from __future__ import annotations

import dataclasses
import gc
import importlib.abc
import importlib.machinery
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any


class _Meters:
    def __init__(self) -> None:
        #: module → [own CPU s, thread name]
        self.imports: dict[str, tuple[float, str]] = {}
        #: defining module → [classes, CPU s]
        self.dataclasses: dict[str, list[float]] = {}
        self.gc_s = 0.0
        self.collections = 0
        self._frames = threading.local()
        self._gc_started = 0.0

    def timed_exec(
        self, name: str, exec_module: Callable[[ModuleType], None]
    ) -> Callable[[ModuleType], None]:
        def timed(module: ModuleType) -> None:
            stack: list[float] = self._frames.__dict__.setdefault("stack", [])
            stack.append(0.0)  # the CPU of the modules this one imports
            started = time.thread_time()
            try:
                exec_module(module)
            finally:
                spent = time.thread_time() - started
                children = stack.pop()
                if stack:
                    stack[-1] += spent
                self.imports[name] = (spent - children, threading.current_thread().name)

        return timed

    def on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.thread_time()
        else:
            self.gc_s += time.thread_time() - self._gc_started
            self.collections += 1


class _TimingFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: asks the finders after it and times the loader they give."""

    def __init__(self, meters: _Meters) -> None:
        self._meters = meters

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is None:
                continue
            loader: Any = spec.loader
            # a class as loader (built-in and frozen modules) serves every such module: not
            # timed, as its attribute would be the class's
            if hasattr(loader, "exec_module") and not isinstance(loader, type):
                loader.exec_module = self._meters.timed_exec(fullname, loader.exec_module)
            return spec
        return None


def run() -> None:
    """Install the meters, run ``hatchway chat`` on this process's stdin, write the figures."""
    meters = _Meters()
    sys.meta_path.insert(0, _TimingFinder(meters))
    gc.callbacks.append(meters.on_gc)
    process_class: Any = dataclasses._process_class  # type: ignore[attr-defined]

    def timed_process_class(cls: type, *args: object, **kwargs: object) -> object:
        started = time.thread_time()
        try:
            return process_class(cls, *args, **kwargs)
        finally:
            counted = meters.dataclasses.setdefault(cls.__module__, [0, 0.0])
            counted[0] += 1
            counted[1] += time.thread_time() - started

    dataclasses._process_class = timed_process_class  # type: ignore[attr-defined]
    import bot.cli

    try:
        code = bot.cli.main(["chat"])
    finally:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        figures = {
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_mb": usage.ru_maxrss / 1024,
            "imports": meters.imports,
            "dataclasses": meters.dataclasses,
            "gc_s": meters.gc_s,
            "collections": meters.collections,
        }
        with open(os.environ["ONESHOT_PROBE_OUT"], "w", encoding="utf-8") as out:
            json.dump(figures, out)
    sys.exit(code)
