"""What a built-in tool hands back to the model: bounded, scrubbed text, or a failure.

A built-in returns plain text on success and raises on failure; the pipeline turns the
exception into an EXECUTED (failed) outcome whose observation is ``ClassName: message``.
Both go through :func:`bounded_text`, so nothing secret and nothing unbounded reaches the model.

::

    HatchwayError
    └── ToolFailed      the call could not do what was asked (bad argument, no match, timeout)
        ├── ToolRefused refused by policy (deny list, workspace confinement, network guard);
        │               no approval can override it
        └── SearchBackendError  web_search's backend refused or failed (carries the
                                operator's fix; bot.tools.builtin.search_backends)
"""

from __future__ import annotations

from bot.errors import HatchwayError
from bot.scrub import scrub_text

CUT_MARKER = "\n[… {cut} characters cut …]\n"


class ToolFailed(HatchwayError):
    """The call was understood but could not be carried out; the message says why."""

    def __init__(self, message: str) -> None:
        super().__init__(scrub_text(message))


class ToolRefused(ToolFailed):
    """The call is refused by a hard policy that no approval overrides."""

    def __init__(self, message: str) -> None:
        super().__init__(f"refused by policy: {message}")


def bounded_text(text: str, limit: int) -> str:
    """Scrub ``text`` and keep at most about ``limit`` characters of it: head and tail are kept
    and the middle is replaced by a marker that says how much was cut."""
    text = scrub_text(text)
    if len(text) <= limit:
        return text
    keep = max(limit - len(CUT_MARKER.format(cut=len(text))), 2)
    head = keep - keep // 2
    tail = keep // 2
    cut = len(text) - head - tail
    return text[:head] + CUT_MARKER.format(cut=cut) + text[len(text) - tail :]


def short(text: str, limit: int = 80) -> str:
    """One-line preview of a value for a message, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
