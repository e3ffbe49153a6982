"""The config check: the file named by ``--config`` (or the defaults) parses and validates;
and the state line: where the state folder is and which rule chose it (:mod:`bot.ops.state`).

Runs first; when it fails there are no settings to check anything else with, so the driver
stops after its line. A file that is not there, or cannot be read, is a wrong ``--config``
(or ``HATCHWAY_CONFIG``); anything else the loader refuses names its key (or TOML line) in
the detail. The settings models are imported when the check runs, not when
``hatchway --help`` builds the command line.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from bot.commands.doctor.report import CheckResult
from bot.errors import ConfigError

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.ops.state import StateLocation

CONFIG_FIX = "edit the key (or the TOML line) named above; docs/configuration.md lists every key"
FILE_FIX = "name the config file with --config (or HATCHWAY_CONFIG), readable by this user"


def config_check(
    config: str | None, state_dir: str | None = None
) -> tuple[tuple[Settings, StateLocation] | None, CheckResult]:
    """The loaded settings and where their state is (``None`` when invalid), and the config
    line of the report."""
    from bot.config import resolve_config_path
    from bot.ops.state import locate

    path = resolve_config_path(config)
    source = str(path) if path is not None else "the environment (no config file)"
    fix = CONFIG_FIX
    try:
        if path is not None and not (path.is_file() and os.access(path, os.R_OK)):
            fix = FILE_FIX
        loaded = locate(path, state_dir)
    except ConfigError as exc:
        return None, CheckResult(name="config", ok=False, detail=str(exc), fix=fix)
    except OSError as exc:  # e.g. a directory on the way that this user may not enter
        detail = f"config file {path} cannot be read: {exc.strerror or exc}"
        return None, CheckResult(name="config", ok=False, detail=detail, fix=FILE_FIX)
    return loaded, CheckResult(name="config", ok=True, detail=f"{source} is valid")


def state_line(location: StateLocation) -> CheckResult:
    """Where the state folder is, and why there."""
    return CheckResult(name="state", ok=True, detail=f"folder {location.describe()}")
