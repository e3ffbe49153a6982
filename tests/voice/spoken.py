"""The spoken test clips (``clips/``, made by ``clips/make_clips.sh`` from ``clips.txt``) and
their key words: a transcript is judged by how many of them it holds, not by its exact text."""

from __future__ import annotations

import io
import re
from pathlib import Path

FOLDER = Path(__file__).with_name("clips")

#: Each clip's key words: the sentence's content words, matched as word beginnings
#: ("deploy" matches "deployed").
KEY_WORDS = {
    "deploy": ("please", "check", "deploy", "status", "billing", "service"),
    "dentist": ("remind", "call", "dentist", "tomorrow", "morning"),
    "weather": ("what", "weather", "london", "today"),
}


def clip(name: str, extension: str = "ogg") -> bytes:
    return (FOLDER / f"{name}.{extension}").read_bytes()


def key_words_heard(name: str, transcript: str) -> int:
    """How many of ``name``'s key words begin a word of ``transcript``."""
    words = re.findall(r"[a-z']+", transcript.lower())
    return sum(any(w.startswith(key) for w in words) for key in KEY_WORDS[name])


def opus_seconds(data: bytes) -> float:
    """How long the OGG/Opus stream ``data`` plays, decoded whole by libsndfile (raises
    for what is not a whole OGG/Opus stream)."""
    import soundfile

    if not (data.startswith(b"OggS") and data[28:36] == b"OpusHead"):
        raise ValueError("not an OGG/Opus stream")
    samples, rate = soundfile.read(io.BytesIO(data), dtype="int16")
    return float(len(samples) / rate)
