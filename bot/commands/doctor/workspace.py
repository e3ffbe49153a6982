"""The workspace check: the tools' workspace directory exists (it is created if missing) and
accepts a new file.

The probe is a temporary file that is removed at once; a failure names the OS error and the
key that chooses the directory (``tools.workspace.path``, relative to ``state_dir``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bot.commands.doctor.report import Outcome


def workspace_check(path: Path) -> Outcome:
    """Whether the service user can write files in ``path``."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".doctor-"):
            pass
    except OSError as exc:
        return (
            False,
            f"{path} is not writable ({exc.strerror or exc})",
            f"give the service user write access to {path}, or set tools.workspace.path (a "
            "relative path is under state_dir, which HATCHWAY_STATE_DIR overrides)",
        )
    return True, f"{path} is writable", ""
