"""hatchway beside nanobot (``nanobot-ai`` from PyPI): the same workloads against the same
fake model, side by side, so the ratio can be measured again at any time.

One fake model (``bench/peer_model.py``: the loopback OpenAI fake answering by rule, in a
process of its own) serves both bots over loopback HTTP. Each bot runs in processes of its
own, with its default settings and its own real provider code, fresh state per run:

* **one-shot CLI turn**: ``printf 'hello\\n' | hatchway chat`` (a ``hatchway.toml`` naming
  the fake as an ``openai`` provider) against ``nanobot agent -m hello --no-markdown`` (a
  ``config.json`` naming the fake as nanobot's ``custom`` OpenAI-compatible provider):
  wall time from spawn to exit, CPU (user + system), peak RSS, after one warm-up run each
  (hatchway's database, nanobot's workspace templates);
* **throughput, plain**: ``--conversations`` messages at once, each a new conversation, one
  model request each (``bench/peer_hatchway.py``: the real ``App`` with an in-process
  channel; ``bench/peer_nanobot.py``: ``nanobot.Nanobot.run`` per session, the call its
  gateway's channels end in);
* **throughput, one tool call**: the same, with a message the fake model answers by calling
  the bot's file-reading tool (hatchway ``file_read``, nanobot ``read_file``) on a small file
  in the workspace, then answering from the result (checked).

Rounds are interleaved and the order alternates; medians are printed with the ratio.

nanobot lives in a venv of its own, never the project's: ``--venv`` (default
``/tmp/peers-venv``) is created with ``python -m venv`` and ``pip install nanobot-ai`` when
it has no ``nanobot`` or another version than ``--nanobot-spec`` pins (``nanobot-ai==0.3.5``
by default: the anchor docs/performance.md's figures stand beside). The runs need no network:
both bots talk to the loopback fake only, with no provider keys or proxies in their
environment. CI runs only ``--smoke``, which needs no nanobot.

Every run's line carries the load average at its start; the summary gives each figure's
median, the load averages it was measured at, and for the one-shot the ratio of hatchway's
wall time to nanobot's, per interleaved pair (median, min–max): the figure to read on a
shared machine, where each pair ran under the same load.

    python bench/peers.py [--rounds 3] [--conversations 100] [--oneshot-repeat 5]
                          [--venv /tmp/peers-venv] [--only oneshot|plain|tool]

``--smoke`` runs hatchway's side only, once each and small, and says that nanobot was
skipped: it neither installs nor runs nanobot.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from bench.machine import describe_machine
from bench.peer_model import ANSWER, NOTE, NOTE_TEXT
from bench.smoke import parse_args

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
HATCHWAY = str(Path(sys.executable).with_name("hatchway"))
TEXTS = {"plain": "hello", "tool": "what does the note say?"}
_STRIP = ("HATCHWAY_", "OPENAI_", "ANTHROPIC_", "NANOBOT_", "HTTP_PROXY", "HTTPS_PROXY")
Figures = dict[str, float]
#: (figure, label, higher is better)
ONESHOT_FIGURES = [
    ("wall_s", "wall s", False),
    ("cpu_s", "CPU s", False),
    ("peak_rss_mb", "peak RSS MB", False),
]
THROUGHPUT_FIGURES = [
    ("turns_per_s", "turns/s", True),
    ("cpu_ms_per_turn", "CPU ms/turn", False),
    ("peak_rss_mb", "peak RSS MB", False),
]


def environ(home: Path) -> dict[str, str]:
    """No provider keys or proxies; ``HOME`` in the run's folder (nanobot writes there);
    hatchway imported from this tree."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(_STRIP)}
    env.update(HOME=str(home), NO_PROXY="127.0.0.1,localhost", PYTHONPATH=str(ROOT))
    return env


def ensure_venv(venv: Path, spec: str) -> Path:
    """The venv's python, installing ``spec`` into a new venv first when it has no nanobot,
    or into it again when it holds another version than ``spec`` pins."""
    python = venv / "bin" / "python"
    if not (venv / "bin" / "nanobot").exists():
        print(f"creating {venv} and installing {spec} into it (not the project's venv)")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", spec], check=True)
    elif "==" in spec and nanobot_version(python) != spec.split("==", 1)[1]:
        print(f"{venv} holds nanobot-ai {nanobot_version(python)}: installing {spec} into it")
        subprocess.run([str(python), "-m", "pip", "install", "-q", spec], check=True)
    return python


