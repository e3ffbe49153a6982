"""A voice note transcribed offline, in a child process:
``python -I embedded_child.py FILE MAX_SECONDS CPU_SECONDS``.

The audio is decoded by libsndfile (``soundfile``: OGG/Opus and Vorbis, WAV, FLAC, MP3) or,
for what it cannot read (a video note's MP4, WebM), by ``ffmpeg`` when it is installed;
mixed down to mono, filtered and resampled to 16 kHz with NumPy, and decoded by PocketSphinx
with the US English model its wheel bundles. This process runs with an address-space and a
CPU-time limit and no environment of the daemon's (no secret reaches it); it imports nothing
of hatchway and prints one JSON object: ``{"text": "...", "duration_s": n}`` or
``{"error": "<one sentence>"}``.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from typing import Any

#: The child's address-space limit: PocketSphinx's model and a 10-minute note fit easily.
MEMORY_BYTES = 1024 * 1024 * 1024
RATE = 16_000
#: The most audio decoded: the daemon refuses longer notes before starting the child; this
#: bounds what a file that lied about its length can cost.
HARD_MAX_S = 3600


def _limit(cpu_s: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))


def _samples(path: str, max_s: float) -> tuple[Any, str | None]:
    """The audio at ``path`` as 16 kHz mono float samples, or an error sentence."""
    import numpy as np

    try:
        import soundfile
    except ImportError:
        return None, "the voice extra is not installed (pip install 'hatchway[voice]')"
    try:
        info = soundfile.info(path)
    except (RuntimeError, soundfile.LibsndfileError):
        return _ffmpeg_samples(path, max_s)
    if info.frames > max_s * info.samplerate:
        return None, f"it is longer than the {max_s:g} seconds allowed"
    data, rate = soundfile.read(path, dtype="float32", always_2d=True)
    return _resampled(np.asarray(data).mean(axis=1), int(rate)), None


def _ffmpeg_samples(path: str, max_s: float) -> tuple[Any, str | None]:
    import numpy as np

    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        return None, "its sound cannot be read without ffmpeg, which is not installed"
    command = [
        ffmpeg, "-nostdin", "-loglevel", "error", "-i", path, "-vn", "-ac", "1",
        "-ar", str(RATE), "-t", str(max_s + 1), "-f", "s16le", "-",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, check=False, stdin=subprocess.DEVNULL)
    if done.returncode != 0 or not done.stdout:
        return None, "its sound could not be read"
    samples = np.frombuffer(done.stdout, dtype="<i2").astype("float32") / 32768
    if len(samples) > max_s * RATE:
        return None, f"it is longer than the {max_s:g} seconds allowed"
    return samples, None


def _resampled(mono: Any, rate: int) -> Any:
    """``mono`` at 16 kHz: low-passed below the new Nyquist frequency, then interpolated."""
    import numpy as np

    if rate == RATE:
        return mono
    if rate > RATE:
        taps = np.arange(101) - 50
        kernel = np.sinc(2 * 7600 / rate * taps) * np.hamming(101)
        mono = np.convolve(mono, kernel / kernel.sum(), mode="same")
    count = int(len(mono) * RATE / rate)
    return np.interp(np.arange(count) * (rate / RATE), np.arange(len(mono)), mono)


def transcribe(path: str, max_s: float) -> dict[str, object]:
    import numpy as np

    samples, error = _samples(path, min(max_s, HARD_MAX_S))
    if error is not None:
        return {"error": error}
    duration = len(samples) / RATE
    peak = float(np.abs(samples).max()) if len(samples) else 0.0
    if peak < 1e-4:
        return {"text": "", "duration_s": duration}
    pcm = (np.clip(samples / peak * 0.9, -1, 1) * 32767).astype("<i2").tobytes()
    try:
        from pocketsphinx import Decoder
    except ImportError:
        return {"error": "the voice extra is not installed (pip install 'hatchway[voice]')"}
    decoder = Decoder(samprate=RATE, loglevel="FATAL")
    decoder.start_utt()
    decoder.process_raw(pcm, full_utt=True)
    decoder.end_utt()
    hypothesis = decoder.hyp()
    return {"text": hypothesis.hypstr if hypothesis else "", "duration_s": duration}


def main(argv: list[str]) -> int:
    path, max_s, cpu_s = argv[1], float(argv[2]), int(argv[3])
    _limit(cpu_s)
    try:
        result = transcribe(path, max_s)
    except MemoryError:
        result = {"error": "transcribing it needed more memory than is allowed"}
    except Exception:
        # hostile or damaged input: whatever a decoder raises on it is unreadable audio
        result = {"error": "its sound could not be read"}
    sys.stdout.write(json.dumps(result, ensure_ascii=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
