"""Read-only file tools: ``file_read``, ``file_list`` and ``file_search``.

All three are confined to the workspace (see :mod:`bot.tools.builtin.workspace`), bounded by
``[tools.files]`` limits, and need no approval by default (they are in the default
``approval.auto_approve`` list). Symlinks that leave the workspace and sensitive files are
skipped while listing and searching, and refused when named directly.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from pydantic import Field

from bot.config import FileToolsConfig
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.observation import ToolFailed, bounded_text
from bot.tools.builtin.workspace import Workspace, walk_files
from bot.tools.spec import ToolContext, ToolKind, ToolResult, ToolSpec

BINARY_PROBE_BYTES = 8192
SEARCH_MAX_FILE_BYTES = 10_000_000
SEARCH_LINE_CHARS = 300


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


def _read_lines(file: Path, shown: str, args: FileReadArguments, max_bytes: int) -> str:
    if file.is_dir():
        raise ToolFailed(f"{shown} is a directory; use file_list")
    if not file.is_file():
        raise ToolFailed(f"{shown} does not exist")
    with file.open("rb") as handle:
        if _is_binary(handle.read(BINARY_PROBE_BYTES)):
            raise ToolFailed(f"{shown} is a binary file")
        handle.seek(0)
        picked: list[bytes] = []
        used = 0
        total = 0
        last = 0
        truncated = False
        for number, line in enumerate(handle, start=1):
            total = number
            if number < args.start_line or (args.end_line and number > args.end_line):
                continue
            if used + len(line) > max_bytes:
                truncated = True
                continue
            picked.append(line)
            used += len(line)
            last = number
    text = b"".join(picked).decode("utf-8", errors="replace")
    if not picked:
        return (
            f"[{shown}: no lines in range {args.start_line}-{args.end_line or 'end'}; "
            f"the file has {total} lines]"
        )
    header = f"[{shown}: lines {args.start_line}-{last} of {total}]"
    if truncated:
        header += f" [output capped at {max_bytes} bytes; read further with start_line={last + 1}]"
    return f"{header}\n{text}"


def _glob_matches(relative: str, glob: str) -> bool:
    return glob in ("", "*", "**") or PurePosixPath(relative).match(glob)


def _list(workspace: Workspace, args: FileListArguments, cfg: FileToolsConfig) -> str:
    root = workspace.real_root()
    top = workspace.resolve(args.path)
    if not top.is_dir():
        raise ToolFailed(f"{args.path} is not a directory")
    lines: list[str] = []
    more = 0
    for entry, _depth, is_dir in walk_files(top, max_depth=args.depth):
        real = entry.resolve()
        if not workspace.contains(real, root=root):
            continue
        shown = workspace.display(entry, root=root)
        if not _glob_matches(shown, args.glob):
            continue
        if len(lines) >= cfg.max_list_entries:
            more += 1
            continue
        if is_dir:
            lines.append(f"{shown}/")
        else:
            try:
                size = real.stat().st_size
            except OSError:
                continue
            lines.append(f"{shown}  ({size} B)")
    if not lines:
        return f"[{args.path}: no entries match {args.glob!r}]"
    if more:
        lines.append(f"[{more} more entries not shown; narrow the glob or depth]")
    return "\n".join(lines)


def _compile(args: FileSearchArguments) -> re.Pattern[str]:
    flags = 0 if args.case_sensitive else re.IGNORECASE
    source = args.pattern if args.regex else re.escape(args.pattern)
    try:
        return re.compile(source, flags)
    except re.error as exc:
        raise ToolFailed(f"invalid regex {args.pattern!r}: {exc}") from None


def _search(workspace: Workspace, args: FileSearchArguments, cfg: FileToolsConfig) -> str:
    root = workspace.real_root()
    top = workspace.resolve(args.path)
    pattern = _compile(args)
    if top.is_file():
        candidates = [top]
    else:
        candidates = [entry for entry, _, is_dir in walk_files(top, max_depth=20) if not is_dir]
    hits: list[str] = []
    capped = False
    for entry in candidates:
        real = entry.resolve()
        shown = workspace.display(entry, root=root) if entry != top else args.path
        if not real.is_file() or not workspace.contains(real, root=root):
            continue
        if not _glob_matches(shown, args.glob):
            continue
        try:
            if real.stat().st_size > SEARCH_MAX_FILE_BYTES:
                continue
            data = real.read_bytes()
        except OSError:
            continue
        if _is_binary(data):
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if pattern.search(line[:2000]):
                if len(hits) >= cfg.max_search_results:
                    capped = True
                    break
                hits.append(f"{shown}:{number}: {line.strip()[:SEARCH_LINE_CHARS]}")
        if capped:
            break
    if not hits:
        return f"[no matches for {args.pattern!r} under {args.path}]"
    if capped:
        hits.append(f"[stopped after {cfg.max_search_results} matches; narrow the search]")
    return "\n".join(hits)


def file_read_tool(workspace: Workspace, cfg: FileToolsConfig) -> ToolSpec:
    """``file_read``: a line range of a text file in the workspace, at most
    ``max_read_bytes`` of it."""

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(FileReadArguments, arguments)
        if args.end_line is not None and args.end_line < args.start_line:
            raise ToolFailed("end_line is before start_line")
        ws = workspace.for_call(context)
        file = ws.resolve(args.path)
        text = await asyncio.to_thread(_read_lines, file, args.path, args, cfg.max_read_bytes)
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
