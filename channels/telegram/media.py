"""The files a Telegram message carries, as :class:`~bot.envelope.Attachment` values.

Each kind of media Telegram sends (photo, document, audio, video, voice note, animation,
video note, sticker) becomes one attachment whose ``ref`` is the Telegram ``file_id``: the
bytes are fetched when the turn starts (:mod:`channels.telegram.downloads`). A voice note
and a video note are marked ``voice``, and each audio or video carries its length, so that
:mod:`bot.transcription` can transcribe them. Media Telegram
sends without a name get one (``photo.jpg``: a photo is always a JPEG Telegram re-encoded).
"""

from __future__ import annotations

from datetime import timedelta

from telegram import Message

from bot.envelope import Attachment

#: Names for media Telegram sends without one (a photo is always a JPEG it re-encoded).
_UNNAMED = {"photo": "photo.jpg", "voice": "voice.ogg", "video_note": "video_note.mp4"}


def attachments_of(message: Message) -> tuple[Attachment, ...]:
    """The files a message carries; ``ref`` is the Telegram ``file_id``, downloaded when the
    turn starts (:mod:`channels.telegram.downloads`). A photo comes in several sizes: the
    largest is the one kept."""
    found: list[Attachment] = []
    if message.photo:
        largest = max(message.photo, key=lambda p: p.width * p.height)
        found.append(
            Attachment(
                kind="image",
                name=_UNNAMED["photo"],
                mime_type="image/jpeg",
                size=largest.file_size,
                ref=largest.file_id,
            )
        )
    if message.document is not None:
        doc = message.document
        found.append(
            Attachment(
                kind="file",
                name=doc.file_name or "",
                mime_type=doc.mime_type or "",
                size=doc.file_size,
                ref=doc.file_id,
            )
        )
    for kind, media in (("audio", message.audio), ("video", message.video)):
        if media is not None:
            found.append(
                Attachment(
                    kind=kind,
                    name=media.file_name or "",
                    mime_type=media.mime_type or "",
                    size=media.file_size,
                    ref=media.file_id,
                    duration_s=_seconds(media.duration),
                )
            )
    if message.voice is not None:
        voice = message.voice
        found.append(
            Attachment(
                kind="audio",
                name=_UNNAMED["voice"],
                mime_type=voice.mime_type or "audio/ogg",
                size=voice.file_size,
                ref=voice.file_id,
                voice=True,
                duration_s=_seconds(voice.duration),
            )
        )
    if message.animation is not None:
        animation = message.animation
        found.append(
            Attachment(
                kind="video",
                name=animation.file_name or "",
                mime_type=animation.mime_type or "",
                size=animation.file_size,
                ref=animation.file_id,
            )
        )
    if message.video_note is not None:
        note = message.video_note
        found.append(
            Attachment(
                kind="video",
                name=_UNNAMED["video_note"],
                mime_type="video/mp4",
                size=note.file_size,
                ref=note.file_id,
                voice=True,
                duration_s=_seconds(note.duration),
            )
        )
    if message.sticker is not None:
        sticker = message.sticker
        found.append(
            Attachment(
                kind="sticker",
                name=sticker.emoji or "",
                mime_type=_sticker_type(sticker.is_animated, sticker.is_video),
                size=sticker.file_size,
                ref=sticker.file_id,
            )
        )
    return tuple(found)


def _seconds(duration: object) -> float | None:
    """A media's length in seconds: python-telegram-bot gives an int or, with
    ``PTB_TIMEDELTA`` set, a timedelta."""
    if isinstance(duration, timedelta):
        return duration.total_seconds()
    if isinstance(duration, int | float):
        return float(duration)
    return None


def _sticker_type(animated: bool, video: bool) -> str:
    """A sticker's file type: WebP, a video sticker's WebM, an animated one's Lottie (TGS)."""
    if video:
        return "video/webm"
    return "application/x-tgsticker" if animated else "image/webp"


def human_size(size: int) -> str:
    """``812 bytes``, ``45 KB``, ``3.2 MB``, ``20 MB`` (1 KB = 1024 bytes), as a user reads a
    limit."""
    if size < 1024:
        return f"{size} byte" if size == 1 else f"{size} bytes"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    megabytes = size / (1024 * 1024)
    if megabytes >= 10 or megabytes == int(megabytes):
        return f"{round(megabytes)} MB"
    return f"{megabytes:.1f} MB"
