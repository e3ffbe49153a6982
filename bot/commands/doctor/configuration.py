"""The config check: the file named by ``--config`` (or the defaults) parses and validates.

Runs first; when it fails there are no settings to check anything else with, so the driver
stops after its line. The settings models are imported when the check runs, not when
``hatchway --help`` builds the command line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.commands.doctor.report import CheckResult
from bot.errors import ConfigError

if TYPE_CHECKING:
    from bot.config import Settings

CONFIG_FIX = "edit the key named above (docs/configuration.md lists every key)"


def config_check(config: str | None) -> tuple[Settings | None, CheckResult]:
    """The loaded settings (``None`` when invalid) and the config line of the report."""
    from bot.config import load_settings, resolve_config_path

    path = resolve_config_path(config)
    source = str(path) if path is not None else "the environment (no config file)"
    try:
        settings = load_settings(path)
    except ConfigError as exc:
        return None, CheckResult(name="config", ok=False, detail=str(exc), fix=CONFIG_FIX)
    return settings, CheckResult(name="config", ok=True, detail=f"{source} is valid")
