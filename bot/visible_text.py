"""Visible text: characters a person must see, never characters a terminal or client obeys.

Approval cards, progress lines, terminal prompts and ``hatchway approvals``/``audit`` output
show text that will run. A carriage return, a line or paragraph separator, a bidi override
or a zero-width character could make that text look like something else (a faked extra line,
reversed text, an invisible word), so each control, format, separator and surrogate
character (every character ``str.isprintable`` rejects, except the plain space) and the
invisible fillers is shown as an escape such as ``\\u202e``. Newlines are shown as ``⏎``:
on one line (:func:`visible`) or, in a full view, followed by a real line break
(:func:`visible_lines`). A tab shows as ``\\t``.
"""

from __future__ import annotations

import re

NEWLINE_MARK = "⏎"

#: Letters and symbols that render as nothing or as blank space although
#: ``str.isprintable`` accepts them (Hangul fillers, braille blank, Mongolian vowel separator
#: and the combining grapheme joiner).
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e\u034f")
_NAMED = {"\t": "\\t", "\r": "\\r"}


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


#: Terminal escape sequences: CSI (ESC [ … final byte), OSC (ESC ] … BEL or ST, or to the
#: end of the text) and the two-character escapes. Code that cleans text a third party wrote
#: removes them whole, before removing invisible characters one by one.
ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]"
)


def without_escapes(text: str) -> str:
    """``text`` with its terminal escape sequences removed (:data:`ESCAPE_SEQUENCE`)."""
    return ESCAPE_SEQUENCE.sub("", text)


def is_invisible(char: str) -> bool:
    """Whether ``char`` is one this module never shows as itself: a control (newline and tab
    included), format, separator or surrogate character other than the plain space, or an
    invisible filler. Code that removes such characters instead of escaping them (text a
    third party wrote, before anyone reads it) uses this one definition."""
    return not char.isprintable() or char in _INVISIBLE


def _needs_escape(char: str) -> bool:
    return char != "\n" and is_invisible(char)


#: Everything but printable ASCII: the only characters worth a closer look.
_SUSPECT = re.compile(r"[^\x20-\x7e]")


def _replace(match: re.Match[str]) -> str:
    char = match.group()
    return _escape(char) if _needs_escape(char) else char


def _escape_all(text: str) -> str:
    return _SUSPECT.sub(_replace, text)


def visible(text: str) -> str:
    """``text`` on one line: newlines shown as `` ⏎ ``, every other invisible or
    line-breaking character as an escape."""
    if text.isprintable() and not _INVISIBLE.intersection(text):
        return text
    return _escape_all(text).replace("\n", f" {NEWLINE_MARK} ")


def visible_lines(text: str) -> str:
    """``text`` for a full view: each newline shown as ``⏎`` and kept as a line break, every
    other invisible or line-breaking character as an escape."""
    if text.isprintable() and not _INVISIBLE.intersection(text):
        return text
    return _escape_all(text).replace("\n", f"{NEWLINE_MARK}\n")


def _keep_layout(match: re.Match[str]) -> str:
    char = match.group()
    return char if char in "\n\t" else _replace(match)


def terminal_text(text: str) -> str:
    """``text`` for a terminal: line breaks and tabs kept as they are, every other control,
    format or line-breaking character escaped, so no escape sequence reaches the terminal
    (colours, cursor moves, a retitled window, a cleared screen)."""
    if text.isprintable() or not _SUSPECT.search(text):
        return text
    return _SUSPECT.sub(_keep_layout, text)
