"""A one-shot ``printf 'hello\\n' | hatchway chat`` with an OpenAI-compatible provider, as a
user runs it: wall time from spawn to exit, to the first answer byte, peak RSS.

The loopback OpenAI fake (:class:`tests.fakes.openai_server.OpenAIFake`) runs as a process of
its own (this script with ``--serve-llm``), so its work is not the parent's and does not
share the measuring process's event loop. ``hatchway chat`` (the ``hatchway`` console script
of this environment) runs in a temporary directory holding a ``hatchway.toml`` that names the
fake as ``[providers.default]`` (``kind = "openai"``, model ``gpt-4o-mini``: native tools),
with ``hello`` piped in; its state directory is kept between runs (one warm-up run with empty
input creates the database first), as a user's is.

Per run, from spawning the process:

* **exit**: to its exit (``wait4``), the figure a shell user waits for;
* **answer**: to the first byte of its first output line that the warm-up run (empty input,
  so no answer) did not print: piped output shows the answer whole, so this is also its end;
* **peak RSS** of the child (``ru_maxrss`` from ``wait4``) and its **CPU** (user + system);
* **stop**: ``App.stop`` as the chat's log tells it, from ``app_stopping`` to ``app_stopped``.

``--before DIR`` also runs the same command from another checkout (``PYTHONPATH=DIR``, e.g. a
``git worktree`` of the commit before a change), interleaved with this tree and the order
alternated each round; the columns are printed side by side. Give it more than once to
compare several checkouts (each column is then named by its folder). Both trees are byte-compiled
first, as ``pip install`` does for an installed package. Medians of ``--repeat`` rounds.

    python bench/oneshot.py [--repeat 9] [--before /tmp/before-tree]

Target on a 2-core machine: exit < 0.5 s, peak RSS < 60 MB.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime

from bench.machine import describe_machine
from bench.smoke import parse_args

ROOT = Path(__file__).resolve().parent.parent
HATCHWAY = str(Path(sys.executable).with_name("hatchway"))
ANSWER = "Hello! How can I help you today?"
_STRIP = ("HATCHWAY_", "OPENAI_", "ANTHROPIC_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


# -- the fake LLM, in a process of its own -----------------------------------------------


async def _serve_llm() -> None:
    """Answer every chat completion with :data:`ANSWER` until stdin closes; print the base
    URL first."""
    from tests.fakes.openai_server import OpenAIFake

    async with OpenAIFake(model="gpt-4o-mini") as fake:
        for _ in range(100_000):
            fake.queue_text(ANSWER)
        print(fake.base_url, flush=True)
        await asyncio.to_thread(sys.stdin.read)


class LlmProcess:
    """``--serve-llm`` as a child process for the block."""

    def __enter__(self) -> str:
        self._proc = subprocess.Popen(
            [sys.executable, __file__, "--serve-llm"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        return self._proc.stdout.readline().strip()

    def __exit__(self, *_: object) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait(timeout=30)


# -- hatchway chat -------------------------------------------------------------------------


@dataclass(slots=True)
class Run:
    lines: list[tuple[float, str]] = field(default_factory=list)
    exit_s: float = 0.0
    peak_rss_mb: float = 0.0
    cpu_s: float = 0.0
    status: int = 0


@dataclass(slots=True)
class Tree:
    """One checkout to run ``hatchway chat`` from, with its own working and state folders."""

    label: str
    path: Path
    workdir: Path
    banner: set[str] = field(default_factory=set)
    figures: dict[str, list[float]] = field(
        default_factory=lambda: {
            "exit_s": [],
            "answer_s": [],
            "peak_rss_mb": [],
            "cpu_s": [],
            "stop_s": [],
        }
    )

    def environ(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.upper().startswith(_STRIP)}
        env.update(PYTHONPATH=str(self.path), NO_PROXY="127.0.0.1,localhost")
        return env


def write_config(workdir: Path, llm_url: str) -> None:
    workdir.mkdir(parents=True)
    (workdir / "hatchway.toml").write_text(
        f"""
state_dir = "{workdir / "state"}"

[agent]
provider = "default"

