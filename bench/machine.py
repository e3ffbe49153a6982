"""What every benchmark prints with its figures: the machine, percentiles, process CPU time."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from pathlib import Path


def describe_machine() -> str:
    """One line: cores, Python, load average (figures on a loaded machine read differently)."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"machine: {os.cpu_count()} cores (nproc {len(os.sched_getaffinity(0))}), "
        f"Python {platform.python_version()} on {platform.system()} {platform.release()}, "
        f"load average {load}"
    )


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of already sorted samples, nearest rank."""
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def process_cpu_s(pid: int) -> float:
    """User + system CPU time ``pid`` has used so far, from ``/proc/PID/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
