"""What a person sees of a call's arguments before approving it.

Contract (:func:`describe`):

* **Masking hides the secret value and nothing else** (:func:`bot.scrub.scrub_text_noting`:
  a mask stops at whitespace, quotes and shell metacharacters). Values under secret-looking
  keys are masked whole. When text inside any other argument was masked, its line says
  ``⚠ contains a masked value`` so a masked command never looks harmless.
* **Nothing is obeyed**: control, format and line-breaking characters are shown as escapes
  (:mod:`bot.visible_text`), keys included.
* **Look-alikes are marked** (:mod:`bot.approval.lookalike`): a URL's host in any argument,
  and a host or name in a shell command, written with mixed scripts or with letters that
  look like ASCII, gets ``⚠ look-alike: gіthub.com is xn--gthub-n2e.com (…)`` on its
  line; a summary line shows at most :data:`MAX_LINE_MARKS` of them and counts the rest (the
  summary is then cut: the full view lists them).
* **A change is shown as a diff** (``diff``: a file tool's unified diff against the file as
  it is, :mod:`bot.tools.builtin.file_diff`), below the arguments: each line masked and
  escaped like an argument; the summary shows at most :data:`MAX_DIFF_LINES` lines of
  :data:`MAX_DIFF_LINE_CHARS` characters and says how much more there is (the summary is
  then cut), the full view every line.
* **Nothing is cut blind.** The summary (``lines``: paths and commands first, then the other
  keys in name order, at most :data:`MAX_LINES` lines) shows a long value as its head and tail
  with the length and how much is hidden between them. Whenever the summary hides anything,
  ``cut`` is true and ``full`` holds every character of every argument (secret values
  masked); a cut request may only be approved from a view that shows ``full``.

The result is safe for cards, terminal prompts, audit rows and logs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from bot.approval.gate import canonical_json
from bot.approval.lookalike import COMMAND_KEYS, NO_MARKS, Marks, look_alikes
from bot.scrub import MASK, is_secret_key, scrub_text_noting, scrub_value
from bot.visible_text import visible, visible_lines

#: Keys shown first, in this order: what a reviewer must see.
PRIORITY_KEYS: tuple[str, ...] = (
    "path",
    "paths",
    "file",
    "filename",
    "directory",
    "dir",
    "cwd",
    "source",
    "destination",
    "target",
    "command",
    "cmd",
    "url",
)
MAX_VALUE_CHARS = 200
MAX_KEY_CHARS = 80  # a model may invent any key; a card line stays readable
MAX_LINES = 12
MASKED_NOTE = "⚠ contains a masked value"
MAX_LINE_MARKS = 3  # look-alike marks on one summary line; the full view has them all
MAX_DIFF_LINES = 40  # lines of a change's diff on the card; the full view has them all
MAX_DIFF_LINE_CHARS = 300
_MORE_THAN_A_TOKEN = re.compile(r"[\s;|&$()<>`\\{}\[\]\"']")


@dataclass(frozen=True, slots=True, kw_only=True)
class ArgumentView:
    """A call's arguments as a person sees them: the summary ``lines`` for a card, and the
    ``full`` text (every argument, every character) that a cut summary must be approved
    from."""

    lines: tuple[str, ...]
    full: str
    cut: bool
    #: A unified diff longer than the summary shows, as ``full`` shows it (its lines there,
    #: joined): a full view may send it as a ``.diff`` file. Empty otherwise.
    diff_text: str = ""


@dataclass(frozen=True, slots=True)
class _Shown:
    key: str
    text: str  # scrubbed, not yet escaped
    masked: bool  # text inside the value was masked (not a secret key masked whole)
    marks: Marks = NO_MARKS  # look-alike hosts and names in ``text``


def _shown(key: str, value: object) -> _Shown:
    if is_secret_key(key) and value not in (None, "", [], {}):
        # a lone token is the secret itself; anything more (spaces, metacharacters, a
        # structure) may be what runs, so the line says it is hidden
        text = value if isinstance(value, str) else canonical_json(value)
        return _Shown(key, MASK, masked=_MORE_THAN_A_TOKEN.search(text) is not None)
    if isinstance(value, str):
        text, masked = scrub_text_noting(value)
        return _Shown(key, text, masked, look_alikes(text, command=key in COMMAND_KEYS))
    scrubbed = scrub_value(value, key=key)
    text = canonical_json(scrubbed)
    return _Shown(key, text, masked=scrubbed != value, marks=look_alikes(text))


def _mark_notes(marks: Marks, shown: int) -> tuple[str, bool]:
    """Up to ``shown`` look-alike marks and a count of the rest; whether any was left out."""
    notes = [visible(mark.note) for mark in marks.found[:shown]]
    left = len(marks.found) - len(notes) + marks.more
    if left:
        notes.append(f"⚠ {left} more look-alike(s)")
    return "".join(f"  {note}" for note in notes), left > 0


def _cut(text: str, limit: int) -> tuple[str, bool]:
    """One line of ``text``: whole when it fits, else its head and tail around a marker
    that says how much is hidden. Cut before escaping, so no escape is split."""
    if len(text) <= limit:
        return visible(text), False
    tail = max(1, limit // 4)
    head = max(1, limit - tail - 40)
    hidden = len(text) - head - tail
    middle = f" …[{hidden:,} of {len(text):,} chars hidden]… "
    return f"{visible(text[:head])}{middle}{visible(text[-tail:])}", True


def _line(shown: _Shown) -> tuple[str, bool]:
    key, key_cut = _cut(shown.key, MAX_KEY_CHARS)
    value, cut = _cut(shown.text, MAX_VALUE_CHARS)
    note = f"  {MASKED_NOTE}" if shown.masked else ""
    marks, marks_cut = _mark_notes(shown.marks, MAX_LINE_MARKS)
    return f"{key}: {value}{note}{marks}", cut or key_cut or marks_cut


def _full_line(shown: _Shown) -> str:
    note = f"  {MASKED_NOTE}" if shown.masked else ""
    marks, _ = _mark_notes(shown.marks, len(shown.marks.found))
    return f"{visible(shown.key)}: {visible_lines(shown.text)}{note}{marks}"


def _diff(diff: tuple[str, ...]) -> tuple[list[str], list[str], bool]:
    """The summary's lines of a diff, the full view's, and whether the summary left any out."""
    summary: list[str] = []
    full: list[str] = []
    cut = len(diff) > MAX_DIFF_LINES
    for index, raw in enumerate(diff):
        text, masked = scrub_text_noting(raw)
        note = f"  {MASKED_NOTE}" if masked else ""
        marks = look_alikes(text)  # a URL in a diff or a request body is marked as anywhere
        full.append(f"{visible(text)}{note}{_mark_notes(marks, len(marks.found))[0]}")
        if index < MAX_DIFF_LINES:
            line, line_cut = _cut(text, MAX_DIFF_LINE_CHARS)
            shown_marks, marks_cut = _mark_notes(marks, MAX_LINE_MARKS)
            summary.append(f"{line}{note}{shown_marks}")
            cut = cut or line_cut or marks_cut
    if len(diff) > MAX_DIFF_LINES:
        summary.append(
            f"…[{len(diff) - MAX_DIFF_LINES:,} more line(s) below: the full view shows them all]"
        )
    return summary, full, cut


def describe(
    arguments: Mapping[str, object],
    *,
    notes: tuple[str, ...] = (),
    diff: tuple[str, ...] = (),
    covered: tuple[str, ...] = (),
) -> ArgumentView:
    """The summary and the full view of ``arguments`` (see the module contract), each
    followed by the change's ``diff`` and the tool's ``notes`` (written by this program,
    shown escaped all the same). ``covered`` names arguments the ``diff`` lines show whole
    (a request's headers and body): they are not listed again as arguments."""
    hidden = set(covered) if diff else set()
    shown = {str(k): _shown(str(k), v) for k, v in arguments.items() if str(k) not in hidden}
    first = [k for k in PRIORITY_KEYS if k in shown]
    keys = first + sorted(k for k in shown if k not in first)
    lines: list[str] = []
    cut = len(keys) > MAX_LINES
    for key in keys[:MAX_LINES]:
        line, line_cut = _line(shown[key])
        lines.append(line)
        cut = cut or line_cut
    if len(keys) > MAX_LINES:
        lines.append(f"… and {len(keys) - MAX_LINES} more argument(s)")
    if not lines:
        lines.append("(no arguments)")
    full = "\n".join(_full_line(shown[key]) for key in keys) or "(no arguments)"
    diff_lines, diff_full, diff_cut = _diff(diff)
    shown_notes = tuple(visible(note) for note in notes)
    if diff_full or shown_notes:
        full = "\n".join((full, *diff_full, *shown_notes))
    long_diff = len(diff) > MAX_DIFF_LINES and diff[0].startswith("--- ")
    return ArgumentView(
        lines=(*lines, *diff_lines, *shown_notes),
        full=full,
        cut=cut or diff_cut,
        diff_text="\n".join(diff_full) if long_diff else "",
    )


def summary_json(lines: tuple[str, ...]) -> str:
    """The form stored in audit rows."""
    return json.dumps(list(lines), ensure_ascii=False)
