"""The workspace check: the tools' workspace directory exists (it is created if missing) and
accepts a new file.

The probe is a temporary file that is removed at once; a failure names the OS error.
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
            "give the service user write access (systemd: ReadWritePaths/StateDirectory)",
        )
    return True, f"{path} is writable", ""
