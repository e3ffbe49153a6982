"""What a file change does, for the approver: a bounded unified diff against the file as it
is now, and the hash of what that diff was computed against; and, for a file to be sent, its
type, size and head (:func:`preview_sent`), bound to its content the same way.

:func:`change_lines` is pure: the old content (None: no file) and the new one give

* a unified diff (``--- path`` / ``+++ path`` / hunks) when both sides are UTF-8 text within
  :data:`MAX_DIFF_BYTES` and :data:`MAX_DIFF_LINES`;
* ``new file: …`` and its first :data:`HEAD_LINES` lines when there is no file yet;
* ``binary file: …`` (a NUL byte or bytes that are not UTF-8) or ``too large to diff: N bytes →
  M bytes`` otherwise, with the sizes; ``no change`` when the content is what the file holds.

Lines come out raw: the approval summary (:func:`bot.approval.summary.describe`) masks the
secrets in them and escapes control and format characters, as for every argument, and decides
how many the card shows (the full view shows them all). A line without a final newline is
followed by ``\\ No newline at end of file``; a CRLF line ends in a visible ``\\r``.

:func:`preview` resolves the path the way the tool will (an escape or a sensitive file is
refused before any card), reads the file in chunks (:func:`snapshot`: its hash, and its bytes
only when small enough to diff) and diffs it in a worker thread with a time limit
(:data:`DIFF_TIME_S`; past it the card says the diff took too long), and returns the lines and
the content hash of what it read: the approval binds to that hash, and the
pipeline compares it with the file's hash again under the path lock right before the write.
"""

from __future__ import annotations

import asyncio
import hashlib
import mimetypes
import time
from dataclasses import dataclass
from pathlib import Path

from bot.tools.builtin.observation import ToolFailed, ToolRefused
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import CallPreview, ToolContext, ToolEnvironmentError

#: Either side larger than this is not diffed ("too large to diff").
MAX_DIFF_BYTES = 200_000
#: Either side with more lines than this is not diffed.
MAX_DIFF_LINES = 5_000
#: How long one diff may take (in a worker thread); past it the card says so.
DIFF_TIME_S = 2.0
#: How many lines of a new file are shown.
HEAD_LINES = 20
#: Unified diff context lines.
CONTEXT_LINES = 3
#: The hash a missing file binds to.
ABSENT = "absent"
#: Files are read and hashed in chunks of this size; only a file small enough to diff is kept.
CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """A file as the preview read it: its size and content hash, and its bytes when it is
    small enough to diff (``data`` None: absent, or larger than :data:`MAX_DIFF_BYTES`)."""

    exists: bool
    size: int = 0
    data: bytes | None = None
    digest: str = ABSENT

    @classmethod
    def of(cls, data: bytes | None) -> Snapshot:
        """The snapshot of content held in memory (None: no file)."""
        if data is None:
            return cls(exists=False)
        return cls(exists=True, size=len(data), data=data, digest=content_hash(data))


def content_hash(data: bytes | None) -> str:
    """What an approval of a change to a file binds to: its content's SHA-256 (``absent``
    when there is no file)."""
    return ABSENT if data is None else "sha256:" + hashlib.sha256(data).hexdigest()


