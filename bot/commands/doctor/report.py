"""The doctor's report: what one check returns and the line it becomes.

A check returns an :data:`Outcome` and never prints; the driver names it, turns it into a
:class:`CheckResult` and prints the rendered line. A failing check says what to fix; the
detail and the fix never contain a secret.
"""

from __future__ import annotations

from dataclasses import dataclass

Outcome = tuple[bool, str, str]
"""``(ok, detail, fix)``: ``fix`` is empty when ``ok``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    """One line of the report; ``fix`` says what to do when ``ok`` is false."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    #: Passes, but something will not work as the operator probably expects (``⚠``).
    warning: bool = False

    def render(self) -> str:
        """``✓ name: detail``, or ``✗``/``⚠ name: detail`` with an indented ``fix:`` line."""
        mark = "✗" if not self.ok else "⚠" if self.warning else "✓"
        line = f"{mark} {self.name}: {self.detail}"
        shows_fix = not self.ok or self.warning
        return f"{line}\n    fix: {self.fix}" if shows_fix and self.fix else line
