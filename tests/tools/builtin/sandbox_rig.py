"""What the sandbox tests share: the skip when bubblewrap is absent, a scratch folder outside
``/tmp``, a daemon layout in it, and a way to find processes on the host.

The scratch folder is under ``/var/tmp`` on purpose: the sandbox mounts a fresh ``/tmp``, so
files under ``/tmp`` (pytest's ``tmp_path``) would be out of a command's sight whatever the
sandbox hides, and a test there would prove nothing. The tests run as root in CI, who can
read every file: only the sandbox keeps a command from the daemon's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.config import Settings, ShellToolConfig, parse_settings
from bot.tools.builtin.sandbox import Confinement
from bot.tools.builtin.scopes import WorkspaceScope
from bot.tools.builtin.shell import shell_tool
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import ToolContext, ToolOutput, ToolSpec

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap is not installed (apt-get install bubblewrap; .ci/run installs it)",
)
SCRATCH = Path("/var/tmp")


def visible_python() -> str:
    """A Python a sandboxed command can run: the tests' own interpreter resolved past its
    virtual environment (a checkout under ``/tmp``, as CI's may be, has its venv hidden by
    the sandbox's private ``/tmp``), else ``python3`` from ``PATH``; never one under
    ``/tmp``."""
    candidates = (
        os.path.realpath(sys.executable),
        os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable),
        shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or "",
    )
    for candidate in candidates:
        if candidate and not candidate.startswith("/tmp/"):
            return candidate
    raise RuntimeError("no Python interpreter outside /tmp for sandboxed commands")


#: What sandboxed test commands run Python with (see :func:`visible_python`).
PYTHON = visible_python()
DB_SECRET = "DB-ROW-SECRET-2f1c"
ENV_SECRET = "ENV-FILE-SECRET-9b7e"
CONFIG_SECRET = "CONFIG-SECRET-41aa"


@contextlib.contextmanager
def scratch_folder() -> Iterator[Path]:
    """A new folder under ``/var/tmp`` (resolved), removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="hatchway-sandbox-", dir=SCRATCH)).resolve()
    assert not root.is_relative_to("/tmp")
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class DaemonLayout:
    """A daemon's files as the shipped unit lays them out, under one scratch folder: the
    state directory with the database and the workspace root, the config file and the env
    file in a folder of their own (``/etc/hatchway`` in production)."""

    state: Path
    database: Path
    workspace_root: Path
    config_file: Path
    env_file: Path

    @classmethod
    def create(cls, base: Path, *, database: Path | None = None) -> DaemonLayout:
        state = base / "state"
        workspace_root = state / "workspace"
        workspace_root.mkdir(parents=True)
        db = database or state / "hatchway.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(sqlite3.connect(db)) as conn, conn:
            conn.execute("CREATE TABLE history (text TEXT)")
            conn.execute("INSERT INTO history VALUES (?)", (DB_SECRET,))
        # The config file lies outside every hidden folder, so only the file itself is
        # hidden; the env file's folder is hidden whole, as /etc/hatchway is by default.
        config_file = base / "hatchway.toml"
        config_file.write_text(f'# {CONFIG_SECRET}\nstate_dir = "{state}"\n')
        etc = base / "etc"
        etc.mkdir()
        env_file = etc / "hatchway.env"
        # not a secret-looking name, or the output scrubber would mask the value and a
        # command without the sandbox would not be seen reading it
        env_file.write_text(f"HATCHWAY_GREETING={ENV_SECRET}\n")
        env_file.chmod(0o600)
        return cls(
            state=state,
            database=db,
            workspace_root=workspace_root,
            config_file=config_file,
            env_file=env_file,
        )

    def settings(self, channels: Mapping[str, object] | None = None) -> Settings:
        data: dict[str, object] = {
            "state_dir": str(self.state),
            "storage": {"path": str(self.database)},
            "channels": dict(channels or {}),
        }
        return parse_settings(data, environ={}, require_provider=False)

    def confinement(self, channels: Mapping[str, object] | None = None) -> Confinement:
        """What the app hands the catalog for these settings (the config file read by
        ``--config``)."""
        return Confinement.of(self.settings(channels), config_file=self.config_file)


def shell_in(
    layout: DaemonLayout,
    *,
    sandbox: str,
    scope: WorkspaceScope = "conversation",
    channels: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
    **cfg: object,
) -> ToolSpec:
    """``shell`` as the app builds it for ``layout``: the env file's folder hidden as
    ``/etc/hatchway`` is by default, the workspace scoped."""
    settings = {"sandbox": sandbox, "hidden_paths": [str(layout.env_file.parent)], **cfg}
    workspace = Workspace(root=layout.workspace_root, scope=scope)
    return shell_tool(
        workspace,
        ShellToolConfig.model_validate(settings),
        confinement=layout.confinement(channels),
        environ=environ,
        grace_s=0.3,
    )


async def run(spec: ToolSpec, command: str, context: ToolContext) -> str:
    assert spec.handler is not None
    result = await spec.handler({"command": command}, context)
    return result.text if isinstance(result, ToolOutput) else result


def host_processes(marker: str) -> list[int]:
    """Live processes on the host whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            if marker in cmdline and state not in ("Z", "X"):
                found.append(int(entry.name))
    return found
