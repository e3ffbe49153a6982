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
import importlib.util
import math
import os
import shutil
from pathlib import Path

from bot.config.transcription import TranscriptionProviderConfig
from bot.errors import TranscriptionError
from bot.limited_child import ChildWords, ask_child
from bot.transcription.base import Clip, Transcript

CHILD = Path(__file__).with_name("embedded_child.py")

_WORDS = ChildWords(
    error=TranscriptionError,
    unstartable="the offline transcriber could not be started",
    took_too_long="transcribing it took longer than {timeout_s} s, so it was stopped",
    overran="transcribing it needed more memory or time than is allowed",
    log_event="embedded_transcriber_failed",
)


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
        env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C.UTF-8"}
        # one thread each: the daemon's other work keeps its cores
        env |= {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        args = [str(clip.path), f"{self._max_s:g}", str(math.ceil(self._timeout_s) + 1)]
        async with self._one_at_a_time:
            result = (
                await ask_child(CHILD, args, timeout_s=self._timeout_s, words=_WORDS, env=env)
            ).answer
        if "error" in result:
            raise TranscriptionError(str(result["error"]))
        return Transcript(
            text=" ".join(str(result["text"]).split()),
            duration_s=float(result["duration_s"]),
            provider=self.name,
            model=self.model,
        )
