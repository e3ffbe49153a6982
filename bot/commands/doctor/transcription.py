"""The doctor's checks of ``[transcription]`` (only when a provider is configured), one line
per provider of its chain:

* ``kind = "openai"``: the endpoint transcribes a fifth of a second of silence (a WAV made
  here) with the configured model and key: accepted, or why not (the key refused, the
  model or endpoint unknown, the server unreachable);
* ``kind = "embedded"``: the ``voice`` extra is installed (PocketSphinx, soundfile, NumPy),
  and ``ffmpeg`` is on the PATH, without which a video note's or a WebM clip's sound cannot
  be read (a ``⚠``: voice notes still work).

The key goes only to its endpoint and is never printed.
"""

from __future__ import annotations

import io
import os
import wave
from typing import TYPE_CHECKING

from bot.commands.doctor.report import CheckResult
from bot.config.transcription import TranscriptionConfig, TranscriptionProviderConfig
from bot.providers.endpoint import shown_url
from bot.transcription.embedded import ffmpeg_available, missing_packages

if TYPE_CHECKING:
    import aiohttp

#: How long the endpoint gets to answer.
TIMEOUT_S = 30.0
EXTRA_HINT = "pip install 'hatchway[voice]' (or the release's requirements.lock)"


def silence() -> bytes:
    """A fifth of a second of 16 kHz mono silence, as a WAV file."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16_000)
        wav.writeframes(b"\x00\x00" * 3200)
    return out.getvalue()


async def transcription_checks(
    config: TranscriptionConfig, http: aiohttp.ClientSession
) -> list[CheckResult]:
    """One line per provider of the chain (module doc)."""
    results: list[CheckResult] = []
    for name in config.chain():
        table = config.providers[name]
        if table.kind == "embedded":
            results += embedded_checks(name)
        else:
            results.append(await endpoint_check(name, table, http))
    return results


def embedded_checks(name: str) -> list[CheckResult]:
    label = f"transcription {name}"
    missing = missing_packages()
    if missing:
        return [
            CheckResult(
                name=label,
                ok=False,
                detail=f"the offline transcriber needs {', '.join(missing)}, not installed",
                fix=f"{EXTRA_HINT}, or remove transcription.providers.{name}",
            )
        ]
    lines = [CheckResult(name=label, ok=True, detail="the voice extra is installed (PocketSphinx)")]
    if not ffmpeg_available():
        lines.append(
            CheckResult(
                name=label,
                ok=True,
                warning=True,
                detail="ffmpeg is not on the PATH: a video note's sound cannot be read",
                fix="install ffmpeg (Debian: apt-get install ffmpeg)",
            )
        )
    return lines


async def endpoint_check(
    name: str, config: TranscriptionProviderConfig, http: aiohttp.ClientSession
) -> CheckResult:
    import aiohttp

    label = f"transcription {name}"
    url = config.base_url.rstrip("/") + "/audio/transcriptions"
    where = shown_url(url)
    headers = {}
    key = os.environ.get(config.api_key_env, "")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    form = aiohttp.FormData()
    form.add_field("model", config.model)
    form.add_field("response_format", "json")
    form.add_field("file", silence(), filename="silence.wav", content_type="audio/wav")
    try:
        async with http.post(
            url,
            data=form,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=TIMEOUT_S),
            allow_redirects=False,
        ) as response:
            status = response.status
    except (aiohttp.ClientError, TimeoutError) as exc:
        return CheckResult(
            name=label,
            ok=False,
            detail=f"cannot reach {where}: {type(exc).__name__}",
            fix=f"check transcription.providers.{name}.base_url, and that the server runs",
        )
    if 200 <= status < 300:
        return CheckResult(name=label, ok=True, detail=f"{where} transcribes with {config.model}")
    if status in (401, 403):
        fix = (
            f"check the variable {config.api_key_env} (transcription.providers.{name}.api_key_env)"
        )
        return CheckResult(
            name=label, ok=False, detail=f"{where} refused the key (HTTP {status})", fix=fix
        )
    return CheckResult(
        name=label,
        ok=False,
        detail=f"{where} answered HTTP {status} to a test transcription with {config.model}",
        fix=f"check transcription.providers.{name}.base_url and .model",
    )
