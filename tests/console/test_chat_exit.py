"""How ``hatchway chat`` leaves: once everything is written it ends its process without the
interpreter's teardown (:mod:`bot.ops.process_exit`). Checked from outside a real process:
the database whole and closed, the turn recorded, the log complete, the exit status kept.

The child runs with ``PYTHONVERBOSE=1``, which makes the interpreter's teardown print
``# cleanup[…]`` lines as it clears modules: their absence shows the quick exit was taken.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.console.chat_process import WAIT_S, chat_environ
from tests.ops.conftest import HeldOpenAI

TEARDOWN = "# cleanup["


@dataclass(frozen=True, slots=True, kw_only=True)
class Finished:
    code: int
    stdout: str
    stderr: str


async def chat(
    env: dict[str, str], cwd: Path, stdin: bytes, *, interrupt_when: asyncio.Event | None = None
) -> Finished:
    """``python -m bot.cli chat`` with ``stdin`` piped in; with ``interrupt_when``, SIGINT
    once that event is set (a turn is running)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "chat",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**env, "PYTHONVERBOSE": "1"},
        cwd=str(cwd),
    )
    try:
        async with asyncio.timeout(WAIT_S):
            if interrupt_when is None:
                stdout, stderr = await proc.communicate(stdin)
            else:
                talking = asyncio.create_task(proc.communicate(stdin))
                await interrupt_when.wait()
                proc.send_signal(signal.SIGINT)
                stdout, stderr = await talking
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return Finished(code=proc.returncode, stdout=stdout.decode(), stderr=stderr.decode())


def log_events(state: Path) -> list[dict[str, object]]:
    """The chat's log, every line a whole JSON object; the file ends with a newline."""
    text = (state / "hatchway-chat.log").read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def database(state: Path) -> sqlite3.Connection:
    """The chat's database, checked whole and left closed by the process: no WAL file
    with frames in it (the last connection's close checkpoints and removes it)."""
    wal = state / "hatchway.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    db = sqlite3.connect(state / "hatchway.db")
    assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    return db


async def test_a_one_shot_turn_is_written_whole_before_the_process_ends(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    llm.queue_text("hi there")
    state = tmp_path / "state"

    done = await chat(chat_environ(state, llm_url=llm.base_url), tmp_path, b"hello\n")

    assert done.code == 0, done.stderr[-2000:]
    assert "hi there" in done.stdout
    assert TEARDOWN not in done.stderr
    with contextlib.closing(database(state)) as db:
        assert db.execute("SELECT status FROM inbox").fetchall() == [("done",)]
        history = [json.loads(body) for (body,) in db.execute("SELECT body FROM messages")]
        assert [(m["role"], m["content"]) for m in history] == [
            ("user", "hello"),
            ("assistant", "hi there"),
        ]
        assert db.execute("SELECT status FROM outbox").fetchall() == [("sent",)]
    events = log_events(state)
    assert events[-1]["event"] == "app_stopped"
    assert "app_started" in [e["event"] for e in events]


async def test_ctrl_c_during_a_turn_still_exits_130_with_everything_written(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    llm.hold_next()
    state = tmp_path / "state"

    done = await chat(
        chat_environ(state, llm_url=llm.base_url),
        tmp_path,
        b"hello\n",
        interrupt_when=llm.arrived,
    )

    # Whether the quick exit was taken is not asserted here: after a Ctrl-C a thread may
    # still be finishing (a worker of the cancelled turn), and then the ordinary exit runs,
    # as it should; what matters is the status and that everything was written.
    assert done.code == 130, done.stderr[-2000:]
    # The model is reached while the app may still be starting (recovery runs after the
    # channels start): a Ctrl-C then cuts the start short, and the app stops all the same.
    with contextlib.closing(database(state)) as db:
        (status,) = db.execute("SELECT status FROM inbox").fetchone()
        assert status not in ("received", "processing")  # the cancelled turn was settled
    assert log_events(state)[-1]["event"] == "app_stopped"


async def test_a_configuration_error_still_exits_2(tmp_path: Path) -> None:
    (tmp_path / "hatchway.toml").write_text(
        '[agent]\nprovider = "absent"\n\n[providers.default]\nkind = "openai"\n'
        'base_url = "http://127.0.0.1:9/v1"\nmodel = "gpt-4o-mini"\n',
        encoding="utf-8",
    )

    done = await chat(chat_environ(tmp_path / "state", llm_url=None), tmp_path, b"hello\n")

    assert done.code == 2
    assert "hatchway: configuration error: invalid configuration in hatchway.toml" in done.stderr
    assert "names provider 'absent'" in done.stderr
