"""The terminal handler: ask the person at the console, one line, y/n/a.

Used when the envelope says a terminal prompt exists and the channel implements
:class:`TerminalPrompter`. Empty input, EOF (``None``) or anything unrecognised means no.
"""

from __future__ import annotations

import enum
from typing import Protocol, runtime_checkable

from bot.visible_text import visible


@runtime_checkable
class TerminalPrompter(Protocol):
    """A channel that can ask its user a question and read one line back."""

    async def ask_line(self, prompt: str) -> str | None:
        """Show ``prompt`` and return the line typed (without newline), or None on EOF.
        Must not log the answer or the prompt beyond what the terminal shows."""
        ...


class TerminalAnswer(enum.StrEnum):
    YES = "yes"
    NO = "no"
    ALWAYS = "always"


_ANSWERS = {
    "y": TerminalAnswer.YES,
    "yes": TerminalAnswer.YES,
    "n": TerminalAnswer.NO,
    "no": TerminalAnswer.NO,
    "a": TerminalAnswer.ALWAYS,
    "always": TerminalAnswer.ALWAYS,
}


def parse_answer(line: str | None) -> TerminalAnswer:
    if line is None:
        return TerminalAnswer.NO
    return _ANSWERS.get(line.strip().lower(), TerminalAnswer.NO)


def render_prompt(*, tool: str, full_text: str, reason: str, timeout_s: float) -> str:
    """The prompt: the tool, every argument in full (from
    :attr:`bot.approval.summary.ArgumentView.full`, already masked and escaped), why, and
    the answers."""
    body = [
        f"🔐 Approve {visible(tool)}?",
        *(f"  {line}" for line in full_text.split("\n")),
        f"Why: {reason}",
    ]
    seconds = int(timeout_s)
    body.append(f"[y]es / [n]o / [a]lways — empty means no (times out in {seconds}s): ")
    return "\n".join(body)
