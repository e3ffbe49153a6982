"""What a file change's diff costs an approval card, at the sizes ``file_write`` accepts.

For each case, the preview a card gets (:func:`bot.tools.builtin.file_diff.preview`: the path
resolved, the file read and hashed, the diff computed in a worker thread) and the card's
summary of it (:func:`bot.approval.summary.describe`: masked, escaped, bounded), on a real
file in a temporary workspace; prints median and max wall clock per case and the card's
first diff line:

* a 20 KB file with one line edited (the common case);
* the largest diffed case: 200 KB and 5,000 lines on both sides, every line changed;
* the worst case ``file_write`` accepts: a 1 MB file overwritten with 1 MB of other content
  (above the diff limits: "too large to diff", so only read and hashed);
* 1 MB of new content for a new file (its head).

    python bench/file_diff.py [--runs 20]

Target on a 2-core machine: every case under the 2 s diff time limit; the 20 KB edit under
10 ms.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import statistics
import tempfile
import time

from bench.machine import describe_machine
from bench.smoke import parse_args
from bot.approval.summary import describe
from bot.tools.builtin.file_diff import MAX_DIFF_BYTES, MAX_DIFF_LINES, preview
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import ToolContext
from bot.turn import TurnIdentity
from tests.tools.harness import make_envelope

MB = 1024 * 1024


def _lines(count: int, width: int, tag: str) -> str:
    body = "x" * max(0, width - len(tag) - 8)
    return "".join(f"{tag}{i:06d} {body}\n" for i in range(count))


def cases() -> list[tuple[str, bytes | None, str]]:
    """(name, the file now (None: no file), the new content)."""
    small = _lines(400, 50, "l")  # 20 KB
    edited = small.replace("l000200", "EDITED0200", 1)
    width = MAX_DIFF_BYTES // MAX_DIFF_LINES - 1
    old_big = _lines(MAX_DIFF_LINES - 1, width, "a")
    new_big = _lines(MAX_DIFF_LINES - 1, width, "b")
    one_mb_old = _lines(MB // 64, 64, "o")
    one_mb_new = _lines(MB // 64, 64, "n")
    return [
        ("20 KB, one line edited", small.encode(), edited),
        (
            f"{len(old_big) // 1000} KB x {MAX_DIFF_LINES:,} lines, all changed",
            old_big.encode(),
            new_big,
        ),
        ("1 MB overwritten (too large to diff)", one_mb_old.encode(), one_mb_new),
        ("1 MB new file (its head)", None, one_mb_new),
    ]


async def measure(root: Path, runs: int) -> None:
    workspace = Workspace(root=root, allow_sensitive_files=False, scope="shared")
    context = ToolContext(turn=TurnIdentity(turn_id="t", session_key="s", envelope=make_envelope()))
    print(f"{'case':<44} {'median ms':>10} {'max ms':>10}  first line on the card")
    for name, old, new in cases():
        file = root / "target.txt"
        if old is None:
            file.unlink(missing_ok=True)
        else:
            file.write_bytes(old)
        times: list[float] = []
        first = ""
        for _ in range(runs):
            started = time.perf_counter()
            shown = await preview(workspace, context, "target.txt", new)
            view = describe({"path": "target.txt"}, diff=shown.diff)
            times.append((time.perf_counter() - started) * 1000)
            first = view.lines[1] if len(view.lines) > 1 else ""
        print(f"{name:<44} {statistics.median(times):>10.1f} {max(times):>10.1f}  {first[:60]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parse_args(parser, smoke={"runs": 2})
    print(describe_machine())
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(measure(Path(folder), args.runs))


if __name__ == "__main__":
    main()
