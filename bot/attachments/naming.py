"""Names and sizes of saved files, as the disk and the model see them.

A file's name comes from the user (or their platform), so it is never used as a path: only
its last component is kept, every character but ASCII letters, digits, ``.``, ``_`` and ``-``
becomes ``_``, leading dots and dashes are dropped (no hidden file, no ``..``, nothing a
command takes for an option), and the result is cut to :data:`NAME_CHARS` keeping its
extension. Every saved file is prefixed with its attachment's random id, so two files of the
same name never meet.
"""

from __future__ import annotations

import re
import secrets

NAME_CHARS = 80
ID_BYTES = 6

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def new_attachment_id() -> str:
    """A fresh attachment id: 12 hex digits, random (no id tells of another)."""
    return secrets.token_hex(ID_BYTES)


def safe_file_name(name: str, *, fallback: str = "file") -> str:
    """``name`` as a plain file name (see the module doc); ``fallback`` when nothing is
    left of it."""
    last = re.split(r"[/\\]", name)[-1]
    cleaned = _UNSAFE.sub("_", last).lstrip(".-")
    if len(cleaned) > NAME_CHARS:
        stem, dot, extension = cleaned.rpartition(".")
        if dot and 0 < len(extension) <= 10:
            cleaned = f"{stem[: NAME_CHARS - len(extension) - 1]}.{extension}"
        else:
            cleaned = cleaned[:NAME_CHARS]
    return cleaned or fallback


def saved_name(attachment_id: str, name: str) -> str:
    """The file name a saved attachment gets: ``<id>-<safe name>``."""
    return f"{attachment_id}-{safe_file_name(name)}"


def human_size(size: int) -> str:
    """``812 bytes``, ``45 KB``, ``3.2 MB``, ``20 MB`` (1 KB = 1024 bytes)."""
    if size < 1024:
        return f"{size} byte" if size == 1 else f"{size} bytes"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    megabytes = size / (1024 * 1024)
    if megabytes >= 10 or megabytes == int(megabytes):
        return f"{round(megabytes)} MB"
    return f"{megabytes:.1f} MB"
