"""``bot.ops.process_exit.exit_now`` in fresh interpreters: what it still does before
``os._exit`` (atexit callbacks, buffered output), the status it leaves with, and when it
declines (a thread the interpreter would wait for)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str, *, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter with buffered output (no ``PYTHONUNBUFFERED``) and
    ``PYTHONVERBOSE=1``, whose ``# cleanup[…]`` lines on stderr tell a full teardown."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env.update(PYTHONVERBOSE="1", PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def test_atexit_callbacks_run_and_buffered_output_is_written_before_the_exit() -> None:
    done = run(
        """
        import atexit
        from bot.ops.process_exit import exit_now
        atexit.register(print, "atexit callback ran")
        print("buffered line", end="")
        exit_now(3)
        print("not reached")
        """
    )
    assert done.returncode == 3
    assert done.stdout == "buffered lineatexit callback ran\n"
    assert "# cleanup[" not in done.stderr


def test_a_thread_the_interpreter_would_wait_for_makes_it_return() -> None:
    done = run(
        """
        import sys, threading
        from bot.ops.process_exit import exit_now
        go = threading.Event()
        worker = threading.Thread(target=lambda: (go.wait(), print("worker finished")))
        worker.start()
        exit_now(3)
        print("returned")
        go.set()
        sys.exit(4)
        """
    )
    assert done.returncode == 4
    assert done.stdout == "returned\nworker finished\n"
    assert "# cleanup[" in done.stderr  # the ordinary exit, teardown included


def test_a_daemon_thread_does_not_hold_it() -> None:
    done = run(
        """
        import threading
        from bot.ops.process_exit import exit_now
        threading.Thread(target=threading.Event().wait, daemon=True).start()
        exit_now(0)
        print("not reached")
        """
    )
    assert done.returncode == 0
    assert done.stdout == ""
    assert "# cleanup[" not in done.stderr


def test_output_that_cannot_be_written_makes_the_status_120_as_at_a_normal_exit() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read what the child writes
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = str(ROOT)
    code = textwrap.dedent(
        """
        from bot.ops.process_exit import exit_now
        print("lost")
        exit_now(0)
        """
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            stdout=write_end,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=ROOT,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 120
