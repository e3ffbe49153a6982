"""Transcripts kept with the inbox entry (``inbox.transcripts``), by the attachment's
position in the envelope, so a message run again after a crash or a restart reads them
instead of paying for them twice."""

from __future__ import annotations

import json

import structlog

from bot.errors import StorageError
from bot.store import InboxKey, Store
from bot.transcription.base import Transcript

log = structlog.get_logger(__name__)


async def kept_transcripts(store: Store, key: InboxKey) -> dict[int, Transcript]:
    """The entry's kept transcripts (none when the row has none or cannot be read)."""
    try:
        raw = await store.inbox.transcripts(key)
    except StorageError as exc:
        log.warning("transcripts_not_read", error=str(exc))
        return {}
    if not raw:
        return {}
    found: dict[int, Transcript] = {}
    try:
        for index, item in json.loads(raw).items():
            found[int(index)] = Transcript(
                text=str(item["text"]),
                duration_s=float(item["duration_s"]),
                provider=str(item["provider"]),
                model=str(item["model"]),
            )
    except (ValueError, TypeError, KeyError, AttributeError):
        return {}
    return found


async def keep_transcripts(store: Store, key: InboxKey, transcripts: dict[int, Transcript]) -> None:
    """Keep ``transcripts`` with the entry; a storage failure only costs a second
    transcription after a crash, so it is logged, not raised."""
    value = json.dumps(
        {
            str(index): {
                "text": t.text,
                "duration_s": t.duration_s,
                "provider": t.provider,
                "model": t.model,
            }
            for index, t in sorted(transcripts.items())
        },
        ensure_ascii=False,
    )
    try:
        await store.inbox.keep_transcripts(key, value)
    except StorageError as exc:
        log.warning("transcripts_not_kept", error=str(exc))
