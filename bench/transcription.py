"""What the offline transcriber costs: seconds of audio per second, memory, and how many of
the spoken clips' key words it hears.

Each clip of ``tests/voice/clips`` (OGG/Opus voice notes, and an MP4 video note whose sound
ffmpeg takes out) is transcribed by :mod:`bot.transcription.embedded_child` exactly as the
daemon runs it: ``python -I`` in a child process of its own, under the same limits, one at a
time. For each run it prints the audio's length, the wall time, the child's CPU time, the
audio seconds transcribed per wall second and per CPU second (the CPU figure holds on a busy
machine, the wall figure does not), the child's peak resident memory (``wait4``), and the key
words heard. Without ``--smoke`` it also transcribes a note of about a minute (the clips
joined, repeated), which shows the rate once the model's load (a second or two) is spread.

    python bench/transcription.py [--smoke]

Needs the voice extra (``pip install 'hatchway[voice]'``). Printed, never asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import os
import subprocess
import tempfile
import time

from bot.transcription.embedded import CHILD
from tests.voice.spoken import FOLDER, KEY_WORDS, key_words_heard


def run(path: Path, max_s: float = 600) -> tuple[dict[str, object], float, float, float]:
    """The child's answer, its wall and CPU seconds, and its peak RSS in MB."""
    env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C.UTF-8"}
    env |= {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    command = [sys.executable, "-I", str(CHILD), str(path), f"{max_s:g}", "300"]
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, env=env, stdin=subprocess.DEVNULL)
    assert child.stdout is not None
    out = child.stdout.read()
    _, _, usage = os.wait4(child.pid, 0)
    child.returncode = 0
    wall = time.perf_counter() - started
    cpu = usage.ru_utime + usage.ru_stime
    return json.loads(out), wall, cpu, usage.ru_maxrss / 1024


def minute_long(folder: Path) -> Path:
    """The clips joined (with a second of silence between) until about a minute long."""
    import numpy as np
    import soundfile

    parts = []
    for name in KEY_WORDS:
        data, rate = soundfile.read(FOLDER / f"{name}.ogg", dtype="float32")
        parts += [data, np.zeros(rate, dtype="float32")]
    one = np.concatenate(parts)
    joined = np.concatenate([one] * max(1, round(60 * rate / len(one))))
    path = folder / "minute.wav"
    soundfile.write(path, joined, rate)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="the short clips only")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    print(
        f"{'clip':<14} {'audio s':>8} {'wall s':>7} {'cpu s':>6} {'audio/wall':>10}"
        f" {'audio/cpu':>9} {'peak MB':>8}  key words"
    )
    heard_total = words_total = 0
    clips = [(n, FOLDER / f"{n}.ogg") for n in KEY_WORDS] + [("dentist", FOLDER / "dentist.mp4")]
    with tempfile.TemporaryDirectory() as folder:
        if not args.smoke:
            clips.append(("minute", minute_long(Path(folder))))
        for name, path in clips:
            answer, wall, cpu, peak = run(path)
            if "error" in answer:
                print(f"{path.name:<14} error: {answer['error']}")
                continue
            seconds = float(str(answer["duration_s"]))
            text = str(answer["text"])
            if name in KEY_WORDS:
                heard = key_words_heard(name, text)
                heard_total += heard if path.suffix == ".ogg" else 0
                words_total += len(KEY_WORDS[name]) if path.suffix == ".ogg" else 0
                words = f"{heard}/{len(KEY_WORDS[name])}: {text}"
            else:
                words = f"{len(text.split())} words"
            print(
                f"{path.name:<14} {seconds:>8.1f} {wall:>7.1f} {cpu:>6.1f} {seconds / wall:>10.2f}"
                f" {seconds / cpu:>9.2f} {peak:>8.0f}  {words}"
            )
    print(f"key words heard in the voice notes: {heard_total} of {words_total}")


if __name__ == "__main__":
    main()
