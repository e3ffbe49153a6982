"""The sandbox check: whether ``shell`` commands will run under bubblewrap.

It runs the same probe as the daemon (:func:`bot.tools.builtin.sandbox_probe.bwrap_status`)
and reads ``tools.shell.sandbox``: bubblewrap that works passes; bubblewrap missing or
refused fails when the setting is ``bwrap`` (the daemon will not start) and is a ``⚠`` line
with ``auto`` (commands would run without a sandbox), naming the Debian package (in a
container that masks ``/proc``: the container's option bubblewrap needs) and the setting;
``none`` passes and says so. Run as root, a ``⚠`` line says the process limit does not apply
(the kernel exempts root from it).
"""

from __future__ import annotations

import os

from bot.commands.doctor.report import CheckResult
from bot.config import ShellToolConfig
from bot.tools.builtin.sandbox_probe import (
    NONE_SETTING,
    ROOT_NPROC,
    ROOT_NPROC_FIX,
    bwrap_status,
    fix_hint,
)

NAME = "shell sandbox"


def sandbox_check(cfg: ShellToolConfig, *, bwrap: str = "bwrap") -> CheckResult:
    """The line for ``[tools.shell]``; probes ``bwrap`` unless the shell or the sandbox is
    off."""
    if not cfg.enabled:
        return CheckResult(name=NAME, ok=True, detail="the shell tool is off")
    if cfg.sandbox == "none":
        return CheckResult(
            name=NAME,
            ok=True,
            detail=f"off ({NONE_SETTING}): commands see the daemon's files and the network",
        )
    status = bwrap_status(bwrap)
    if not status.works:
        if cfg.sandbox == "bwrap":
            return CheckResult(
                name=NAME,
                ok=False,
                detail=f"{status.problem}; the daemon will not start with "
                'tools.shell.sandbox = "bwrap"',
                fix=f"{fix_hint(status)}, or set {NONE_SETTING}",
            )
        return CheckResult(
            name=NAME,
            ok=True,
            warning=True,
            detail=f"{status.problem}: shell commands will run without a sandbox",
            fix=f"{fix_hint(status)}; or set {NONE_SETTING} to run without it on purpose",
        )
    detail = f"{status.version or status.program} works"
    if cfg.max_processes and os.geteuid() == 0:
        return CheckResult(
            name=NAME,
            ok=True,
            warning=True,
            detail=f"{detail}, but {ROOT_NPROC}",
            fix=f"{ROOT_NPROC_FIX} (and this check with it)",
        )
    return CheckResult(name=NAME, ok=True, detail=detail)
