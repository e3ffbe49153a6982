"""Workspace confinement: every path a file tool touches resolves inside one directory.

A path is resolved (``..`` collapsed, every symlink followed) and must stay inside the resolved
workspace root; otherwise the call is refused. Sensitive files (environment files, keys,
credentials) are refused too unless ``tools.workspace.allow_sensitive_files`` is set; the check
looks at both the path as given and the file it resolves to, so a harmless-looking symlink to
``.env`` is refused as well.

The directory is the call's scope folder (``tools.workspace.scope``, see
:mod:`bot.tools.builtin.scopes`): a path into a sibling conversation's folder, by ``..`` or
absolute or through a symlink, is an escape like any other. A scope folder is created on
first use, mode 0700, one level at a time, refusing a level that is a symlink.

The check happens before the side effect; the pipeline's canonical-path file locks stop other
calls of the same turn from swapping a symlink in between. Processes outside hatchway are not
covered by that guarantee.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import stat
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

import structlog

from bot.config import Settings
from bot.tools.builtin.observation import ToolFailed, ToolRefused
from bot.tools.builtin.scopes import DEFAULT_AGENT, WorkspaceScope, scope_folder
from bot.tools.spec import ToolContext, ToolEnvironmentError

log = structlog.get_logger(__name__)

FOLDER_MODE = 0o700

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


def workspace_root(settings: Settings) -> Path:
    """The tools' workspace root: ``tools.workspace.path`` under the state directory."""
    return Path(settings.state_dir) / settings.tools.workspace.path


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

    ``root`` is the workspace root the catalog was given and ``scope`` how it is split
    (``shared`` here unless the catalog passes the configured one: the whole root, as a
    workspace was before scopes). A call works in its scope's folder, or in the context's
    ``ToolContext.workspace`` when the runtime chose one (see :meth:`for_call`).
    """

    root: Path
    allow_sensitive_files: bool = False
    scope: WorkspaceScope = "shared"
    agent: str = DEFAULT_AGENT

    def for_call(self, context: ToolContext) -> Workspace:
        """The workspace of one call, rooted at the folder its paths are confined to: the
        context's, when the runtime chose one; else the call's scope folder under ``root``,
        created (0700) if missing. Raises :class:`ToolEnvironmentError` when the root is
        missing or a level of the folder is not a plain directory."""
        if context.workspace:
            return replace(self, root=Path(context.workspace), scope="shared")
        if self.scope == "shared":
            return self
        relative = scope_folder(
            self.scope,
            channel=context.channel,
            conversation_id=context.conversation_id,
            agent=self.agent,
        )
        return replace(self, root=self._ensure(relative), scope="shared")

    def _ensure(self, relative: PurePosixPath) -> Path:
        """``root / relative``, each missing level made with mode 0700. A level that exists
        must be a real directory: a symlink there (left by a ``shared`` turn, say) could
        lead the folder, and the files written in it, anywhere."""
        folder = self.real_root()
        for part in relative.parts:
            folder = folder / part
            try:
                os.mkdir(folder, FOLDER_MODE)
            except FileExistsError:
                pass
            else:
                log.info("workspace_folder_created", folder=str(folder), scope=self.scope)
            mode = os.lstat(folder).st_mode
            if not stat.S_ISDIR(mode):
                # the model is shown no path of the daemon's: the operator finds it logged
                log.warning("workspace_folder_blocked", folder=str(folder), scope=self.scope)
                raise ToolEnvironmentError(
                    "this conversation's workspace folder is not a directory (a symlink or a "
                    "file is in the way; the log's workspace_folder_blocked names it); it has "
                    "to be removed so the folder can be created"
                )
        return folder

    def real_root(self) -> Path:
        """The resolved root; raises :class:`ToolEnvironmentError` when it is not a
        directory (the daemon creates it at start)."""
        real = self.root.resolve()
        if not real.is_dir():
            log.warning("workspace_missing", folder=str(self.root))
            raise ToolEnvironmentError(
                "the workspace directory does not exist (the log's workspace_missing names it)"
            )
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
        try:
            real = candidate.resolve()
        except RuntimeError:  # its message names the absolute path: not for the model
            raise ToolFailed(f"{path} is a symlink loop (it leads back to itself)") from None
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

    def failure(self, shown: str, error: OSError) -> ToolFailed:
        """``error`` (reading or stating the file the model calls ``shown``) as a failure
        the model may read: its reason, never the daemon's absolute path."""
        reason = error.strerror or type(error).__name__
        return ToolFailed(f"{shown} cannot be read: {reason}")

    def display(self, real: Path, *, root: Path) -> str:
        """The path the model sees: relative to the root, POSIX separators."""
        rel = real.relative_to(root).as_posix()
        return rel if rel != "." else "."


@dataclass(frozen=True, slots=True, kw_only=True)
class Walk:
    """What :func:`walk_files` found: ``entries`` as ``(path, depth, is_dir)``, sorted, and
    ``complete`` false when it stopped at its limit of entries."""

    entries: list[tuple[Path, int, bool]]
    complete: bool


def walk_files(top: Path, *, max_depth: int, stop_after: int = 20_000) -> Walk:
    """Entries under ``top`` up to ``max_depth`` levels, shallow ones first, at most
    ``stop_after`` of them (a folder of a million files costs no more), without following
    symlinked directories (callers resolve and re-check each entry) and without ``.git``
    internals. A folder that cannot be read, a symlink loop or any other odd entry is passed
    over or listed as it is: it never ends the walk."""
    found: list[tuple[Path, int, bool]] = []
    folders: deque[tuple[Path, int]] = deque([(top, 0)])
    complete = True
    while folders:
        folder, depth = folders.popleft()
        room = stop_after - len(found)
        try:
            with os.scandir(folder) as scan:
                entries = list(itertools.islice(scan, room + 1))
        except OSError:
            continue
        if len(entries) > room:
            entries, complete = entries[:room], False
        for entry in sorted(entries, key=lambda e: e.name):
            is_dir = _is_dir(entry)
            if is_dir and entry.name == ".git":
                continue
            found.append((Path(entry.path), depth + 1, is_dir))
            if is_dir and depth + 1 < max_depth and not entry.is_symlink():
                folders.append((Path(entry.path), depth + 1))
        if not complete:
            break
    found.sort(key=lambda item: item[0].as_posix())
    return Walk(entries=found, complete=complete)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` is a directory, or a symlink to one; False for a symlink loop or
    an entry that cannot be looked at."""
    try:
        return entry.is_dir()
    except OSError:
        return False
