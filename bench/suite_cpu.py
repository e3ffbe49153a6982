"""A pytest plugin for ``bench/suite.py``: each test's wall time and CPU, to tell the tests
that work from those that wait.

Per test (its setup, call and teardown): the wall time, the CPU time of the worker process
(``time.process_time``: every thread of it) and of its children reaped meanwhile
(``RUSAGE_CHILDREN``: a daemon or ``hatchway chat`` subprocess the test waited for; servers
it left running, and grandchildren nobody reaped, are not counted), and the load average
when it ended. Each worker writes ``<worker>.tsv`` into ``$SUITE_CPU_DIR`` (default
``/tmp``) at the end of its session::

    python bench/suite.py -- -p bench.suite_cpu --durations=60
    sort -t$'\\t' -k2 -nr /tmp/gw*.tsv | head    # the longest walls, with their CPU

A test whose wall is many times its CPU (more than the load average explains) waits: on a
subprocess, a timeout, a fixed sleep.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

_rows: list[tuple[str, float, float, float, float]] = []


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    wall, cpu, children = time.monotonic(), time.process_time(), _children_cpu()
    yield
    _rows.append(
        (
            item.nodeid,
            time.monotonic() - wall,
            time.process_time() - cpu,
            _children_cpu() - children,
            os.getloadavg()[0],
        )
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    folder = Path(os.environ.get("SUITE_CPU_DIR", "/tmp"))
    with (folder / f"{worker}.tsv").open("w", encoding="utf-8") as out:
        for nodeid, wall, cpu, children, load in _rows:
            out.write(f"{nodeid}\t{wall:.3f}\t{cpu:.3f}\t{children:.3f}\t{load:.2f}\n")
