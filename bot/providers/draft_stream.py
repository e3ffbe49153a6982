"""A stream sink that stays coherent when a completion is retried or handed to a fallback.

Deltas already shown to the user cannot be taken back. When an attempt dies mid-stream and a
new attempt (or another provider) starts from the beginning, :class:`DraftStream` swallows the
new text until it has caught up with what was shown, and only then forwards the rest. If the
new text departs from what was shown, the draft stops updating for this completion: the final
reply (returned by ``complete``) is authoritative and replaces the draft anyway.
"""

from __future__ import annotations

from bot.providers.base import StreamSink


class DraftStream:
    """Wraps the caller's :data:`StreamSink` for one ``complete`` call across attempts.

    Call :meth:`attempt` at the start of every attempt and pass the returned sink to it.
    """

    __slots__ = ("_attempt_text", "_diverged", "_shown", "_sink")

    def __init__(self, sink: StreamSink) -> None:
        self._sink = sink
        self._shown = ""
        self._attempt_text = ""
        self._diverged = False

    def attempt(self) -> StreamSink:
        """Start a new attempt and return the sink that attempt must write deltas to."""
        self._attempt_text = ""
        return self._write

    async def _write(self, delta: str) -> None:
        if not delta or self._diverged:
            return
        self._attempt_text += delta
        text = self._attempt_text
        shown = self._shown
        if len(text) <= len(shown):
            if not shown.startswith(text):
                self._diverged = True
            return
        if not text.startswith(shown):
            self._diverged = True
            return
        fresh = text[len(shown) :]
        self._shown = text
        await self._sink(fresh)
