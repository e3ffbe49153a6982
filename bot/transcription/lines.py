"""What the model and the user read of a voice note.

A transcript is the user's words: the model reads it after whatever the message says, on a
line marked as transcribed, with the note's length::

    [voice note voice.ogg (7 s), transcribed:] please check the deploy status

A note that was not transcribed is one line for the model, why and what to do::

    [voice note voice.ogg (12 min) was not transcribed: it is longer than the 10 min allowed;
    ask the user to type it, or to send a shorter one]

and, where the message brought nothing else to answer, one short line for the user instead
of a turn: ``I couldn't transcribe that voice note: it is longer than 10 min.``
"""

from __future__ import annotations

from bot.envelope import Attachment

_ADVICE = "ask the user to type it, or to send it again"
_SHORTER = "ask the user to type it, or to send a shorter one"


def what(attachment: Attachment) -> str:
    """``voice note`` (recorded as a voice message), ``video note`` or ``audio``."""
    if attachment.voice:
        return "video note" if attachment.kind == "video" else "voice note"
    return "audio"


def length(seconds: float | None) -> str:
    """``7 s``, ``1 min 5 s``, ``10 min``; ``""`` when unknown."""
    if seconds is None:
        return ""
    whole = max(0, round(seconds))
    minutes, rest = divmod(whole, 60)
    if not minutes:
        return f"{rest} s"
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def _label(attachment: Attachment, name: str, seconds: float | None) -> str:
    shown = length(seconds)
    return f"{what(attachment)} {name}" + (f" ({shown})" if shown else "")


def transcribed(attachment: Attachment, name: str, seconds: float | None, text: str) -> str:
    """The model's line of a transcript (module doc)."""
    label = _label(attachment, name, seconds)
    if not text:
        return f"[{label} was transcribed, but no words were recognised in it]"
    return f"[{label}, transcribed:] {text}"


def not_transcribed(
    attachment: Attachment, name: str, seconds: float | None, why: str, *, shorter: bool = False
) -> str:
    """The model's line of a note that was not transcribed."""
    label = _label(attachment, name, seconds)
    return f"[{label} was not transcribed: {why}; {_SHORTER if shorter else _ADVICE}]"


def for_user(attachment: Attachment, why: str) -> str:
    """The user's short line: ``I couldn't transcribe that voice note: <why>.``"""
    return f"I couldn't transcribe that {what(attachment)}: {why}."


def echo(attachment: Attachment, text: str) -> str:
    """The transcript posted back (``transcription.echo``), quoted."""
    quoted = "\n".join(f"> {line}" for line in text.splitlines() or [""])
    return f"Transcript of your {what(attachment)}:\n{quoted}"
