"""Asking a limited child process for one answer: the daemon's side of the children that
read what strangers send (images, PDFs, voice notes).

Each child is a script run as ``python -I script ARGS…`` with a small environment of its own
(no secret reaches it), which sets its own address-space and CPU limits and prints one JSON
object on its first line, optionally followed by raw bytes (an encoded image). This side
starts it, reads at most ``max_output`` bytes of what it prints, kills it when it overruns
``timeout_s`` or the caller is cancelled, and turns every way it can fail into the caller's
error with the caller's sentence: it could not start, it took too long, it died before it
answered (its CPU or memory limit). An answer carrying ``"error"`` is returned as it is: what
it means is the caller's to say.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import structlog

from bot.errors import HatchwayError

log = structlog.get_logger(__name__)

#: The environment a child gets unless its caller says otherwise.
PLAIN_ENV: Mapping[str, str] = {"PATH": os.defpath, "LC_ALL": "C.UTF-8"}

#: What a child may print unless its caller says otherwise: far above any JSON answer.
MAX_OUTPUT = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildWords:
    """How a caller's failures read: ``error`` is raised with one of the sentences
    (``took_too_long`` may hold ``{timeout_s}``); ``log_event`` names the warning logged
    when the child died before answering."""

    error: type[HatchwayError]
    unstartable: str
    took_too_long: str
    overran: str
    log_event: str


class ChildAnswer(NamedTuple):
    """The JSON object the child printed first, and the bytes it printed after that line."""

    answer: dict[str, Any]
    rest: bytes


async def ask_child(
    script: Path,
    args: Sequence[str],
    *,
    timeout_s: float,
    words: ChildWords,
    env: Mapping[str, str] = PLAIN_ENV,
    max_output: int = MAX_OUTPUT,
) -> ChildAnswer:
    """Run ``script`` with ``args`` and return its answer (module doc). Raises
    ``words.error``."""
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            str(script),
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=dict(env),
        )
    except OSError:
        raise words.error(words.unstartable) from None
    try:
        async with asyncio.timeout(timeout_s):
            out = await _read_bounded(process, max_output)
            if len(out) >= max_output:
                process.kill()  # more than any answer: not waited for
            await process.wait()
    except TimeoutError:
        raise words.error(words.took_too_long.format(timeout_s=f"{timeout_s:g}")) from None
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    head, _, rest = out.partition(b"\n")
    try:
        answer = json.loads(head)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        # killed by its CPU or memory limit before it could answer
        log.warning(words.log_event, returncode=process.returncode, output_bytes=len(out))
        raise words.error(words.overran)
    return ChildAnswer(answer, rest)


async def _read_bounded(process: asyncio.subprocess.Process, most: int) -> bytes:
    """The child's stdout to its end, at most ``most`` bytes of it."""
    stream = process.stdout
    if stream is None:
        return b""
    out = bytearray()
    while len(out) <= most:
        chunk = await stream.read(most + 1 - len(out))
        if not chunk:
            break
        out += chunk
    return bytes(out[:most])
