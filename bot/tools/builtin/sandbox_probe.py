"""Whether bubblewrap works here, and which sandbox ``shell`` runs under.

The probe runs ``bwrap`` once with the namespaces and mounts every call uses, around
``true``, and is cached for the life of the process (a reload does not probe again). It fails
when the program is missing, or when the kernel or the service's own sandbox refuses what it
needs (user namespaces, mounts): the reason is bubblewrap's own message.

:func:`choose_sandbox` applies ``tools.shell.sandbox``: ``none`` never probes; ``auto`` uses
bubblewrap when the probe passes and otherwise logs ``shell_sandbox_unavailable`` (a
warning naming the package and the setting) and runs commands as before; ``bwrap`` raises
:class:`~bot.errors.ConfigError` when the probe fails, so the daemon does not start (or a
reload is refused) without the sandbox it was told to use. What to do about a failed probe
(:func:`fix_hint`) is the package to install, or, in a container where bubblewrap is installed
but cannot mount its ``/proc``, the container's option that lets it. ``hatchway doctor`` reports the
same probe (:mod:`bot.commands.doctor.sandbox`).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import structlog

from bot.config import ShellToolConfig
from bot.errors import ConfigError
from bot.tools.builtin.sandbox import BwrapSandbox, namespace_options

log = structlog.get_logger(__name__)

PROBE_TIMEOUT_S = 10.0
INSTALL_HINT = "apt-get install bubblewrap (the Debian package bubblewrap)"
CONTAINER_HINT = (
    "in a container bubblewrap needs to mount a /proc of its own, which the container's masked "
    "/proc paths refuse: run it with --security-opt unmask=/proc/* (podman run; in a compose "
    'file security_opt: ["unmask=/proc/*"])'
)
NONE_SETTING = 'tools.shell.sandbox = "none"'
ROOT_NPROC = "the kernel does not apply the process limit (tools.shell.max_processes) to root"
ROOT_NPROC_FIX = "run the daemon as its service user"


@dataclass(frozen=True, slots=True, kw_only=True)
class BwrapStatus:
    """The probe's answer: ``problem`` is empty when bubblewrap works (``version`` says
    which), else it says why not."""

    program: str
    version: str = ""
    problem: str = ""
    installed: bool = True

    @property
    def works(self) -> bool:
        return not self.problem


def bwrap_status(program: str = "bwrap") -> BwrapStatus:
    """The cached probe of ``program`` (a name looked up on ``PATH``, or a path)."""
    found = shutil.which(program)
    if found is None:
        return BwrapStatus(program=program, problem=f"{program} is not installed", installed=False)
    with _probing:  # a probe started ahead (probe_ahead) is waited for, not run again
        return _probe(found)


_probing = threading.Lock()


def probe_ahead(cfg: ShellToolConfig, bwrap: str = "bwrap") -> None:
    """Start the probe that :func:`choose_sandbox` will ask for on a worker thread, so its
    answer is ready when ``shell`` is built: running bubblewrap twice is waiting, not CPU,
    and ``hatchway chat`` loads and starts the app meanwhile. Nothing when ``shell`` is off
    or ``sandbox = "none"`` (which never probes)."""
    if cfg.enabled and cfg.sandbox != "none":
        threading.Thread(
            target=bwrap_status, args=(bwrap,), name="bwrap-probe", daemon=True
        ).start()


@functools.cache
def _probe(executable: str) -> BwrapStatus:
    command = [
        executable,
        *namespace_options(network="none"),
        *("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"),
        "--",
        "true",
    ]
    try:
        ran = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        version = subprocess.run(
            [executable, "--version"], capture_output=True, text=True, timeout=5, check=False
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return BwrapStatus(program=executable, problem=f"{executable} cannot be run: {exc}")
    if ran.returncode != 0:
        said = " ".join(ran.stderr.split()) or f"exit status {ran.returncode}"
        return BwrapStatus(program=executable, version=version, problem=f"{executable}: {said}")
    return BwrapStatus(program=executable, version=version)


def in_container(root: Path = Path("/")) -> bool:
    """Whether this process runs in a container: podman and systemd-nspawn set
    ``container``; podman also writes ``/run/.containerenv`` (not on a read-only root),
    Docker ``/.dockerenv``."""
    if os.environ.get("container"):  # noqa: SIM112 (lower case is the convention's spelling)
        return True
    return (root / "run/.containerenv").exists() or (root / ".dockerenv").exists()


MASKED_PROC = "Can't mount proc"
"""bubblewrap's words when the kernel refuses it a /proc because parts of the visible one are
masked (a container's default, or systemd's ProtectKernelTunables=)."""


def fix_hint(status: BwrapStatus) -> str:
    """What makes bubblewrap work: the container's option where it is installed in a
    container that masks /proc; the package otherwise."""
    if status.installed and MASKED_PROC in status.problem and in_container():
        return CONTAINER_HINT
    return INSTALL_HINT


def choose_sandbox(
    cfg: ShellToolConfig, *, hidden: tuple[Path, ...], bwrap: str = "bwrap"
) -> BwrapSandbox | None:
    """The sandbox every call of a ``shell`` built from ``cfg`` runs under (None: none);
    see the module docstring for the three settings."""
    if cfg.sandbox == "none":
        return None
    status = bwrap_status(bwrap)
    if not status.works:
        if cfg.sandbox == "bwrap":
            raise ConfigError(
                f'tools.shell.sandbox = "bwrap", but bubblewrap cannot run here '
                f"({status.problem}); {fix_hint(status)}, or set {NONE_SETTING} to run "
                "commands without it"
            )
        log.warning(
            "shell_sandbox_unavailable",
            problem=status.problem,
            effect="shell commands run without a sandbox: they see the daemon's files and "
            "the network",
            fix=f"{fix_hint(status)}; or set {NONE_SETTING} to run without it on purpose",
        )
        return None
    if cfg.max_processes and os.geteuid() == 0:
        log.warning("shell_process_limit_not_applied", reason=ROOT_NPROC, fix=ROOT_NPROC_FIX)
    tmp_bytes = cfg.max_file_mb * 1024 * 1024
    log.info(
        "shell_sandbox",
        program=status.program,
        version=status.version,
        network=cfg.network,
        # the default changed from the host's network to none: say how to have it back
        allow_network=None
        if cfg.network == "host"
        else 'tools.shell.network = "host" (or a channel\'s shell_network = "host")',
    )
    return BwrapSandbox(executable=status.program, hidden=hidden, tmp_bytes=tmp_bytes)
