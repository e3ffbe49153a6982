"""Writing file tools: ``file_write`` (create or overwrite) and ``file_edit`` (exact-match
replace).

Both need approval by default (``requires_approval=True``, kind ``write``), name their path in
``path_arguments`` so the pipeline locks it canonically, are confined to the workspace and
refuse sensitive files. An approver is shown the change as a diff against the file as it is
(:mod:`bot.tools.builtin.file_diff`), and the approval binds to that file's content: if it
changed before the call runs, the call does not run ("file changed"). Writes are atomic: a
temporary file in the same directory is renamed over the target, so a reader never sees half
a file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from pydantic import Field

from bot.config import FileToolsConfig
from bot.tools.builtin import file_diff
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.observation import ToolFailed
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import CallPreview, ToolContext, ToolKind, ToolOutput, ToolResult, ToolSpec


class FileWriteArguments(ToolArguments):
    path: str = Field(min_length=1, description="File path, relative to the workspace.")
    content: str = Field(description="The complete new content of the file.")


class FileEditArguments(ToolArguments):
    path: str = Field(min_length=1, description="File path, relative to the workspace.")
    old_text: str = Field(min_length=1, description="Exact text to replace.")
    new_text: str = Field(description="Replacement text.")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence instead of exactly one."
    )


def _atomic_write(file: Path, data: bytes) -> None:
    mode: int | None = None
    with contextlib.suppress(FileNotFoundError):
        mode = file.stat().st_mode & 0o7777
    fd, temp = tempfile.mkstemp(prefix=f".{file.name}.", suffix=".tmp", dir=file.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, file)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def _unwritten(shown: str, error: OSError) -> ToolFailed:
    """A write the disk refused, in words with no path of the daemon's."""
    return ToolFailed(f"{shown} could not be written: {error.strerror or type(error).__name__}")


def _write(file: Path, shown: str, content: str, max_bytes: int) -> str:
    data = content.encode("utf-8")
    if len(data) > max_bytes:
        raise ToolFailed(
            f"content is {len(data)} bytes; the limit is {max_bytes} (tools.files.max_write_bytes)"
        )
    if file.is_dir():
        raise ToolFailed(f"{shown} is a directory")
    existed = file.exists()
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(file, data)
    except OSError as exc:  # its message names the absolute path: not for the model
        raise _unwritten(shown, exc) from None
    verb = "overwrote" if existed else "created"
    return f"{verb} {shown} ({len(data)} bytes)"


def _edit(file: Path, shown: str, args: FileEditArguments, max_bytes: int) -> str:
    if not file.is_file():
        raise ToolFailed(f"{shown} does not exist or is not a regular file")
    try:
        with file.open("rb") as handle:
            # the size is checked before anything is held: at most max_bytes + 1 are read
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(max_bytes + 1) if size <= max_bytes else b""
    except OSError as exc:  # its message names the absolute path: not for the model
        raise ToolFailed(f"{shown} cannot be read: {exc.strerror or type(exc).__name__}") from None
    if size > max_bytes or len(data) > max_bytes:
        size = max(size, len(data))
        raise ToolFailed(f"{shown} is {size} bytes; too large to edit (limit {max_bytes})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailed(f"{shown} is not UTF-8 text") from None
    count = text.count(args.old_text)
    if count == 0:
        raise ToolFailed(f"old_text was not found in {shown}; read the file and copy it exactly")
    if count > 1 and not args.replace_all:
        raise ToolFailed(
            f"old_text occurs {count} times in {shown}; include more surrounding text so it "
            "matches once, or set replace_all=true"
        )
    updated = text.replace(args.old_text, args.new_text)
    encoded = updated.encode("utf-8")
    if len(encoded) > max_bytes:
        raise ToolFailed(f"the edited file would be {len(encoded)} bytes (limit {max_bytes})")
    try:
        _atomic_write(file, encoded)
    except OSError as exc:
        raise _unwritten(shown, exc) from None
    plural = "s" if count > 1 else ""
    return f"replaced {count} occurrence{plural} in {shown}"


def _binding(workspace: Workspace) -> Callable[[Mapping[str, object], ToolContext], Awaitable[str]]:
    """The file's content hash now (:data:`~bot.tools.spec.ApprovalBinding`)."""

    async def binding(arguments: Mapping[str, object], context: ToolContext) -> str:
        path = str(arguments.get("path", ""))
        return await asyncio.to_thread(file_diff.current_hash, workspace, context, path)

    return binding


def file_write_tool(workspace: Workspace, cfg: FileToolsConfig) -> ToolSpec:
    """``file_write``: create or overwrite a workspace file, making parent directories."""

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(FileWriteArguments, arguments)
        file = workspace.for_call(context).resolve(args.path)
        text = await asyncio.to_thread(_write, file, args.path, args.content, cfg.max_write_bytes)
        return ToolOutput(text=text, paths=(str(file),))

    async def preview(arguments: Mapping[str, object], context: ToolContext) -> CallPreview:
        args = parse_arguments(FileWriteArguments, arguments)
        return await file_diff.preview(workspace, context, args.path, args.content)

    return ToolSpec(
        name="file_write",
        description=(
            "Create or overwrite a file in the workspace with the given content (parent "
            "directories are created). Prefer file_edit for small changes."
        ),
        parameters=schema_of(FileWriteArguments),
        handler=handler,
        requires_approval=True,
        kind=ToolKind.WRITE,
        path_arguments=("path",),
        approval_preview=preview,
        approval_binding=_binding(workspace),
    )


def file_edit_tool(workspace: Workspace, cfg: FileToolsConfig) -> ToolSpec:
    """``file_edit``: replace an exact text in a workspace file; zero or ambiguous matches
    are refused unless ``replace_all``."""

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(FileEditArguments, arguments)
        file = workspace.for_call(context).resolve(args.path)
        text = await asyncio.to_thread(_edit, file, args.path, args, cfg.max_write_bytes)
        return ToolOutput(text=text, paths=(str(file),))

    async def preview(arguments: Mapping[str, object], context: ToolContext) -> CallPreview:
        args = parse_arguments(FileEditArguments, arguments)
        change = (args.old_text, args.new_text, args.replace_all)
        return await file_diff.preview_edit(workspace, context, args.path, change)

    return ToolSpec(
        name="file_edit",
        description=(
            "Replace old_text with new_text in a workspace file. old_text must match exactly "
            "once (copy it from file_read), unless replace_all=true."
        ),
        parameters=schema_of(FileEditArguments),
        handler=handler,
        requires_approval=True,
        kind=ToolKind.WRITE,
        path_arguments=("path",),
        approval_preview=preview,
        approval_binding=_binding(workspace),
    )
