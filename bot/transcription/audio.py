"""What an audio file is, from its first bytes, and how long it plays, where the container
says so cheaply (OGG: the last page's granule position; WAV: the data chunk's size).

Nothing here decodes audio: a file's length decides whether it may be sent to a provider
at all (``transcription.max_duration_s``), so it is read before anything else is done.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

#: How much of a file's end is read for the last OGG page (a page is at most ~64 KB).
_TAIL_BYTES = 70_000
_OPUS_RATE = 48_000


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioFile:
    """``container`` (``ogg``, ``wav``, ``mp3``, ``flac``, ``mp4``, ``webm``, or ``""`` for
    what is not audio we know), its media type, whether it is a video container (its sound
    must be taken out for the embedded engine), and ``duration_s`` when the container said."""

    container: str
    mime_type: str
    video: bool
    duration_s: float | None


_KINDS = {
    "ogg": "audio/ogg",
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "flac": "audio/flac",
    "mp4": "audio/mp4",
    "webm": "audio/webm",
}


def sniff(path: Path) -> AudioFile:
    """The audio file at ``path`` as its bytes say (module doc)."""
    with path.open("rb") as handle:
        head = handle.read(64)
        container = _container(head)
        duration = None
        if container == "ogg":
            duration = _ogg_duration(handle)
        elif container == "wav":
            duration = _wav_duration(handle)
    video = container in ("mp4", "webm") and _is_video(path)
    mime = _KINDS.get(container, "application/octet-stream")
    if video:
        mime = mime.replace("audio/", "video/")
    return AudioFile(container=container, mime_type=mime, video=video, duration_s=duration)


def _container(head: bytes) -> str:
    if head.startswith(b"OggS"):
        return "ogg"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "wav"
    if head.startswith(b"fLaC"):
        return "flac"
    if head.startswith(b"ID3") or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "mp3"
    if head[4:8] == b"ftyp":
        return "mp4"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "webm"
    return ""


def _is_video(path: Path) -> bool:
    """Whether an MP4 or WebM holds a video track (its handler ``vide``, or a WebM video
    codec id), read from the first megabyte."""
    with path.open("rb") as handle:
        data = handle.read(1024 * 1024)
    return b"vide" in data or b"V_VP8" in data or b"V_VP9" in data or b"V_AV1" in data


def _ogg_duration(handle: BinaryIO) -> float | None:
    handle.seek(0)
    first = handle.read(4096)
    rate = _OPUS_RATE
    pre_skip = 0
    at = first.find(b"OpusHead")
    if at >= 0 and len(first) >= at + 16:
        pre_skip = int(struct.unpack_from("<H", first, at + 10)[0])
    else:
        vorbis = first.find(b"\x01vorbis")
        if vorbis < 0 or len(first) < vorbis + 16:
            return None
        rate = int(struct.unpack_from("<I", first, vorbis + 12)[0]) or _OPUS_RATE
    handle.seek(0, 2)
    size = handle.tell()
    handle.seek(max(0, size - _TAIL_BYTES))
    tail = handle.read()
    last = tail.rfind(b"OggS")
    if last < 0 or len(tail) < last + 14:
        return None
    granule = int(struct.unpack_from("<q", tail, last + 6)[0])
    if granule < 0:
        return None
    return max(0.0, (granule - pre_skip) / rate)


def _wav_duration(handle: BinaryIO) -> float | None:
    handle.seek(12)
    byte_rate = 0
    while True:
        chunk = handle.read(8)
        if len(chunk) < 8:
            return None
        tag, size = chunk[:4], struct.unpack("<I", chunk[4:])[0]
        if tag == b"fmt ":
            fmt = handle.read(size)
            if len(fmt) < 12:
                return None
            byte_rate = int(struct.unpack_from("<I", fmt, 8)[0])
            continue
        if tag == b"data":
            return size / byte_rate if byte_rate else None
        handle.seek(size + (size & 1), 1)
