"""``bench/throughput.py`` in several checkouts, interleaved: the figure to read on a shared
machine is the ratio of each pass's runs, which ran one after the other under about the same
load, not any run's absolute figure.

Each checkout (``--tree NAME=DIR``, e.g. a ``git worktree add --detach /tmp/wt-e9e30f6
e9e30f6``) runs its own copy of ``bench/throughput.py`` with the same arguments (given after
``--``), in a process of its own, with this interpreter. The order rotates every pass (A B C,
B C A, C A B, ...). Each run's line carries the load average at its start; the summary gives
each tree's medians and, per pass, the ratio of every tree's figure to the first tree's:
loop CPU per turn, turns/s and the model server's CPU per turn (its own process, the same
code in every tree: a change in it is the request's size or the machine's speed), then the
median of the ratios with their spread.

    python bench/side_by_side.py --tree e9e30f6=/tmp/wt-e9e30f6 --tree head=. \\
        [--passes 7] [-- --tool --rounds 3]

``--smoke``: this checkout alone, one pass of ``throughput.py --smoke``.
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

from bench.machine import describe_machine
from bench.smoke import parse_args

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(
    r"median round: (?P<tps>[\d.]+) turns/s.*loop CPU (?P<loop>[\d.]+) ms/turn, "
    r"model server CPU (?P<model>[\d.]+) ms/turn, (?P<trips>[\d.]+) trips/turn; "
    r"peak RSS (?P<rss>\d+) MB"
)
#: (figure, label) compared between trees
RATIOS = [("loop", "loop CPU/turn"), ("tps", "turns/s"), ("model", "model server CPU/turn")]


def run(tree: Path, bench_args: list[str]) -> dict[str, float]:
    """One run of ``tree``'s own throughput bench: its summary figures and the load average
    at its start."""
    load = os.getloadavg()[0]
    done = subprocess.run(
        [sys.executable, "bench/throughput.py", *bench_args],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    found = SUMMARY.search(done.stdout)
    if done.returncode != 0 or found is None:
        raise SystemExit(
            f"{tree}: exit {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return {**{k: float(v) for k, v in found.groupdict().items()}, "load": load}


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.2f}-{max(values):.2f})"


def main(args: argparse.Namespace) -> None:
    print(describe_machine())
    trees: dict[str, Path] = {}
    for item in args.tree or [f"this={ROOT}"]:
        name, _, folder = item.partition("=")
        if not folder or not (Path(folder) / "bench" / "throughput.py").exists():
            raise SystemExit(f"--tree {item!r}: NAME=DIR, DIR a checkout with bench/throughput.py")
        trees[name] = Path(folder).resolve()
    bench_args = list(args.bench_args)
    if bench_args[:1] == ["--"]:
        bench_args = bench_args[1:]
    if args.smoke:
        bench_args = ["--smoke", *bench_args]
    print(
        f"bench/throughput.py {' '.join(bench_args)} in: "
        + ", ".join(f"{n} ({p})" for n, p in trees.items())
    )
    names = list(trees)
    runs: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    for p in range(args.passes):
        shift = p % len(names)
        for name in names[shift:] + names[:shift]:
            figures = run(trees[name], bench_args)
            runs[name].append(figures)
            print(
                f"pass {p + 1} {name:<10} {figures['tps']:8.1f} turns/s"
                f"  loop CPU {figures['loop']:.3f} ms/turn"
                f"  model server CPU {figures['model']:.3f} ms/turn"
                f"  {figures['trips']:.2f} trips/turn  peak RSS {figures['rss']:.0f} MB"
                f"  load average {figures['load']:5.2f}",
                flush=True,
            )
    print(f"\nmedians of {args.passes} passes:")
    for name in names:
        rs = runs[name]
        loads = [r["load"] for r in rs]
        print(
            f"  {name:<10} {statistics.median(r['tps'] for r in rs):8.1f} turns/s"
            f"  loop CPU {statistics.median(r['loop'] for r in rs):.3f} ms/turn"
            f"  model server CPU {statistics.median(r['model'] for r in rs):.3f} ms/turn"
            f"  peak RSS {statistics.median(r['rss'] for r in rs):.0f} MB"
            f"  load average {min(loads):.1f}-{max(loads):.1f}"
        )
    first = names[0]
    for name in names[1:]:
        print(f"\n{name} / {first}, per pass; median (min-max):")
        for key, label in RATIOS:
            ratios = [b[key] / a[key] for a, b in zip(runs[first], runs[name], strict=True)]
            shown = " ".join(f"{r:.2f}" for r in ratios)
            print(f"  {label:<22} {shown}   {spread(ratios)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tree", action="append", help="NAME=DIR, a checkout (repeat; the first is the base)"
    )
    parser.add_argument("--passes", type=int, default=7)
    parser.add_argument("bench_args", nargs=argparse.REMAINDER, help="-- then throughput.py's")
    main(parse_args(parser, smoke={"passes": 1}))
