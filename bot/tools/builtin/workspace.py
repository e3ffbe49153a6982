"""Workspace confinement: every path a file tool touches resolves inside one directory.

A path is resolved (``..`` collapsed, every symlink followed) and must stay inside the resolved
workspace root; otherwise the call is refused. Sensitive files (environment files, keys,
credentials) are refused too unless ``tools.workspace.allow_sensitive_files`` is set; the check
looks at both the path as given and the file it resolves to, so a harmless-looking symlink to
``.env`` is refused as well.

The check happens before the side effect; the pipeline's canonical-path file locks stop other
calls of the same turn from swapping a symlink in between. Processes outside hatchway are not
covered by that guarantee.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bot.tools.builtin.observation import ToolRefused
from bot.tools.spec import ToolContext, ToolEnvironmentError

SENSITIVE_NAMES = (
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    ".htpasswd",
    "credentials",
    "credentials.json",
    "secrets.*",
    "*.tfstate",
)
"""File names (globs, case-insensitive) that hold secrets."""

SENSITIVE_DIRS = (".ssh", ".gnupg", ".aws", ".docker", ".kube")
"""Directories whose every file is sensitive."""

SENSITIVE_PATHS = (".git/config",)
"""Path suffixes that are sensitive (a remote URL there may carry credentials)."""


def is_sensitive(path: PurePosixPath | Path) -> bool:
    """Whether ``path`` names a file that typically holds secrets."""
    parts = [p.lower() for p in path.parts]
    if not parts:
        return False
    name = parts[-1]
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in SENSITIVE_NAMES):
        return True
    if any(part in SENSITIVE_DIRS for part in parts[:-1]):
        return True
    joined = "/".join(parts)
    return any(joined == s or joined.endswith("/" + s) for s in SENSITIVE_PATHS)


@dataclass(frozen=True, slots=True, kw_only=True)
class Workspace:
    """The directory file tools and the shell work in.

    ``root`` is used as given by the catalog; a call's ``ToolContext.workspace``, when the
    runtime sets one, takes its place for that call (see :meth:`for_call`).
    """

    root: Path
    allow_sensitive_files: bool = False

    def for_call(self, context: ToolContext) -> Workspace:
        """The workspace of one call: the context's, when the runtime chose one."""
        if context.workspace:
            return Workspace(
                root=Path(context.workspace), allow_sensitive_files=self.allow_sensitive_files
            )
        return self

    def real_root(self) -> Path:
        """The resolved root; raises :class:`ToolEnvironmentError` when it is not a
        directory (the daemon creates it at start)."""
        real = self.root.resolve()
        if not real.is_dir():
            raise ToolEnvironmentError(f"workspace directory {self.root} does not exist")
        return real

    def resolve(self, path: str) -> Path:
        """Resolve ``path`` (relative to the root, or absolute) to a real path inside the
        workspace. Raises :class:`ToolRefused` for an escape or a sensitive file."""
        root = self.real_root()
        if "\0" in path:
            raise ToolRefused("a path cannot contain NUL characters")
        given = Path(path)
        candidate = given if given.is_absolute() else root / given
        # resolve(strict=False) follows every symlink that exists, including in parents.
        real = candidate.resolve()
        if not real.is_relative_to(root):
            raise ToolRefused(f"path {path!r} is outside the workspace")
        self.check_sensitive(real, root=root, given=path)
        return real

    def check_sensitive(self, real: Path, *, root: Path, given: str = "") -> None:
        """Refuse ``real`` (inside ``root``) when it, or the path as given, is sensitive."""
        if self.allow_sensitive_files:
            return
        shown = given or str(real.relative_to(root))
        relative = PurePosixPath(real.relative_to(root).as_posix())
        if is_sensitive(relative) or (given and is_sensitive(PurePosixPath(given))):
            raise ToolRefused(
                f"{shown!r} looks like a file holding secrets; set "
                "tools.workspace.allow_sensitive_files to allow it"
            )

    def contains(self, real: Path, *, root: Path) -> bool:
        """Whether an already resolved path is inside ``root`` and not sensitive (unless
        allowed): the filter used while walking directories."""
        if not real.is_relative_to(root):
            return False
        if self.allow_sensitive_files:
            return True
        return not is_sensitive(PurePosixPath(real.relative_to(root).as_posix()))

    def display(self, real: Path, *, root: Path) -> str:
        """The path the model sees: relative to the root, POSIX separators."""
        rel = real.relative_to(root).as_posix()
        return rel if rel != "." else "."


def walk_files(
    top: Path, *, max_depth: int, stop_after: int = 20_000
) -> list[tuple[Path, int, bool]]:
    """Entries under ``top`` as ``(path, depth, is_dir)`` up to ``max_depth`` levels, sorted,
    without following symlinked directories (callers resolve and re-check each entry) and
    without ``.git`` internals. Walking stops after ``stop_after`` entries."""
    found: list[tuple[Path, int, bool]] = []
    base_depth = len(top.parts)
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        current = Path(dirpath)
        depth = len(current.parts) - base_depth
        dirnames.sort()
        if ".git" in dirnames:
            dirnames.remove(".git")
        for name in dirnames:
            found.append((current / name, depth + 1, True))
        found.extend((current / name, depth + 1, False) for name in sorted(filenames))
        if depth + 1 >= max_depth or len(found) >= stop_after:
            dirnames.clear()
    found.sort(key=lambda entry: entry[0].as_posix())
    return found
