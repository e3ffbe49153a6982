"""Finding a tool's files in a workspace whatever ``tools.workspace.scope`` is: a file the
model wrote as ``out.txt`` lives in its conversation's folder under the root by default."""

from __future__ import annotations

from pathlib import Path


def files_named(root: Path, name: str) -> list[Path]:
    """Every file called ``name`` anywhere under the workspace ``root``, sorted."""
    return sorted(path for path in root.rglob(name) if path.is_file())
