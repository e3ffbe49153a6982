"""Where the state is: one answer, and where it came from, for every command.

The state folder holds the SQLite database (``storage.path``, when relative), the tools'
workspace and attachments. It is, the first that applies:

1. ``--state-dir DIR`` on the command line;
2. ``HATCHWAY_STATE_DIR`` in the environment (the systemd unit sets it);
3. ``state_dir`` in the config file;
4. by default, the config file's folder, or the working directory when there is no file.

:func:`locate` loads the settings with that folder in ``state_dir`` and says which rule gave
it (:class:`StateLocation`), so that a command which finds no database can say where it
looked and why there (``docs/operations.md``, "Where the state is"). With ``[storage] url``
the database is PostgreSQL, the same from every host with the URL; the folder still holds
the workspace and attachments.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.config import Settings

STATE_DIR_ENV = "HATCHWAY_STATE_DIR"


class StateSource(StrEnum):
    """Which rule gave the state folder."""

    COMMAND_LINE = "--state-dir"
    ENVIRONMENT = STATE_DIR_ENV
    CONFIG = "state_dir"
    CONFIG_FOLDER = "config folder"
    WORKING_DIRECTORY = "working directory"


@dataclass(frozen=True, slots=True, kw_only=True)
class StateLocation:
    """The state folder (absolute), the rule that chose it, and the config file read."""

    folder: Path
    source: StateSource
    config_file: Path | None

    def origin(self) -> str:
        """Where the folder came from, in words: ``HATCHWAY_STATE_DIR``, ``state_dir in
        /etc/hatchway/hatchway.toml``, ``the default: the folder of …``."""
        match self.source:
            case StateSource.COMMAND_LINE | StateSource.ENVIRONMENT:
                return str(self.source)
            case StateSource.CONFIG:
                return f"state_dir in {self.config_file}"
            case StateSource.CONFIG_FOLDER:
                return f"the default: the folder of {self.config_file}"
        return "the default: the working directory (no config file)"

    def describe(self) -> str:
        """``/var/lib/hatchway (from HATCHWAY_STATE_DIR)``."""
        return f"{self.folder} (from {self.origin()})"

    def database(self, settings: Settings) -> str:
        """The database the settings name, and why there."""
        url = settings.storage.url
        if url:
            from bot.store.postgres import describe

            return f"PostgreSQL {describe(url)} (storage.url in {self.config_file})"
        return self.file(settings)

    def file(self, settings: Settings) -> str:
        """The SQLite file ``storage.path`` names, and why there."""
        path = Path(settings.storage.path)
        if path.is_absolute():
            return f"{path} (storage.path in {self.config_file or 'the environment'})"
        return f"{self.folder / path} (state folder {self.folder}, from {self.origin()})"


def locate(
    config_file: Path | None,
    state_dir: str | None = None,
    *,
    require_provider: bool = True,
    environ: Mapping[str, str] | None = None,
) -> tuple[Settings, StateLocation]:
    """The settings of ``config_file`` (None: defaults plus environment) with the state
    folder of the rules above (``state_dir``: ``--state-dir``), and where that folder is.
    :class:`~bot.errors.ConfigError` as :func:`~bot.config.load_settings` raises it."""
    from bot.config import load_settings

    env = dict(os.environ if environ is None else environ)
    if state_dir:
        env[STATE_DIR_ENV] = state_dir
    settings = load_settings(config_file, environ=env, require_provider=require_provider)
    if state_dir:
        source = StateSource.COMMAND_LINE
    elif env.get(STATE_DIR_ENV):
        source = StateSource.ENVIRONMENT
    elif config_file is None:
        source = StateSource.WORKING_DIRECTORY
    elif _sets_state_dir(config_file):
        source = StateSource.CONFIG
    else:
        source = StateSource.CONFIG_FOLDER
    folder = Path(settings.state_dir).absolute()
    location = StateLocation(folder=folder, source=source, config_file=config_file)
    return settings, location


def _sets_state_dir(config_file: Path) -> bool:
    """Whether the file (already read and valid) has a top-level ``state_dir``."""
    import tomllib

    return "state_dir" in tomllib.loads(config_file.read_text(encoding="utf-8"))
