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

from bot.visible_text import is_invisible

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


def sent_file_name(name: str, *, limit: int = 200) -> str:
    """``name`` as a file the bot sends is shown to its recipients: no folder (``/`` and
    ``\\`` become ``_``), no leading dot, at most ``limit`` characters, and each character
    that could make it read as another name replaced by ``_``: controls and line breaks,
    bidi overrides (``report\u202efdp.exe`` would show as ``reportexe.pdf``), zero-width and
    other format characters, invisible fillers (:func:`bot.visible_text.is_invisible`, the
    definition cards use). Empty when nothing is left."""
    cleaned = "".join("_" if c in "/\\" or (c != " " and is_invisible(c)) else c for c in name)
    return cleaned.strip().lstrip(".")[:limit].strip()


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