[providers.default]
kind = "openai"
base_url = "{llm_url}"
model = "gpt-4o-mini"
""",
        encoding="utf-8",
    )


def chat_run(tree: Tree, stdin: bytes) -> Run:
    """One ``hatchway chat`` with ``stdin`` piped in; times from spawning it."""
    run = Run()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [HATCHWAY, "chat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=tree.workdir,
        env=tree.environ(),
    )

    def read() -> None:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            run.lines.append((time.perf_counter() - started, raw.decode(errors="replace")))

    reader = threading.Thread(target=read)
    reader.start()
    assert proc.stdin is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    run.exit_s = time.perf_counter() - started
    proc.returncode = run.status = os.waitstatus_to_exitcode(status)
    reader.join()
    run.peak_rss_mb = usage.ru_maxrss / 1024
    run.cpu_s = usage.ru_utime + usage.ru_stime
    return run


def measure(tree: Tree) -> None:
    run = chat_run(tree, b"hello\n")
    shown = "".join(line for _, line in run.lines)
    if run.status != 0:
        raise SystemExit(f"{tree.label}: hatchway chat exited {run.status}:\n{shown}")
    answer = [t for t, line in run.lines if line not in tree.banner]
    if ANSWER not in shown or not answer:
        raise SystemExit(f"{tree.label}: hatchway chat printed no answer:\n{shown}")
    tree.figures["exit_s"].append(run.exit_s)
    tree.figures["answer_s"].append(answer[0])
    tree.figures["peak_rss_mb"].append(run.peak_rss_mb)
    tree.figures["cpu_s"].append(run.cpu_s)
    tree.figures["stop_s"].append(stop_s(tree.workdir / "state" / "hatchway-chat.log"))


def stop_s(log: Path) -> float:
    """The last ``App.stop`` in the chat's log: ``app_stopping`` to ``app_stopped``."""
    at: dict[str, datetime] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["event"] in ("app_stopping", "app_stopped"):
            at[event["event"]] = datetime.fromisoformat(event["timestamp"])
    return (at["app_stopped"] - at["app_stopping"]).total_seconds()


def compile_bytecode(path: Path) -> None:
    """``.pyc`` files for ``bot`` and ``channels``, as ``pip install`` writes them (this
    machine sets ``PYTHONDONTWRITEBYTECODE=1``)."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "bot", "channels"],
        check=True,
        cwd=path,
        stdout=subprocess.DEVNULL,
    )


def main(args: argparse.Namespace) -> None:
    print(describe_machine())
    with tempfile.TemporaryDirectory() as tmp, LlmProcess() as llm_url:
        trees = [Tree(label="this tree", path=ROOT, workdir=Path(tmp) / "this")]
        for index, other in enumerate(args.before):
            path = Path(other).resolve()
            label = "before" if len(args.before) == 1 else path.name
            trees.append(Tree(label=label, path=path, workdir=Path(tmp) / f"before{index}"))
        for tree in trees:
            compile_bytecode(tree.path)
            write_config(tree.workdir, llm_url)
            tree.banner = {line for _, line in chat_run(tree, b"").lines}
        for round_ in range(args.repeat):
            for tree in trees if round_ % 2 == 0 else trees[::-1]:  # order alternated
                measure(tree)
    print(
        f"printf 'hello\\n' | hatchway chat, OpenAI-compatible fake; median (min-max) of "
        f"{args.repeat} interleaved rounds:"
    )
    print(f"  {'':<14}" + "".join(f"{tree.label:>28}" for tree in trees))
    units = {"exit_s": "s", "answer_s": "s", "peak_rss_mb": "MB", "cpu_s": "s", "stop_s": "s"}
    for key, unit in units.items():
        cells = []
        for tree in trees:
            values = tree.figures[key]
            cells.append(
                f"{statistics.median(values):8.3f} ({min(values):.3f}-{max(values):.3f}) {unit:<2}"
            )
        print(f"  {key:<14}" + "".join(f"{cell:>28}" for cell in cells))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="rounds (each tree once a round)")
    parser.add_argument(
        "--before",
        action="append",
        default=[],
        help="another checkout to run side by side (PYTHONPATH); may be repeated",
    )
    parser.add_argument("--serve-llm", action="store_true", help=argparse.SUPPRESS)
    parsed = parse_args(parser, smoke={"repeat": 1})
    if parsed.serve_llm:
        asyncio.run(_serve_llm())
    else:
        main(parsed)
