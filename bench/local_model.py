"""The embedded model (``kind = "embedded"``): load time, first token, tokens/s, peak RSS, and
``printf 'hello\\n' | hatchway chat`` as a user starts it.

* In-process (each run a fresh interpreter, so load and RSS are a cold process's): the
  provider ``hatchway`` uses when none is configured, built and loaded as the factory does,
  - **load**: from building the provider to the model being ready (``warm``);
  - **first token**: a streamed answer to "hello" with the embedded system prompt, from the
    request to its first delta; **answer**: to its end;
  - **tokens/s**: a 128-token reply (``--tokens``), output tokens over its generation time;
  - **stop**: a request with a long prompt (about 500 tokens to read) cancelled 0.3 s after
    it was sent, as ``/stop`` does: from the cancel to the cancelled call returning, which
    is when the model is free (llama.cpp cannot drop a prompt it is reading; ``hatchway
    chat`` says "stopping…" meanwhile), and **after stop**: a "hello" asked then, to its
    end;
  - **peak RSS** of the process (``ru_maxrss``).
* ``hatchway chat`` as a subprocess in an empty directory, with no provider in the
  environment and ``hello`` piped in: from spawning it to its **banner**, to the first byte of
  the **answer** (its first line that an empty-input run does not print), to the **end of
  the answer** (the last byte before end of output), to its **exit**; its peak RSS
  (``wait4``), and the answer's length in characters (the model's answers vary in length,
  and so does the time to the end of one).

Medians of ``--repeat`` runs. Targets on a 2-core machine: first answer byte ≤ 1.5 s and the
whole short answer ≤ 3 s after the process starts; peak RSS ≤ 300 MB.

    python bench/local_model.py [--repeat 5]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field

from bench.machine import describe_machine
from bench.smoke import parse_args

HATCHWAY = str(Path(sys.executable).with_name("hatchway"))
#: About 500 tokens for the model to read before it can be stopped.
STOPPED_PROMPT = " ".join(["the quick brown fox jumps over the lazy dog"] * 50)


# -- in-process -----------------------------------------------------------------------


async def _in_process(tokens: int) -> dict[str, float]:
    from bot.config import parse_settings
    from bot.providers.base import ChatMessage, CompletionRequest
    from bot.providers.embedded import EMBEDDED_SYSTEM_PROMPT, EmbeddedProvider
    from bot.providers.factory import embedded_model_file

    settings = parse_settings({}, environ={})  # no provider configured: the embedded one
    config = settings.providers["default"]
    started = time.perf_counter()
    model_file = embedded_model_file("default", config, settings.state_dir)
    provider = EmbeddedProvider(config, name="default", model_file=model_file)
    provider.start_loading()  # as the factory does when it builds the provider
    await provider.warm()
    loaded = time.perf_counter()

    first: list[float] = []

    async def sink(delta: str) -> None:
        if not first:
            first.append(time.perf_counter())

    asked = time.perf_counter()
    hello = CompletionRequest(
        system=EMBEDDED_SYSTEM_PROMPT, messages=[ChatMessage(role="user", content="hello")]
    )
    await provider.complete(hello, stream=sink)
    answered = time.perf_counter()

    long = CompletionRequest(
        system="",
        messages=[ChatMessage(role="user", content="Write a long story about a dragon.")],
        max_tokens=tokens,
    )
    before = time.perf_counter()
    reply = await provider.complete(long)
    generated = time.perf_counter() - before

    reading = CompletionRequest(
        system=EMBEDDED_SYSTEM_PROMPT,
        messages=[ChatMessage(role="user", content="Summarise: " + STOPPED_PROMPT)],
    )
    stopped = asyncio.create_task(provider.complete(reading))
    await asyncio.sleep(0.3)  # the prompt is being read
    cancelled = time.perf_counter()
    stopped.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await stopped
    free = time.perf_counter()
    await provider.complete(hello)
    after_stop = time.perf_counter() - free
    await provider.aclose()
    if reply.usage is None:
        raise SystemExit("the embedded provider reported no usage: tokens/s cannot be told")
    return {
        "load_s": loaded - started,
        "first_token_s": first[0] - asked,
        "answer_s": answered - asked,
        "tokens_per_s": reply.usage.output_tokens / generated,
        "stop_s": free - cancelled,
        "after_stop_answer_s": after_stop,
        "output_tokens": reply.usage.output_tokens,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def in_process_run(tokens: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", "--tokens", str(tokens)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the in-process run failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# -- hatchway chat ----------------------------------------------------------------------


@dataclass(slots=True)
class ChatRun:
    lines: list[tuple[float, str]] = field(default_factory=list)
    exit_s: float = 0.0
    peak_rss_mb: float = 0.0
    status: int = 0


def _environ(state_dir: str) -> dict[str, str]:
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "HATCHWAY_"))
    }
    environ["HATCHWAY_STATE_DIR"] = state_dir
    return environ


def chat_run(stdin: bytes, workdir: str, state_dir: str) -> ChatRun:
    """One ``hatchway chat`` with ``stdin`` piped in; times from spawning it."""
    run = ChatRun()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [HATCHWAY, "chat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # the banner: on stderr when stdin is not a terminal
        cwd=workdir,
        env=_environ(state_dir),
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
    return run


def chat_figures(repeat: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {
        "banner_s": [],
        "first_answer_byte_s": [],
        "answer_end_s": [],
        "exit_s": [],
        "peak_rss_mb": [],
        "answer_chars": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        workdir, state_dir = f"{tmp}/work", f"{tmp}/state"
        os.mkdir(workdir)
        banner = {line for _, line in chat_run(b"", workdir, state_dir).lines}
        for _ in range(repeat):
            run = chat_run(b"hello\n", workdir, state_dir)
            if run.status != 0:
                raise SystemExit(f"hatchway chat exited {run.status}")
            answer = [(t, line) for t, line in run.lines if line not in banner]
            if not answer:
                raise SystemExit("hatchway chat printed no answer")
            figures["banner_s"].append(run.lines[0][0])
            figures["first_answer_byte_s"].append(answer[0][0])
            figures["answer_end_s"].append(answer[-1][0])
            figures["exit_s"].append(run.exit_s)
            figures["peak_rss_mb"].append(run.peak_rss_mb)
            figures["answer_chars"].append(sum(len(line.strip()) for _, line in answer))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128, help="the long reply's max_tokens")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parse_args(parser, smoke={"repeat": 1, "tokens": 16})
    if args.child:
        print(json.dumps(asyncio.run(_in_process(args.tokens))))
        return
    print(describe_machine())
    runs = [in_process_run(args.tokens) for _ in range(args.repeat)]
    print(f"in-process, median of {args.repeat} fresh processes:")
    for key, unit in (
        ("load_s", "s"),
        ("first_token_s", "s"),
        ("answer_s", "s"),
        ("tokens_per_s", "tokens/s"),
        ("stop_s", "s"),
        ("after_stop_answer_s", "s"),
        ("peak_rss_mb", "MB"),
    ):
        values = [run[key] for run in runs]
        print(f"  {key:<16} {statistics.median(values):8.3f} {unit}  (min {min(values):.3f})")
    print(f"printf 'hello\\n' | hatchway chat, median of {args.repeat} runs:")
    for key, values in chat_figures(args.repeat).items():
        unit = {"mb": "MB", "s": "s"}.get(key.rpartition("_")[2], "")
        print(f"  {key:<20} {statistics.median(values):8.3f} {unit}  (min {min(values):.3f})")


if __name__ == "__main__":
    main()
