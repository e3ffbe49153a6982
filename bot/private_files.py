"""The state folder's files and folders are its owner's alone, whatever the umask.

``mkdir(mode=0o700)`` and ``open(…, 0o600)`` only narrow what the umask leaves, and a
umask of 0 or 002 leaves a database others can read, so what hatchway creates in its state
folder is set to its mode after it is made. What already exists is left as it is (an
operator may have chosen otherwise): only what is created here is narrowed.
"""

from __future__ import annotations

import os
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def private_folder(path: Path) -> None:
    """Create ``path`` and its missing parents, each ``0700``; raises ``OSError``."""
    missing: list[Path] = []
    folder = path
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        try:
            os.mkdir(made, FOLDER_MODE)
        except FileExistsError:
            continue  # made meanwhile by someone else: theirs, left as it is
        os.chmod(made, FOLDER_MODE)


def private_file(path: Path) -> None:
    """Create ``path`` empty with mode ``0600`` unless it exists; raises ``OSError``."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
