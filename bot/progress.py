"""Progress lines: what the bot shows while it works.

The agent turn reports to a :class:`ProgressSink`; the gateway builds one per turn from the
channel's capabilities (an edited message where the platform can edit, batched lines
elsewhere). Lines never contain raw tool output.
"""

from __future__ import annotations

from typing import Protocol


class ProgressSink(Protocol):
    async def tool_started(self, *, call_id: str, tool: str, hint: str) -> None: ...

    async def tool_finished(
        self, *, call_id: str, tool: str, ok: bool, duration_s: float, reason: str = ""
    ) -> None: ...

    async def waiting_for_approval(self, *, tool: str) -> None: ...

    async def approval_resolved(self, *, tool: str) -> None: ...

    async def stream_text(self, delta: str) -> None: ...

    async def aclose(self) -> None: ...


class NullProgress:
    """A sink that shows nothing (background turns, tests)."""

    async def tool_started(self, *, call_id: str, tool: str, hint: str) -> None:
        return None

    async def tool_finished(
        self, *, call_id: str, tool: str, ok: bool, duration_s: float, reason: str = ""
    ) -> None:
        return None

    async def waiting_for_approval(self, *, tool: str) -> None:
        return None

    async def approval_resolved(self, *, tool: str) -> None:
        return None

    async def stream_text(self, delta: str) -> None:
        return None

    async def aclose(self) -> None:
        return None
