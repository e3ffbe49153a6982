"""The workspace check: the tools' workspace directory accepts a new file, or, before the
first start, can be made (its nearest existing parent is writable: the daemon makes it).

The doctor changes nothing: a missing folder is not created, and the probe of an existing
one is a temporary file removed at once. A failure names the OS error and the key that
chooses the directory (``tools.workspace.path``, relative to ``state_dir``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bot.commands.doctor.report import Outcome


def workspace_check(path: Path) -> Outcome:
    """Whether the service user can write files in ``path``, or make it."""
    if not path.exists():
        parent = path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if parent.is_dir() and os.access(parent, os.W_OK | os.X_OK):
            return (
                True,
                f"{path} does not exist yet; the daemon makes it ({parent} is writable)",
                "",
            )
        return (
            False,
            f"{path} does not exist and {parent} is not writable",
            f"create {path} writable by the service user, or set tools.workspace.path (a "
            "relative path is under state_dir, which HATCHWAY_STATE_DIR overrides)",
        )
    try:
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
