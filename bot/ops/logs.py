"""structlog setup: JSON lines when stderr is not a terminal, a pretty console otherwise.

``hatchway chat`` logs to a file instead (:func:`open_log_file`), so that no log line lands
in the conversation on the terminal; ``--verbose`` sends them to stderr.

Every event passes through a scrubbing processor, so a secret that slips into an event
field is masked before it is written. Standard-library logging (used by the platform SDKs)
is routed through the same chain and renderer.

Exceptions and stacks are rendered to text (``exception``, ``stack``) *before* scrubbing, in
both the structlog chain and the stdlib pre-chain: a token inside an exception message or a
frame's source line is masked like any other field, and no renderer ever sees a live
``exc_info`` it could format on its own.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import IO, Any, Literal

import structlog

from bot.private_files import private_folder
from bot.scrub import scrub_value

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


#: A log file past this size is moved aside (``<name>.1``) when it is opened again.
LOG_FILE_LIMIT_BYTES = 5_000_000


def open_log_file(path: Path) -> IO[str]:
    """Open ``path`` to append log lines to, readable by its owner only (events are scrubbed,
    but they still say who asked what). A file grown past :data:`LOG_FILE_LIMIT_BYTES` is
    renamed ``<name>.1`` first (one older file is kept). Raises ``OSError``."""
    private_folder(path.parent)
    try:
        if path.stat().st_size > LOG_FILE_LIMIT_BYTES:
            path.replace(path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.fchmod(fd, 0o600)  # a file made before (or by hand) is narrowed too
    return os.fdopen(fd, "a", encoding="utf-8", buffering=1)


_render_stack_info = structlog.processors.StackInfoRenderer(additional_ignores=[__name__])


def _render_stack(
    logger: Any, name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """``stack_info=True`` becomes a ``stack`` text field; a stdlib record's stack arrives
    already formatted (by :mod:`logging`) and is only renamed."""
    given = event_dict.get("stack_info")
    if isinstance(given, str):
        event_dict["stack"] = event_dict.pop("stack_info")
        return event_dict
    return _render_stack_info(logger, name, event_dict)


def _scrub_event(
    _logger: object, _name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    for key, value in list(event_dict.items()):
        event_dict[key] = scrub_value(value, key=key if key != "event" else "", greedy=True)
    return event_dict


def configure_logging(
    level: str = "info",
    fmt: Literal["auto", "json", "console"] = "auto",
    stream: Any = None,
) -> None:
    """Configure structlog and stdlib logging once per process."""
    out = stream if stream is not None else sys.stderr
    use_json = fmt == "json" or (fmt == "auto" and not getattr(out, "isatty", lambda: False)())
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        # render exc_info and stack_info to text first, so that scrubbing sees them
        _render_stack,
        structlog.processors.format_exc_info,
        _scrub_event,
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if use_json
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            # drop an event below the level before any processor (scrubbing walks every
            # field) spends time on it
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(_LEVELS.get(level, logging.INFO))
    # Platform SDKs are chatty at INFO; their warnings still come through.
    for noisy in (
        "httpx",
        "httpx2",
        "telegram",
        "discord",
        "slack_bolt",
        "slack_sdk",
        "aiohttp",
        "openai",
        "anthropic",
        "apscheduler",
        "mcp",
    ):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
