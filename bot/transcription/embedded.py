"""The embedded offline transcriber: PocketSphinx in a limited child process.

:mod:`bot.transcription.embedded_child` does the decoding; this side starts it with an
empty environment (no secret reaches it), one at a time in the whole daemon (a second note
waits for the first: each child takes a core and a few hundred megabytes), waits at most
the provider's ``timeout_s`` and kills it when it overruns or the turn is cancelled.
Neither this module nor the daemon imports PocketSphinx: a text chat never loads it.

Why PocketSphinx: it is the one speech recogniser on the package index whose wheel bundles
a model under a licence that can be shown (BSD, Carnegie Mellon University's US English
acoustic model, dictionary and language model). Its accuracy is far below Whisper's
(docs/attachments.md gives the figures): it is the fallback that keeps voice working on an
offline machine, not the recommended provider.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import math
import os
import shutil
import sys
from pathlib import Path

import structlog

from bot.config.transcription import TranscriptionProviderConfig
from bot.errors import TranscriptionError
from bot.transcription.base import Clip, Transcript

log = structlog.get_logger(__name__)

CHILD = Path(__file__).with_name("embedded_child.py")


def missing_packages() -> list[str]:
    """The packages of the ``voice`` extra that are not installed (the doctor's check)."""
    return [
        name
        for name in ("pocketsphinx", "soundfile", "numpy")
        if importlib.util.find_spec(name) is None
    ]


def ffmpeg_available() -> bool:
    """Whether ``ffmpeg`` is on the PATH (needed for a video note's or a WebM's sound)."""
    return shutil.which("ffmpeg") is not None


class EmbeddedTranscriber:
    """``[transcription.providers.<name>]`` of ``kind = "embedded"`` (module doc)."""

    def __init__(self, name: str, config: TranscriptionProviderConfig, *, max_s: float) -> None:
        self.name = name
        self.model = config.model
        self._timeout_s = config.timeout_s
        self._max_s = max_s
        self._one_at_a_time = asyncio.Semaphore(1)

    async def transcribe(self, clip: Clip) -> Transcript:
        async with self._one_at_a_time:
            out, returncode = await self._run(clip)
        try:
            result = json.loads(out)
        except ValueError:
            result = None
        if not isinstance(result, dict):
            # killed by its CPU or memory limit before it could answer
            log.warning("embedded_transcriber_failed", returncode=returncode)
            raise TranscriptionError("transcribing it needed more memory or time than is allowed")
        if "error" in result:
            raise TranscriptionError(str(result["error"]))
        return Transcript(
            text=" ".join(str(result["text"]).split()),
            duration_s=float(result["duration_s"]),
            provider=self.name,
            model=self.model,
        )

    async def _run(self, clip: Clip) -> tuple[bytes, int | None]:
        env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C.UTF-8"}
        # one thread each: the daemon's other work keeps its cores
        env |= {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                str(CHILD),
                str(clip.path),
                f"{self._max_s:g}",
                str(math.ceil(self._timeout_s) + 1),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                env=env,
            )
        except OSError:
            raise TranscriptionError("the offline transcriber could not be started") from None
        try:
            async with asyncio.timeout(self._timeout_s):
                out, _ = await process.communicate()
        except TimeoutError:
            raise TranscriptionError(
                f"transcribing it took longer than {self._timeout_s:g} s, so it was stopped"
            ) from None
        finally:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        return out, process.returncode
