"""``hatchway forget --user`` run as an operator runs it: the installed command, a process of
its own, against the database file a running daemon uses."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

WAIT_S = 120.0  # bounds a failure only


def _command() -> list[str]:
    installed = Path(sys.executable).with_name("hatchway")
    return [str(installed)] if installed.exists() else [sys.executable, "-m", "bot.cli"]


async def forget_user(state_dir: Path, user: str) -> str:
    """Run ``hatchway forget --user USER --yes`` on the state in ``state_dir``; what it
    printed. Fails the test when the command fails."""
    config = state_dir / "forget.toml"
    config.write_text(f"state_dir = {str(state_dir)!r}\n", encoding="utf-8")
    process = await asyncio.create_subprocess_exec(
        *_command(),
        "forget",
        "--user",
        user,
        "--yes",
        "--config",
        str(config),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(WAIT_S):
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()
