"""Read-only file tools: ``file_read``, ``file_list`` and ``file_search``.

All three are confined to the workspace (see :mod:`bot.tools.builtin.workspace`), bounded by
``[tools.files]`` limits, and need no approval by default (they are in the default
``approval.auto_approve`` list). Symlinks that leave the workspace and sensitive files are
skipped while listing and searching, and refused when named directly.

Each is bounded by bytes and entries, never by "the file": ``file_read`` keeps at most
:func:`read_budget` bytes (``max_read_bytes``, and no more than ``max_output_chars`` can show;
:mod:`bot.tools.builtin.line_reading`: lines counted, not held; a line longer than that
shown cut, and said so); ``file_search`` reads each file a line's first
:data:`SEARCH_LINE_BYTES` at a time and passes over files over
:data:`SEARCH_MAX_FILE_BYTES`; both walks stop at :data:`WALK_MAX_ENTRIES`. A symlink loop,
a broken link, a pipe, a socket or an unreadable file is listed as what it is, or passed
over by a search, and never fails the call for the whole folder; only regular files are
opened (a pipe would wait for a writer). Errors name paths relative to the workspace, never
the daemon's own.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from pydantic import Field

from bot.config import FileToolsConfig
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.line_reading import lines_of, read_range
from bot.tools.builtin.observation import ToolFailed, bounded_text
from bot.tools.builtin.workspace import Workspace, walk_files
from bot.tools.spec import ToolContext, ToolKind, ToolResult, ToolSpec

BINARY_PROBE_BYTES = 8192
SEARCH_MAX_FILE_BYTES = 10_000_000
SEARCH_MAX_DEPTH = 20
#: The most of one line searched (a longer line is searched in its beginning only).
SEARCH_LINE_BYTES = 2000
SEARCH_LINE_CHARS = 300
#: Room left in ``max_output_chars`` for ``file_read``'s header line.
READ_HEADER_CHARS = 400
#: The most entries walked by one listing or search, whatever the folder holds.
WALK_MAX_ENTRIES = 20_000


class FileReadArguments(ToolArguments):
    path: str = Field(min_length=1, description="File path, relative to the workspace.")
    start_line: int = Field(default=1, ge=1, description="First line to return (1-based).")
    end_line: int | None = Field(
        default=None, ge=1, description="Last line to return (inclusive); default: to the end."
    )


class FileListArguments(ToolArguments):
    path: str = Field(default=".", description="Directory to list, relative to the workspace.")
    glob: str = Field(default="*", description="Only entries whose path matches this glob.")
    depth: int = Field(default=2, ge=1, le=10, description="How many levels to descend.")


class FileSearchArguments(ToolArguments):
    pattern: str = Field(min_length=1, max_length=500, description="Text or regex to find.")
    regex: bool = Field(default=False, description="Treat pattern as a Python regex.")
    case_sensitive: bool = False
    path: str = Field(default=".", description="Directory or file to search in.")
    glob: str = Field(default="*", description="Only files whose path matches this glob.")


def _is_binary(head: bytes) -> bool:
    return b"\0" in head[:BINARY_PROBE_BYTES]


def _open_regular(file: Path) -> BinaryIO | None:
    """``file`` open for reading when it is a regular file; None when it is anything else
    (a pipe, whose open would wait for a writer, a socket, a device). Checked on the open
    file itself, so nothing swapped in after a check is read."""
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def _read_lines(
    workspace: Workspace, file: Path, shown: str, args: FileReadArguments, max_bytes: int
) -> str:
    try:
        mode = os.stat(file).st_mode
    except FileNotFoundError:
        raise ToolFailed(f"{shown} does not exist") from None
    except OSError as exc:
        raise workspace.failure(shown, exc) from None
    if stat.S_ISDIR(mode):
        raise ToolFailed(f"{shown} is a directory; use file_list")
    if not stat.S_ISREG(mode):
        raise ToolFailed(f"{shown} is not a regular file (a pipe, socket or device)")
    try:
        handle = _open_regular(file)
        if handle is None:
            raise ToolFailed(f"{shown} is not a regular file (a pipe, socket or device)")
        with handle:
            if _is_binary(handle.read(BINARY_PROBE_BYTES)):
                raise ToolFailed(f"{shown} is a binary file")
            handle.seek(0)
            got = read_range(handle, start=args.start_line, end=args.end_line, max_bytes=max_bytes)
    except OSError as exc:
        raise workspace.failure(shown, exc) from None
    total = f"{got.total:,}" if got.counted else f"at least {got.total:,}"
    if got.last < got.first:
        return (
            f"[{shown}: no lines in range {args.start_line}-{args.end_line or 'end'}; "
            f"the file has {total} lines]"
        )
    text = got.data.decode("utf-8", errors="replace")
    wanted = got.total if args.end_line is None else min(args.end_line, got.total)
    further = (
        f"; read further with start_line={got.last + 1}"
        if got.last < wanted or not got.counted
        else ""
    )
    if got.cut_line:
        header = (
            f"[{shown}: line {got.last} of {total}, only its first {len(got.data):,} of "
            f"{got.cut_line:,} bytes (one read returns at most {max_bytes:,}; the rest of this "
            f"line cannot be shown by file_read){further}]"
        )
    else:
        header = f"[{shown}: lines {got.first}-{got.last} of {total}]"
        if further:
            header += f" [output capped at {max_bytes:,} bytes{further}]"
    return f"{header}\n{text}"


def _glob_matches(relative: str, glob: str) -> bool:
    return glob in ("", "*", "**") or PurePosixPath(relative).match(glob)


def _entry_line(entry: Path, shown: str, workspace: Workspace, root: Path) -> str | None:
    """How ``file_list`` shows one entry: a folder with ``/``, a file with its size, anything
    odd as what it is; None for one it does not show (outside the workspace, sensitive)."""
    try:
        real = entry.resolve()
    except RuntimeError:
        return f"{shown}  (symlink loop)"
    if not workspace.contains(real, root=root):
        return None
    try:
        mode = os.stat(real)
    except FileNotFoundError:
        return f"{shown}  (broken link)"
    except OSError as exc:
        return f"{shown}  (cannot be read: {exc.strerror or type(exc).__name__})"
    if stat.S_ISDIR(mode.st_mode):
        return f"{shown}/"
    if stat.S_ISREG(mode.st_mode):
        return f"{shown}  ({mode.st_size} B)"
    return f"{shown}  ({_odd_kind(mode.st_mode)})"


def _odd_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "named pipe"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def _list(workspace: Workspace, args: FileListArguments, cfg: FileToolsConfig) -> str:
    root = workspace.real_root()
    top = workspace.resolve(args.path)
    if not top.is_dir():
        raise ToolFailed(f"{args.path} is not a directory")
    walk = walk_files(top, max_depth=args.depth, stop_after=WALK_MAX_ENTRIES)
    lines: list[str] = []
    more = 0
    for entry, _depth, _is_dir in walk.entries:
        shown = workspace.display(entry, root=root)
        if not _glob_matches(shown, args.glob):
            continue
        line = _entry_line(entry, shown, workspace, root)
        if line is None:
            continue
        if len(lines) >= cfg.max_list_entries:
            more += 1
            continue
        lines.append(line)
    if not lines:
        return f"[{args.path}: no entries match {args.glob!r}]"
    if more:
        lines.append(f"[{more} more entries not shown; narrow the glob or depth]")
    if not walk.complete:
        lines.append(
            f"[the listing stopped after {WALK_MAX_ENTRIES:,} entries; list a folder further down]"
        )
    return "\n".join(lines)


def _compile(args: FileSearchArguments) -> re.Pattern[str]:
    flags = 0 if args.case_sensitive else re.IGNORECASE
    source = args.pattern if args.regex else re.escape(args.pattern)
    try:
        return re.compile(source, flags)
    except re.error as exc:
        raise ToolFailed(f"invalid regex {args.pattern!r}: {exc}") from None


@dataclass(slots=True)
class _Search:
    """What a search found and what it passed over."""

    hits: list[str] = field(default_factory=list)
    capped: bool = False
    too_large: int = 0
    unreadable: int = 0


def _search(workspace: Workspace, args: FileSearchArguments, cfg: FileToolsConfig) -> str:
    root = workspace.real_root()
    top = workspace.resolve(args.path)
    pattern = _compile(args)
    complete = True
    if top.is_file():
        candidates = [top]
    else:
        walk = walk_files(top, max_depth=SEARCH_MAX_DEPTH, stop_after=WALK_MAX_ENTRIES)
        candidates = [entry for entry, _, is_dir in walk.entries if not is_dir]
        complete = walk.complete
    found = _Search()
    for entry in candidates:
        shown = workspace.display(entry, root=root) if entry != top else args.path
        if not _glob_matches(shown, args.glob):
            continue
        _search_file(workspace, root, entry, shown, pattern, cfg, found)
        if found.capped:
            break
    notes = _search_notes(found, cfg, complete)
    if not found.hits:
        return "\n".join([f"[no matches for {args.pattern!r} under {args.path}]", *notes])
    return "\n".join([*found.hits, *notes])


def _search_file(
    workspace: Workspace,
    root: Path,
    entry: Path,
    shown: str,
    pattern: re.Pattern[str],
    cfg: FileToolsConfig,
    found: _Search,
) -> None:
    """The matching lines of one file added to ``found``; a file that is not a regular
    file inside the workspace, is binary, too large or unreadable is passed over."""
    try:
        real = entry.resolve()
    except RuntimeError:  # a symlink loop
        return
    if not workspace.contains(real, root=root):
        return
    try:
        mode = os.stat(real).st_mode
    except OSError:  # a broken link, a loop the resolving did not see: nothing to search
        return
    if not stat.S_ISREG(mode):
        return
    try:
        handle = _open_regular(real)
        if handle is None:
            return
        with handle:
            if os.fstat(handle.fileno()).st_size > SEARCH_MAX_FILE_BYTES:
                found.too_large += 1
                return
            if _is_binary(handle.read(BINARY_PROBE_BYTES)):
                return
            handle.seek(0)
            for number, head in lines_of(handle, line_bytes=SEARCH_LINE_BYTES):
                line = head.decode("utf-8", errors="replace")
                if not pattern.search(line):
                    continue
                if len(found.hits) >= cfg.max_search_results:
                    found.capped = True
                    return
                found.hits.append(f"{shown}:{number}: {line.strip()[:SEARCH_LINE_CHARS]}")
    except OSError:
        found.unreadable += 1


def _search_notes(found: _Search, cfg: FileToolsConfig, complete: bool) -> list[str]:
    """What the search left out, one line each."""
    notes = []
    if found.capped:
        notes.append(f"[stopped after {cfg.max_search_results} matches; narrow the search]")
    if found.too_large:
        notes.append(
            f"[{found.too_large} files over {SEARCH_MAX_FILE_BYTES // 1_000_000} MB not searched]"
        )
    if found.unreadable:
        notes.append(f"[{found.unreadable} files could not be read]")
    if not complete:
        notes.append(
            f"[only the first {WALK_MAX_ENTRIES:,} entries were searched; search a folder "
            "further down]"
        )
    return notes


def read_budget(cfg: FileToolsConfig) -> int:
    """The bytes one ``file_read`` keeps: ``max_read_bytes``, and no more than its output
    can show (``max_output_chars``, less room for the header), so that what it says it read
    is what the model sees, never cut in its middle."""
    header = min(READ_HEADER_CHARS, cfg.max_output_chars // 2)
    return max(1, min(cfg.max_read_bytes, cfg.max_output_chars - header))


def file_read_tool(workspace: Workspace, cfg: FileToolsConfig) -> ToolSpec:
    """``file_read``: a line range of a text file in the workspace, at most
    ``max_read_bytes`` of it."""

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(FileReadArguments, arguments)
        if args.end_line is not None and args.end_line < args.start_line:
            raise ToolFailed("end_line is before start_line")
        ws = workspace.for_call(context)
        file = ws.resolve(args.path)
        text = await asyncio.to_thread(_read_lines, ws, file, args.path, args, read_budget(cfg))
        return bounded_text(text, cfg.max_output_chars)

    return ToolSpec(
        name="file_read",
        description=(
            "Read a text file from the workspace. Returns the requested line range (default: "
            "the whole file, capped) after a header with the line numbers."
        ),
        parameters=schema_of(FileReadArguments),
        handler=handler,
        requires_approval=False,
        kind=ToolKind.READ_ONLY,
        concurrency_safe=True,
        retry_safe=True,
    )


def file_list_tool(workspace: Workspace, cfg: FileToolsConfig) -> ToolSpec:
    """``file_list``: entries of a workspace directory, to a depth, filtered by a glob."""

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(FileListArguments, arguments)
        text = await asyncio.to_thread(_list, workspace.for_call(context), args, cfg)
        return bounded_text(text, cfg.max_output_chars)

    return ToolSpec(
        name="file_list",
        description=(
            "List files and directories in the workspace (directories end with '/', files "
            "show their size). Use glob (e.g. '*.py') and depth to narrow the listing."
        ),
        parameters=schema_of(FileListArguments),
        handler=handler,
        requires_approval=False,
        kind=ToolKind.READ_ONLY,
        concurrency_safe=True,
        retry_safe=True,
    )


def file_search_tool(workspace: Workspace, cfg: FileToolsConfig) -> ToolSpec:
    """``file_search``: lines matching a substring or regex in workspace text files."""

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(FileSearchArguments, arguments)
        text = await asyncio.to_thread(_search, workspace.for_call(context), args, cfg)
        return bounded_text(text, cfg.max_output_chars)

    return ToolSpec(
        name="file_search",
        description=(
            "Search the workspace's text files for a substring (or a regex with regex=true). "
            "Returns 'path:line: text' for each match, capped."
        ),
        parameters=schema_of(FileSearchArguments),
        handler=handler,
        requires_approval=False,
        kind=ToolKind.READ_ONLY,
        concurrency_safe=True,
        retry_safe=True,
    )
