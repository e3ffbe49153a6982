"""Fixtures shared by every test package."""

from __future__ import annotations

import gc
import logging
import sys
from collections.abc import Generator, Iterator

import pytest
import structlog
from hypothesis import HealthCheck, settings

from tests import sqlite_template as template
from tests.pg import pg_empty_url, pg_server, pg_store, pg_template, pg_url  # noqa: F401
from tests.sqlite_template import migrated_sqlite, sqlite_template  # noqa: F401

# Property tests judge what the code does, not how fast this machine is: under load (two suites
# at once on two cores) an example can take longer than hypothesis' 200 ms deadline, and
# generating them can trip its too_slow health check. The other health checks stay on.
settings.register_profile("hatchway", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("hatchway")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{template.MARKER}: opens new SQLite files by migrating them, not as copies of the "
        "session's migrated template (tests/sqlite_template.py); for tests about migrating",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    template.fresh_only = item.get_closest_marker(template.MARKER) is not None


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """Collecting imports every test module, with all of ``bot`` and its libraries: about
    half a million objects that live for the whole session. The cyclic collector is off
    while they are built (its full passes over a growing heap cost each worker seconds of
    CPU), then one pass frees collection's garbage and ``gc.freeze()`` keeps what is left
    out of every later pass, as ``hatchway run`` does after its start (bot/ops/daemon.py).
    What the tests allocate is collected as usual."""
    gc.disable()
    try:
        return (yield)
    finally:
        gc.collect()
        gc.freeze()
        gc.enable()


KEPT_OUT_OF_COLLECTION = ("anthropic",)
"""Libraries that cost seconds of CPU to import and that few tests use: every pytest-xdist
worker collects every test module, so a module-level import is paid by each worker; the
tests that use them import them inside (``tests/providers``, ``test_lone_surrogates.py``)."""


def pytest_collection_finish(session: pytest.Session) -> None:
    imported = [name for name in KEPT_OUT_OF_COLLECTION if name in sys.modules]
    if imported:
        raise pytest.UsageError(
            f"collecting the tests imported {', '.join(imported)}: import it inside the tests "
            "that use it (KEPT_OUT_OF_COLLECTION in tests/conftest.py)"
        )


@pytest.fixture
def kept_logging() -> Iterator[None]:
    """A command configures logging for its process; in-process, undo it afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {
        name: logger.level
        for name, logger in logging.Logger.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    structlog_config = structlog.get_config()
    yield
    structlog.configure(**structlog_config)
    root.handlers, root.level = handlers, level
    for name, logger in logging.Logger.manager.loggerDict.items():
        if isinstance(logger, logging.Logger):
            logger.setLevel(levels.get(name, logging.NOTSET))
