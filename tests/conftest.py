"""Fixtures shared by every test package."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog


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
