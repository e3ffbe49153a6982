"""The test suite's wall time, as README's command runs it, with the load average beside it.

Runs ``python -m pytest -q`` (README's command: the default run, ``-n 2`` workers from
pyproject's ``addopts``) from the project root and prints, per run, pytest's own wall time
(its ``… passed in N s`` line), the CPU time of the suite's processes (user + system, from
``wait4``: how many cores it kept busy on average), the outcome counts, the failed tests by
name, and the load average at the start and the end with its mean over the run
(``/proc/loadavg`` sampled every 5 s). Figures are printed, never asserted.

    python bench/suite.py                       # one run of README's command
    python bench/suite.py --stage long          # .ci/run's second stage: -m 'long or browser'
    python bench/suite.py --runs 5 --with-load  # five runs, a second copy of the suite beside
    python bench/suite.py --smoke               # a handful of tests, in under 30 s
    python bench/suite.py -- -n 4 --dist load   # extra arguments go to pytest

``--with-load`` starts a second copy of the same command beside the measured runs and
restarts it each time it ends, until the last measured run is over: a machine as busy as
when two CI jobs share its two cores. The copy's runs are reported too (a failure there is
as real as one in a measured run). Targets (docs/performance.md): README's command ≤ 240 s
on an idle 2-core machine, the second stage ≤ 360 s.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import os
import re
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field

from bench.machine import describe_machine

ROOT = Path(__file__).resolve().parent.parent
STAGES = {
    "default": [],  # README's command: pyproject's addopts leave out long and browser
    "long": ["-m", "long or browser"],  # .ci/run's second stage
}
SMOKE = [
    "tests/test_envelope.py",
    "tests/test_backoff.py",
    "tests/test_routing.py",
    "tests/store/test_prefixes.py",
]
# pytest's last line under -q: "3 failed, 4046 passed, 2 skipped in 251.31s (0:04:11)"
_SUMMARY = re.compile(r"^=*\s*(?P<counts>(?:\d+ \w+|no tests ran).*?) in (?P<seconds>[\d.]+)s\b")
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)")


@dataclass
class LoadSamples:
    """``/proc/loadavg``'s one-minute figure, sampled every ``every_s`` from a thread."""

    every_s: float = 5.0
    values: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> LoadSamples:
        self._thread = threading.Thread(target=self._sample, name="loadavg", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while True:
            self.values.append(os.getloadavg()[0])
            if self._stop.wait(self.every_s):
                return

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values) if self.values else float("nan")


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    label: str
    code: int
    pytest_s: float | None
    elapsed_s: float
    cpu_s: float
    counts: str
    failed: list[str]
    load_start: float
    load_end: float
    load_mean: float

    def line(self) -> str:
        wall = f"{self.pytest_s:7.1f} s" if self.pytest_s is not None else "      ? s"
        return (
            f"{self.label:>8}: pytest {wall} (process {self.elapsed_s:.1f} s, CPU "
            f"{self.cpu_s:.0f} s = {self.cpu_s / self.elapsed_s:.2f} cores busy), exit "
            f"{self.code}, {self.counts or 'no summary line'}; load average "
            f"{self.load_start:.2f} → {self.load_end:.2f}, mean {self.load_mean:.2f}"
        )


def command(stage: str, smoke: bool, extra: list[str]) -> list[str]:
    argv = [sys.executable, "-m", "pytest", "-q", "-rfE", *STAGES[stage]]
    return [*argv, *(SMOKE if smoke else []), *extra]


def run_once(label: str, argv: list[str], log: Path) -> Run:
    """One run of ``argv`` from the project root, its output kept in ``log``."""
    load_start = os.getloadavg()[0]
    started = time.monotonic()
    with LoadSamples() as load, log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        # wait4: the CPU of pytest and of every process it (or a worker, or a test) waited
        # for; a server that daemonised itself (PostgreSQL's postmaster) is not counted
        _, status, usage = os.wait4(proc.pid, 0)
        code = proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.monotonic() - started
    text = log.read_text(encoding="utf-8", errors="replace")
    summary = None
    for line in text.splitlines():
        if found := _SUMMARY.search(line):
            summary = found
    failed = sorted({m[1] for line in text.splitlines() if (m := _FAILED.match(line))})
    return Run(
        label=label,
        code=code,
        pytest_s=float(summary["seconds"]) if summary else None,
        elapsed_s=elapsed,
        cpu_s=usage.ru_utime + usage.ru_stime,
        counts=summary["counts"] if summary else "",
        failed=failed,
        load_start=load_start,
        load_end=os.getloadavg()[0],
        load_mean=load.mean,
    )


def background_copy(argv: list[str], logs: Path, stop: threading.Event, runs: list[Run]) -> None:
    """The second copy of the suite: run again each time it ends, until ``stop``; a run still
    going when ``stop`` is set is left to finish (it is reported like the others)."""
    n = 0
    while not stop.is_set():
        n += 1
        runs.append(run_once(f"load {n}", argv, logs / f"load-{n}.log"))
        print(runs[-1].line(), flush=True)


def report(title: str, runs: list[Run]) -> None:
    print(f"\n{title}")
    for run in runs:
        print(run.line())
        for name in run.failed:
            print(f"          failed: {name}")
    walls = [r.pytest_s for r in runs if r.pytest_s is not None]
    if len(walls) > 1:
        print(
            f"  pytest wall: median {statistics.median(walls):.1f} s, "
            f"min {min(walls):.1f} s, max {max(walls):.1f} s; "
            f"{sum(r.code == 0 for r in runs)} of {len(runs)} runs green"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1, help="measured runs, one after another")
    parser.add_argument(
        "--with-load", action="store_true", help="a second copy of the suite runs beside them"
    )
    parser.add_argument(
        "--stage",
        choices=sorted(STAGES),
        default="default",
        help="default: README's command; long: .ci/run's second stage (-m 'long or browser')",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="a handful of tests (under 30 s), once"
    )
    parser.add_argument(
        "--logs",
        type=Path,
        default=None,
        help="folder for each run's pytest output (default: a new folder under /tmp)",
    )
    parser.add_argument("pytest_args", nargs="*", help="after --: more arguments for pytest")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    logs = args.logs or Path(tempfile.mkdtemp(prefix="hatchway-suite-"))
    logs.mkdir(parents=True, exist_ok=True)
    argv = command(args.stage, args.smoke, args.pytest_args)
    runs = 1 if args.smoke else args.runs
    print(describe_machine())
    print(f"command: {' '.join(argv[1:])}  (from {ROOT}; output in {logs})")

    loaded: list[Run] = []
    stop = threading.Event()
    copy = None
    if args.with_load:
        copy = threading.Thread(target=background_copy, args=(argv, logs, stop, loaded))
        copy.start()
    measured: list[Run] = []
    try:
        for n in range(1, runs + 1):
            measured.append(run_once(f"run {n}", argv, logs / f"run-{n}.log"))
            print(measured[-1].line(), flush=True)
    finally:
        stop.set()
        if copy is not None:
            print("waiting for the second copy's run to end", flush=True)
            copy.join()
    report(
        "measured runs" + (" (a second copy of the suite beside them)" if copy else ""), measured
    )
    if copy is not None:
        report("the second copy's runs", loaded)
    print(describe_machine())
    return 0 if all(r.code == 0 for r in measured) else 1


if __name__ == "__main__":
    sys.exit(main())