def _text(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _sized(count: int) -> str:
    return f"{count:,} byte{'s' if count != 1 else ''}"


def _lines_of(count: int) -> str:
    return f"{count:,} line{'s' if count != 1 else ''}"


def _marked(lines: list[str]) -> list[str]:
    """Diff lines without their newline; a last line that had none says so, as diff does."""
    shown: list[str] = []
    for line in lines:
        if line.endswith("\n"):
            shown.append(line[:-1])
        else:
            shown += [line, "\\ No newline at end of file"]
    return shown


def _head(path: str, new: str, size: int) -> list[str]:
    lines = new.splitlines(keepends=True)
    head = [f"+{line}" for line in lines[:HEAD_LINES]]
    more = len(lines) - len(head)
    out = [f"new file: {path} ({_sized(size)}, {_lines_of(len(lines))})", *_marked(head)]
    if more > 0:
        out.append(f"… and {more:,} more line(s) of the new file")
    return out


def change_lines(
    path: str, before: Snapshot, new: bytes, *, deadline: float | None = None
) -> tuple[str, ...]:
    """The lines that show how the file ``before`` becomes ``new`` (module docstring).
    ``deadline`` (a :func:`time.monotonic` value) stops a diff that runs past it."""
    new_text = _text(new)
    if not before.exists:
        if new_text is None:
            return (f"new binary file: {path} ({_sized(len(new))})",)
        return tuple(_head(path, new_text, len(new)))
    old = before.data
    if old == new:
        return (f"no change: {path} already holds this content ({_sized(len(new))})",)
    sizes = f"{_sized(before.size)} → {_sized(len(new))}"
    if old is None or max(before.size, len(new)) > MAX_DIFF_BYTES:
        return (f"too large to diff: {path}, {sizes}",)
    old_text = _text(old)
    if old_text is None or new_text is None:
        which = "binary file" if old_text is None else "binary content"
        return (f"{which}: {path}, {sizes} (not shown as a diff)",)
    if max(old_text.count("\n"), new_text.count("\n")) > MAX_DIFF_LINES:
        return (f"too large to diff: {path}, {sizes}",)
    import difflib  # only when an asked call's card is drawn: not on a plain turn's path

    a = old_text.splitlines(keepends=True)
    b = new_text.splitlines(keepends=True)
    out: list[str] = []
    for count, line in enumerate(
        difflib.unified_diff(a, b, f"{path} (now)", f"{path} (after)", n=CONTEXT_LINES)
    ):
        if deadline is not None and count % 256 == 0 and time.monotonic() > deadline:
            return (f"too slow to diff (over {DIFF_TIME_S:g} s): {path}, {sizes}",)
        out.append(line)
    return tuple(_marked(out))


def snapshot(file: Path) -> Snapshot:
    """Read ``file`` in chunks: its size and hash, and its bytes when small enough to diff
    (never more than :data:`MAX_DIFF_BYTES` held). Raises ``OSError`` when it cannot be
    read (a directory, no permission)."""
    digest = hashlib.sha256()
    kept = bytearray()
    size = 0
    try:
        handle = file.open("rb")
    except FileNotFoundError:
        return Snapshot(exists=False)
    with handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
            size += len(chunk)
            if size <= MAX_DIFF_BYTES:
                kept += chunk
    data = bytes(kept) if size <= MAX_DIFF_BYTES else None
    return Snapshot(exists=True, size=size, data=data, digest="sha256:" + digest.hexdigest())


def current_hash(workspace: Workspace, context: ToolContext, path: str) -> str:
    """The content hash of ``path`` as it is now (the pipeline's re-check); a path that no
    longer resolves or reads answers what went wrong, which matches no hash."""
    try:
        return snapshot(workspace.for_call(context).resolve(path)).digest
    except (ToolRefused, ToolFailed, ToolEnvironmentError) as exc:
        return f"unresolvable: {exc}"
    except OSError as exc:
        return f"unreadable: {exc.strerror or type(exc).__name__}"


async def _diffed(path: str, before: Snapshot, new: bytes) -> tuple[str, ...]:
    """:func:`change_lines` in a worker thread, given :data:`DIFF_TIME_S`: past it the card
    says the diff took too long (the thread, bounded by the size limits, ends on its own)."""
    deadline = time.monotonic() + DIFF_TIME_S
    work = asyncio.ensure_future(
        asyncio.to_thread(change_lines, path, before, new, deadline=deadline)
    )
    try:
        return await asyncio.wait_for(asyncio.shield(work), DIFF_TIME_S)
    except TimeoutError:
        work.add_done_callback(lambda done: done.cancelled() or done.exception())
        sizes = f"{_sized(before.size)} → {_sized(len(new))}"
        return (f"too slow to diff (over {DIFF_TIME_S:g} s): {path}, {sizes}",)


async def preview(
    workspace: Workspace, context: ToolContext, path: str, new: bytes | str
) -> CallPreview:
    """The diff of writing ``new`` to ``path`` and what it binds to; a path the tool would
    refuse gives a ``refusal`` instead (no card is posted)."""
    try:
        file = workspace.for_call(context).resolve(path)
    except (ToolRefused, ToolFailed, ToolEnvironmentError) as exc:
        return CallPreview(refusal=str(exc))
    try:
        before = await asyncio.to_thread(snapshot, file)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return CallPreview(notes=(f"{path} cannot be read ({reason}): no diff",))
    after = new.encode("utf-8") if isinstance(new, str) else new
    return CallPreview(diff=await _diffed(path, before, after), binding=before.digest)


async def preview_edit(
    workspace: Workspace,
    context: ToolContext,
    path: str,
    change: tuple[str, str, bool],
) -> CallPreview:
    """:func:`preview` for an exact-text replacement (``old_text``, ``new_text``,
    ``replace_all``), computed as the tool will compute it."""
    try:
        file = workspace.for_call(context).resolve(path)
    except (ToolRefused, ToolFailed, ToolEnvironmentError) as exc:
        return CallPreview(refusal=str(exc))
    shown = await asyncio.to_thread(_edited, file, path, change)
    if isinstance(shown, CallPreview):
        return shown
    before, after = shown
    return CallPreview(diff=await _diffed(path, before, after), binding=before.digest)


def _edited(
    file: Path, path: str, change: tuple[str, str, bool]
) -> CallPreview | tuple[Snapshot, bytes]:
    """The file now and its bytes after the edit, or the preview of an edit that will fail
    (as the tool will: absent, too large, not UTF-8, old_text not found once)."""
    old_text, new_text, replace_all = change
    try:
        before = snapshot(file)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return CallPreview(notes=(f"{path} cannot be read ({reason}): no diff",))
    binding = before.digest
    if not before.exists:
        return CallPreview(notes=(f"{path} does not exist: the edit will fail",), binding=binding)
    text = None if before.data is None else _text(before.data)
    if text is None:
        what = "is not UTF-8 text" if before.data is not None else "is too large to diff"
        note = f"{path} {what} ({_sized(before.size)}): no diff"
        return CallPreview(notes=(note,), binding=binding)
    count = text.count(old_text)
    if count == 0 or (count > 1 and not replace_all):
        found = "not found" if count == 0 else f"found {count} times"
        note = f"old_text {found} in {path}: the edit will fail"
        return CallPreview(notes=(note,), binding=binding)
    return before, text.replace(old_text, new_text).encode("utf-8")


#: Lines of a sent text file shown on its card.
SENT_HEAD_LINES = 10


def sent_lines(path: str, before: Snapshot) -> tuple[str, ...]:
    """What a card about sending the file ``before`` shows of it: its type and size, and for
    a text file its first :data:`SENT_HEAD_LINES` lines."""
    guessed = mimetypes.guess_type(path)[0] or "unknown type"
    if before.data is None:
        return (f"content: {guessed}, {_sized(before.size)} (too large to show its head)",)
    text = _text(before.data)
    if text is None:
        return (f"content: {guessed}, binary, {_sized(before.size)}",)
    lines = text.splitlines()
    head = [f"| {line}" for line in lines[:SENT_HEAD_LINES]]
    more = len(lines) - len(head)
    shown = [f"content: {guessed}, text, {_sized(before.size)}, {_lines_of(len(lines))}; its head:"]
    shown += head
    if more > 0:
        shown.append(f"… and {more:,} more line(s)")
    return tuple(shown)


async def preview_sent(workspace: Workspace, context: ToolContext, path: str) -> CallPreview:
    """What a card about sending ``path`` shows of the file (:func:`sent_lines`), bound to
    its content; a path the tool would refuse gives a ``refusal`` (no card)."""
    try:
        file = workspace.for_call(context).resolve(path)
    except (ToolRefused, ToolFailed, ToolEnvironmentError) as exc:
        return CallPreview(refusal=str(exc))
    try:
        before = await asyncio.to_thread(snapshot, file)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return CallPreview(notes=(f"{path} cannot be read ({reason})",))
    if not before.exists:
        return CallPreview(notes=(f"{path} does not exist: sending it will fail",))
    return CallPreview(diff=sent_lines(path, before), binding=before.digest)
