"""Resource limits of one ``shell`` call, and the line the model reads when one was hit.

The limits are set by ``prlimit`` (util-linux), the first program a call runs (inside the
sandbox, so that the process count is the call's own: a new user namespace counts only its
own processes); it sets them on itself and runs ``/bin/sh -c``, and every process of the call
inherits them. Soft and hard values are equal, so a command cannot raise them (the CPU hard
limit is one second later, see below); ``0`` turns a limit off; core dumps are always off.

- ``max_cpu_s`` (RLIMIT_CPU, per process): SIGXCPU at the limit, SIGKILL a second later →
  ``stopped: CPU time limit of 60 s reached``
- ``max_memory_mb`` (RLIMIT_AS, per process): allocations fail (ENOMEM, ``MemoryError``) →
  ``stopped: out of memory (limit 4 GiB of address space)``
- ``max_open_files`` (RLIMIT_NOFILE, per process): ``open`` fails (EMFILE) →
  ``stopped: too many open files (limit 1024)``
- ``max_processes`` (RLIMIT_NPROC, per call, threads included): ``fork`` fails (EAGAIN) →
  ``stopped: too many processes (limit 256)``
- ``max_file_mb`` (RLIMIT_FSIZE, per file; also the size of the sandbox's ``/tmp``): SIGXFSZ →
  ``stopped: file size limit of 1 GiB reached``

A signal says for certain which limit stopped a command (exit status 128 + the signal, or the
signal itself when ``/bin/sh`` was the one killed). The other three only make a call fail:
their line is added when the call failed and its output carries the error's usual text.

``max_processes`` needs the sandbox: without a user namespace of its own, RLIMIT_NPROC counts
every process and thread of the service user, the daemon's included, so it is not set; and
the kernel never applies it to root.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

from bot.config import ShellToolConfig

MIB = 1024 * 1024

_MEMORY = re.compile(
    r"Cannot allocate memory|MemoryError|out of memory|bad_alloc|memory exhausted|"
    r"(could not|cannot|failed to|unable to) (allocate|reserve)|allocation failed",
    re.IGNORECASE,
)
_FILES = re.compile(r"Too many open files|\[Errno 24\]|EMFILE")
_PROCESSES = re.compile(
    r"Cannot fork|can't fork|fork: (retry: )?Resource temporarily unavailable|"
    r"BlockingIOError: \[Errno 11\]|fork failed|EAGAIN",
    re.IGNORECASE,
)


def _size(mib: int) -> str:
    return f"{mib // 1024} GiB" if mib % 1024 == 0 else f"{mib} MiB"


def exit_signal(exit_code: int) -> int | None:
    """The signal that ended the command: a negative return code (the shell itself was
    killed) or 128 + the signal (``/bin/sh`` and bubblewrap report a killed child so)."""
    if exit_code < 0:
        return -exit_code
    if 128 < exit_code < 128 + signal.NSIG:
        return exit_code - 128
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellLimits:
    """The limits of ``[tools.shell]`` (0: off) and the ``prlimit`` program that sets them."""

    prlimit: str
    cpu_s: int = 0
    memory_mb: int = 0
    open_files: int = 0
    processes: int = 0
    file_mb: int = 0

    @classmethod
    def of(cls, cfg: ShellToolConfig, *, prlimit: str, sandboxed: bool) -> ShellLimits:
        return cls(
            prlimit=prlimit,
            cpu_s=cfg.max_cpu_s,
            memory_mb=cfg.max_memory_mb,
            open_files=cfg.max_open_files,
            processes=cfg.max_processes if sandboxed else 0,
            file_mb=cfg.max_file_mb,
        )

    def command(self) -> list[str]:
        """``prlimit --…= --`` to put before ``/bin/sh -c``."""
        args = [self.prlimit, "--core=0"]
        if self.cpu_s:
            args.append(f"--cpu={self.cpu_s}:{self.cpu_s + 1}")
        if self.memory_mb:
            args.append(f"--as={self.memory_mb * MIB}")
        if self.open_files:
            args.append(f"--nofile={self.open_files}")
        if self.processes:
            args.append(f"--nproc={self.processes}")
        if self.file_mb:
            args.append(f"--fsize={self.file_mb * MIB}")
        return [*args, "--"]

    def outcome(self, exit_code: int, output: str) -> str | None:
        """The line saying which limit stopped a command that ended with ``exit_code``
        after writing ``output``; None when none did (as far as can be told)."""
        if exit_code == 0:
            return None
        ended_by = exit_signal(exit_code)
        if ended_by == signal.SIGXCPU and self.cpu_s:
            return f"stopped: CPU time limit of {self.cpu_s} s reached"
        if ended_by == signal.SIGXFSZ and self.file_mb:
            return f"stopped: file size limit of {_size(self.file_mb)} reached"
        if self.memory_mb and _MEMORY.search(output):
            return f"stopped: out of memory (limit {_size(self.memory_mb)} of address space)"
        if self.processes and _PROCESSES.search(output):
            return f"stopped: too many processes (limit {self.processes})"
        if self.open_files and _FILES.search(output):
            return f"stopped: too many open files (limit {self.open_files})"
        return None