def nanobot_version(python: Path) -> str:
    return subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('nanobot-ai'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def load_average() -> float:
    """The 1-minute load average, printed beside each run's figures."""
    return os.getloadavg()[0]


@contextmanager
def model_server() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(BENCH / "peer_model.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def nanobot_config(folder: Path, base_url: str) -> Path:
    workspace = folder / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / NOTE).write_text(NOTE_TEXT)
    config = {
        "agents": {
            "defaults": {
                "workspace": str(workspace),
                "model": "gpt-4o-mini",
                "provider": "custom",
                "timezone": "UTC",
            }
        },
        "providers": {"custom": {"apiKey": "bench", "apiBase": base_url}},
    }
    path = folder / "config.json"
    path.write_text(json.dumps(config))
    return path


def hatchway_config(folder: Path, base_url: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hatchway.toml").write_text(
        f'state_dir = "{folder / "state"}"\n\n'
        f'[providers.default]\nkind = "openai"\nbase_url = "{base_url}"\n'
        'model = "gpt-4o-mini"\n'
    )


# -- throughput -------------------------------------------------------------------------


def throughput_run(bot: str, python: Path, base_url: str, kind: str, n: int) -> Figures:
    """One fresh process of ``bot`` running ``n`` conversations of ``kind`` at once."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if bot == "nanobot":
            config = nanobot_config(folder, base_url)
            command = [str(python), str(BENCH / "peer_nanobot.py"), "--config", str(config)]
        else:
            (folder / NOTE).write_text(NOTE_TEXT)
            command = [sys.executable, str(BENCH / "peer_hatchway.py"), "--base-url", base_url]
            command += ["--workspace", str(folder)]
        command += ["--conversations", str(n), "--text", TEXTS[kind]]
        load = load_average()
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=environ(folder),
            cwd=folder,
            timeout=1200,
        )
    if done.returncode != 0:
        raise SystemExit(f"{bot} {kind}: exit {done.returncode}\n{done.stderr[-3000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    answers = figures.pop("answers")
    expected = ANSWER if kind == "plain" else "the-note-says-hello"  # the tool really ran
    if figures["turns"] != n or not all(expected in a for a in answers):
        raise SystemExit(f"{bot} {kind}: unexpected answers {answers!r} ({figures})")
    return {**{k: float(v) for k, v in figures.items()}, "load": load}


# -- one-shot ---------------------------------------------------------------------------


def oneshot_runner(bot: str, python: Path, folder: Path, base_url: str) -> Callable[[], Figures]:
    if bot == "nanobot":
        config = nanobot_config(folder, base_url)
        command = [str(python.with_name("nanobot")), "agent", "-m", "hello", "--no-markdown"]
        command += ["-c", str(config)]
        stdin = b""
    else:
        hatchway_config(folder, base_url)
        command, stdin = [HATCHWAY, "chat"], b"hello\n"
    return lambda: timed(command, stdin, folder)


def timed(command: list[str], stdin: bytes, folder: Path) -> Figures:
    """Spawn → exit wall time, the child's CPU and peak RSS (from ``wait4``)."""
    load = load_average()
    started = time.perf_counter()
    proc = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=folder,
        env=environ(folder),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0 or ANSWER.encode() not in out:
        raise SystemExit(f"{command[0]} exited {code}:\n{out.decode()[-2000:]}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "load": load,
    }


# -- report -----------------------------------------------------------------------------


def show(title: str, runs: dict[str, list[Figures]], keys: list[tuple[str, str, bool]]) -> None:
    """Medians per bot, and hatchway's advantage (>1 = hatchway better) per figure, with the
    load averages the runs started at."""
    loads = [r["load"] for rs in runs.values() for r in rs]
    print(f"\n{title}, load average {min(loads):.2f}-{max(loads):.2f}")
    if "nanobot" not in runs:
        for key, label, _ in keys:
            h = statistics.median(r[key] for r in runs["hatchway"])
            print(f"  {label:<22} hatchway {h:10.3f}")
        return
    for key, label, higher_is_better in keys:
        h = statistics.median(r[key] for r in runs["hatchway"])
        n = statistics.median(r[key] for r in runs["nanobot"])
        ratio = h / n if higher_is_better else n / h
        print(f"  {label:<22} hatchway {h:10.3f}   nanobot {n:10.3f}   hatchway {ratio:5.1f}x")


def main(args: argparse.Namespace) -> None:
    print(describe_machine())
    if args.smoke:
        python = Path(sys.executable)  # not used: no nanobot run
        print(f"nanobot: skipped (--smoke installs and runs no peer); hatchway from {ROOT}")
    else:
        python = ensure_venv(Path(args.venv), args.nanobot_spec)
        print(f"nanobot-ai {nanobot_version(python)} from {python}; hatchway from {ROOT}")
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "bot", "channels", "tests/fakes"],
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    bots = ["hatchway"] if args.smoke else ["hatchway", "nanobot"]
    with model_server() as base_url, tempfile.TemporaryDirectory() as tmp:
        if args.only in (None, "oneshot"):
            runners = {b: oneshot_runner(b, python, Path(tmp) / b, base_url) for b in bots}
            for runner in runners.values():
                runner()  # warm-up: database, workspace templates
            oneshot: dict[str, list[Figures]] = {b: [] for b in bots}
            for r in range(args.oneshot_repeat):
                for bot in bots if r % 2 == 0 else bots[::-1]:
                    figures = runners[bot]()
                    oneshot[bot].append(figures)
                    print(
                        f"  one-shot round {r + 1} {bot:<8} wall {figures['wall_s']:6.3f} s"
                        f"  CPU {figures['cpu_s']:6.3f} s"
                        f"  peak RSS {figures['peak_rss_mb']:5.1f} MB"
                        f"  load average {figures['load']:5.2f}"
                    )
            show(
                f"one-shot CLI turn, median of {args.oneshot_repeat}",
                oneshot,
                ONESHOT_FIGURES,
            )
            if "nanobot" in oneshot:
                pairs = [
                    h["wall_s"] / n["wall_s"]
                    for h, n in zip(oneshot["hatchway"], oneshot["nanobot"], strict=True)
                ]
                print(
                    f"  hatchway wall / nanobot wall, per interleaved pair: median "
                    f"{statistics.median(pairs):.3f} ({min(pairs):.3f}-{max(pairs):.3f})"
                    f"  [{' '.join(f'{x:.2f}' for x in pairs)}]"
                )
        for kind in ("plain", "tool"):
            if args.only not in (None, kind):
                continue
            runs: dict[str, list[Figures]] = {b: [] for b in bots}
            for r in range(args.rounds):
                for bot in bots if r % 2 == 0 else bots[::-1]:
                    figures = throughput_run(bot, python, base_url, kind, args.conversations)
                    runs[bot].append(figures)
                    print(
                        f"  {kind} round {r + 1} {bot:<8} {figures['turns_per_s']:8.1f} turns/s"
                        f"  CPU {figures['cpu_ms_per_turn']:6.2f} ms/turn"
                        f"  peak RSS {figures['peak_rss_mb']:5.0f} MB"
                        f"  load average {figures['load']:5.2f}"
                    )
            show(
                f"throughput, {args.conversations} conversations at once, "
                f"{'1 tool call + answer' if kind == 'tool' else 'plain answer'}, "
                f"median of {args.rounds}",
                runs,
                THROUGHPUT_FIGURES,
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="throughput runs per bot")
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--oneshot-repeat", type=int, default=5)
    parser.add_argument("--venv", default="/tmp/peers-venv")
    parser.add_argument("--nanobot-spec", default="nanobot-ai==0.3.5")
    parser.add_argument("--only", choices=("oneshot", "plain", "tool"))
    main(parse_args(parser, smoke={"rounds": 1, "conversations": 10, "oneshot_repeat": 1}))
