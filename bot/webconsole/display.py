"""How the record pages (grants, audit log, turns, channels, schedules, pairing) show stored
values, and which channels a viewer's queries reach.

Stored text was written by people, models and platforms: before it reaches a template it is
scrubbed of secrets (:func:`bot.scrub.scrub_text`; tool arguments as the chat's cards show
them, :func:`bot.approval.summary.describe`), its control and invisible characters are made
visible (:func:`bot.visible_text.visible`), and long text is cut with a note of how much is
hidden. Templates then escape it (autoescape).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from bot.approval.summary import describe
from bot.scrub import scrub_text
from bot.visible_text import visible, visible_lines
from bot.webconsole import times
from bot.webconsole.viewer import Viewer


def reach(viewer: Viewer) -> frozenset[str] | None:
    """The channels whose records ``viewer`` may read: every one (``None``) for an admin,
    else the aliases they approve. Store queries take it, so nothing else is read."""
    return None if viewer.admin else viewer.approves


def when(ts: float | None, *, never: str = "never") -> str:
    """An epoch as every page shows it: absolute in the console's zone (``web.time_zone``,
    UTC by default) with the relative time beside it, ``2026-12-01 10:05:00 UTC (3 min
    ago)`` (:mod:`bot.webconsole.times`)."""
    if ts is None:
        return never
    return times.current().when(ts)


def duration(seconds: float) -> str:
    """``850 ms``, ``4.2 s``, ``3 min 5 s``, ``2 h 10 min``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


def text(value: str | None, limit: int = 200) -> str:
    """One line of stored text: secrets masked, invisible characters shown, cut to
    ``limit`` characters (saying how many more there were)."""
    if not value:
        return ""
    clean = scrub_text(value)
    if len(clean) <= limit:
        return visible(clean)
    return f"{visible(clean[:limit])} …[{len(clean) - limit:,} more chars]"


def block(value: str | None, limit: int = 2000) -> str:
    """Like :func:`text`, keeping line breaks (for ``<pre>``)."""
    if not value:
        return ""
    clean = scrub_text(value)
    if len(clean) <= limit:
        return visible_lines(clean)
    return f"{visible_lines(clean[:limit])}\n…[{len(clean) - limit:,} more chars]"


def arguments(stored: str) -> str:
    """A tool call's stored arguments (JSON, already scrubbed) as the chat's card lines:
    every secret value masked, long values shown as head and tail."""
    try:
        parsed = json.loads(stored)
    except ValueError:
        return text(stored, 500)
    if isinstance(parsed, Mapping):
        return "\n".join(describe(parsed).lines)
    return text(stored, 500)


def summary_lines(stored: str) -> str:
    """An audit row's stored summary (a JSON list of card lines) as text."""
    try:
        parsed = json.loads(stored)
    except ValueError:
        return text(stored, 500)
    if isinstance(parsed, list):
        return "\n".join(text(str(line), 300) for line in parsed)
    return text(stored, 500)
