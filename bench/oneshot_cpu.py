"""Where the CPU of a one-shot ``printf 'hello\\n' | hatchway chat`` goes: imports by
package, dataclasses made, the cyclic collector, and the rest.

The same one-shot as ``bench/oneshot.py`` (its OpenAI-compatible fake in a process of its own,
a ``hatchway.toml`` naming it, the state directory kept between runs), but run in an
interpreter that meters itself (:mod:`bench.oneshot_probe`): each module's import in the
CPU time of the thread that imports it, its own time without the modules it imports; each
dataclass made; each collection. Per run:

* **process CPU** (user + system, every thread);
* **imports**, split by package: the project's (``bot``, ``channels``), aiohttp with the
  libraries only it brings (``yarl``, ``multidict``, ``attrs`` …), of which
  ``aiohttp.connector`` alone (it makes two TLS contexts at import, each loading the
  system's CA bundle), pydantic with ``pydantic_core`` and its typing helpers, and the rest
  (the standard library, structlog);
* **dataclasses** made while importing (included in the imports' figures): the project's
  and the others';
* **collections** of the cyclic collector;
* **the rest**: the process CPU less the imports and the collections (the interpreter's
  start, the settings' validation, the app's start, the turn, the stop).

Medians (min-max) of ``--repeat`` runs; the metered interpreter runs a little slower than a
plain one, so compare these figures with each other, and ``bench/oneshot.py``'s with its own.
``--before DIR`` meters another checkout too, interleaved (as in ``bench/oneshot.py``), and
the modules that cost most are listed for this tree.

    python bench/oneshot_cpu.py [--repeat 5] [--before /tmp/before-tree]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import statistics
import subprocess
import tempfile
from dataclasses import dataclass

from bench.machine import describe_machine
from bench.oneshot import ANSWER, ROOT, LlmProcess, Tree, compile_bytecode, write_config
from bench.smoke import parse_args

BENCH = Path(__file__).resolve().parent
CHILD = f"import sys; sys.path.insert(0, {str(BENCH)!r}); from oneshot_probe import run; run()"

#: Top-level packages counted as aiohttp's: the libraries a one-shot loads for it alone.
AIOHTTP = {
    "aiohttp",
    "aiohappyeyeballs",
    "aiosignal",
    "attr",
    "frozenlist",
    "idna",
    "multidict",
    "propcache",
    "yarl",
}
PYDANTIC = {"pydantic", "pydantic_core", "annotated_types", "typing_inspection"}
PROJECT = {"bot", "channels"}

ROWS = (
    ("cpu_s", "process CPU"),
    ("imports_s", "imports"),
    ("project_s", "  the project's"),
    ("aiohttp_s", "  aiohttp and its libraries"),
    ("connector_s", "    aiohttp.connector"),
    ("pydantic_s", "  pydantic"),
    ("others_s", "  the rest"),
    ("project_dataclasses_s", "dataclasses, the project's"),
    ("other_dataclasses_s", "dataclasses, the others'"),
    ("gc_s", "collections"),
    ("rest_s", "the rest"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Metered:
    """One metered run, as :mod:`bench.oneshot_probe` wrote it (times in seconds)."""

    cpu_s: float
    peak_rss_mb: float
    #: module → its own import CPU
    imports: dict[str, float]
    #: defining module → (dataclasses made, their CPU)
    dataclasses: dict[str, tuple[int, float]]
    gc_s: float
    collections: int

    @classmethod
    def read(cls, path: Path) -> Metered:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            cpu_s=float(raw["cpu_s"]),
            peak_rss_mb=float(raw["peak_rss_mb"]),
            imports={name: float(own) for name, (own, _thread) in raw["imports"].items()},
            dataclasses={m: (int(n), float(s)) for m, (n, s) in raw["dataclasses"].items()},
            gc_s=float(raw["gc_s"]),
            collections=int(raw["collections"]),
        )

    def rows(self) -> dict[str, float]:
        """The figures by the keys of :data:`ROWS`."""
        groups = {"project_s": 0.0, "aiohttp_s": 0.0, "pydantic_s": 0.0, "others_s": 0.0}
        for name, own in self.imports.items():
            groups[_group(name)] += own
        imports_s = sum(groups.values())
        project_made = [s for m, (_n, s) in self.dataclasses.items() if _group(m) == "project_s"]
        return {
            "cpu_s": self.cpu_s,
            "imports_s": imports_s,
            **groups,
            "connector_s": self.imports.get("aiohttp.connector", 0.0),
            "project_dataclasses_s": sum(project_made),
            "other_dataclasses_s": sum(s for _n, s in self.dataclasses.values())
            - sum(project_made),
            "gc_s": self.gc_s,
            "rest_s": self.cpu_s - imports_s - self.gc_s,
        }

    def counts(self) -> str:
        own = sum(1 for name in self.imports if _group(name) == "project_s")
        made = sum(n for n, _s in self.dataclasses.values())
        project = sum(n for m, (n, _s) in self.dataclasses.items() if _group(m) == "project_s")
        return (
            f"{len(self.imports)} modules imported ({own} the project's), {made} dataclasses "
            f"({project} the project's), {self.collections} collections, "
            f"peak RSS {self.peak_rss_mb:.1f} MB"
        )


def _group(module: str) -> str:
    top = module.split(".")[0]
    if top in PROJECT:
        return "project_s"
    if top in AIOHTTP:
        return "aiohttp_s"
    if top in PYDANTIC:
        return "pydantic_s"
    return "others_s"


def metered_run(tree: Tree, out: Path) -> Metered:
    """``printf 'hello\\n' | hatchway chat`` from ``tree``, metered."""
    env = tree.environ()
    env["ONESHOT_PROBE_OUT"] = str(out)
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=b"hello\n",
        capture_output=True,
        cwd=tree.workdir,
        env=env,
        check=False,
    )
    shown = (done.stdout + done.stderr).decode(errors="replace")
    if done.returncode != 0 or ANSWER not in shown:
        raise SystemExit(f"{tree.label}: hatchway chat exited {done.returncode}:\n{shown}")
    return Metered.read(out)


def main(args: argparse.Namespace) -> None:
    print(describe_machine())
    with tempfile.TemporaryDirectory() as tmp, LlmProcess() as llm_url:
        trees = [
            Tree(
                label="this tree",
                path=ROOT,
                workdir=Path(tmp) / "this",
            )
        ]
        for index, other in enumerate(args.before):
            path = Path(other).resolve()
            label = "before" if len(args.before) == 1 else path.name
            trees.append(Tree(label=label, path=path, workdir=Path(tmp) / f"before{index}"))
        runs: dict[str, list[dict[str, float]]] = {tree.label: [] for tree in trees}
        modules: dict[str, list[float]] = {}
        last: dict[str, Metered] = {}
        for tree in trees:
            compile_bytecode(tree.path)
            write_config(tree.workdir, llm_url)
            metered_run(tree, Path(tmp) / "warm-up.json")  # creates the state directory
        for round_ in range(args.repeat):
            for tree in trees if round_ % 2 == 0 else trees[::-1]:  # order alternated
                metered = metered_run(tree, Path(tmp) / "figures.json")
                runs[tree.label].append(metered.rows())
                last[tree.label] = metered
                if tree is trees[0]:
                    for name, own in metered.imports.items():
                        modules.setdefault(name, []).append(own)
    print(f"printf 'hello\\n' | hatchway chat, metered; ms, median (min-max) of {args.repeat}:")
    print(f"  {'':<32}" + "".join(f"{tree.label:>24}" for tree in trees))
    for key, title in ROWS:
        cells = []
        for tree in trees:
            values = [run[key] * 1000 for run in runs[tree.label]]
            cells.append(f"{statistics.median(values):6.1f} ({min(values):.0f}-{max(values):.0f})")
        print(f"  {title:<32}" + "".join(f"{cell:>24}" for cell in cells))
    for tree in trees:
        print(f"  {tree.label}: {last[tree.label].counts()}")
    costly = sorted(modules.items(), key=lambda item: statistics.median(item[1]), reverse=True)
    print(
        "  this tree's costliest imports (own CPU, median ms): "
        + ", ".join(
            f"{name} {statistics.median(values) * 1000:.1f}" for name, values in costly[:12]
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds (each tree once a round)")
    parser.add_argument(
        "--before",
        action="append",
        default=[],
        help="another checkout to meter side by side (PYTHONPATH); may be repeated",
    )
    main(parse_args(parser, smoke={"repeat": 1}))
