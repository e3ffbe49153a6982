"""The ``send_file`` tool and the :class:`FileOutbox` it uploads through.

Like ``send_message`` it is channel-aware: a missing ``channel`` / ``to`` / ``thread`` is the
conversation the request came from, which needs no approval; any other conversation does
(``approval_check``) and must be one the outbox allows. The file is a workspace file, its
path confined exactly as ``file_read``'s (:mod:`bot.tools.builtin.workspace`). Everything
that can be known before an upload is checked before it, each with an outcome that says what
to do: the file exists and is a regular file, it is not empty, the target's channel posts
files at all (:class:`bot.channel.FileSending`), and the file is within the channel's limit
for that target. The caption is scrubbed like ``send_message``'s text; the name a platform
shows is the file's own unless the model gives one, reduced to a plain file name with no
character that could make it read as another (a right-to-left override, say). An
approver's card names the file, its size and where it would go.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

import structlog
from pydantic import Field

from bot.attachments.naming import human_size, sent_file_name
from bot.envelope import DeliveryTarget
from bot.errors import ChannelError, HatchwayError
from bot.scrub import scrub_text
from bot.tools.builtin import file_diff
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.messaging import is_origin, needs_approval, resolve_target
from bot.tools.builtin.observation import ToolFailed, ToolRefused, short
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import CallPreview, ToolContext, ToolKind, ToolResult, ToolSpec

log = structlog.get_logger(__name__)

MAX_CAPTION_CHARS = 4_000
MAX_NAME_CHARS = 200


@runtime_checkable
class FileOutbox(Protocol):
    """Where ``send_file`` uploads. The daemon's outbox over its channels is one.

    :meth:`allows` is the outbox's own rule for another conversation (as for
    ``send_message``); :meth:`upload_limit` is the largest file the target's channel takes
    there, or None when that channel posts no files (or is not running); :meth:`send_file`
    uploads, raising :class:`bot.errors.ChannelError` with a plain sentence when the platform
    refuses. None of them asks for approval: that already happened.
    """

    def allows(self, target: DeliveryTarget) -> bool: ...

    def upload_limit(self, target: DeliveryTarget) -> int | None: ...

    async def send_file(
        self, target: DeliveryTarget, path: Path, *, name: str, caption: str = ""
    ) -> None: ...


class SendFileArguments(ToolArguments):
    path: str = Field(min_length=1, description="The workspace file to send.")
    caption: str = Field(
        default="", max_length=MAX_CAPTION_CHARS, description="Text posted with the file."
    )
    name: str | None = Field(
        default=None, max_length=MAX_NAME_CHARS, description="File name shown; default: its own."
    )
    channel: str | None = Field(
        default=None, description="Channel as kind.alias (e.g. slack.main); default: this one."
    )
    to: str | None = Field(default=None, description="Conversation id; default: this one.")
    thread: str | None = Field(default=None, description="Thread id; default: this thread.")


def shown_name(given: str | None, file: Path) -> str:
    """The name the platform shows: ``given`` (or the file's own), cleaned by
    :func:`~bot.attachments.naming.sent_file_name` (one line, no folders, no bidi override
    or other invisible character that could make it read as another name)."""
    return (
        sent_file_name(given or "", limit=MAX_NAME_CHARS)
        or sent_file_name(file.name, limit=MAX_NAME_CHARS)
        or "file"
    )


def workspace_file(workspace: Workspace, path: str) -> tuple[Path, int]:
    """The real path of the regular file ``path`` names in ``workspace``, and its size.
    :class:`ToolRefused` outside the workspace or for a sensitive file, :class:`ToolFailed`
    when it is missing, not a regular file, or empty."""
    real = workspace.resolve(path)
    try:
        info = os.stat(real)
    except FileNotFoundError:
        raise ToolFailed(f"{path} does not exist in the workspace") from None
    except OSError as exc:
        raise ToolFailed(f"{path} cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise ToolFailed(f"{path} is a directory; send one file at a time")
    if not stat.S_ISREG(info.st_mode):
        raise ToolFailed(f"{path} is not a regular file")
    if info.st_size == 0:
        raise ToolFailed(f"{path} is empty: platforms take no empty files, nothing was sent")
    return real, info.st_size


def _where(target: DeliveryTarget) -> str:
    where = f"{target.channel}:{target.conversation_id}"
    return f"{where} (thread {target.thread_id})" if target.thread_id else where


def send_file_tool(outbox: FileOutbox, workspace: Workspace) -> ToolSpec:
    """Build ``send_file`` over ``outbox``, with paths confined to ``workspace``."""

    def approval_notes(arguments: Mapping[str, object], context: ToolContext) -> tuple[str, ...]:
        # asked for every call before its approval: answers from what it can see, never raises
        try:
            args = parse_arguments(SendFileArguments, arguments)
            target = resolve_target(args, context)
        except HatchwayError:
            return ()
        try:
            real, size = workspace_file(workspace.for_call(context), args.path)
        except (HatchwayError, OSError, RuntimeError) as exc:
            file = f"file: {short(args.path)} ({exc})"
        else:
            file = f"file: {short(shown_name(args.name, real))}, {human_size(size)}"
        return (file, f"to: {_where(target)}")

    async def preview(arguments: Mapping[str, object], context: ToolContext) -> CallPreview:
        args = parse_arguments(SendFileArguments, arguments)
        return await file_diff.preview_sent(workspace, context, args.path)

    async def binding(arguments: Mapping[str, object], context: ToolContext) -> str:
        args = parse_arguments(SendFileArguments, arguments)
        return await asyncio.to_thread(file_diff.current_hash, workspace, context, args.path)

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(SendFileArguments, arguments)
        target = resolve_target(args, context)
        # the conversation the request came from is always allowed, as for send_message
        if not is_origin(target, context) and not outbox.allows(target):
            raise ToolRefused(
                f"{target.channel}:{target.conversation_id} is not a conversation this bot "
                "can post to"
            )
        real, size = workspace_file(workspace.for_call(context), args.path)
        name = shown_name(args.name, real)
        limit = outbox.upload_limit(target)
        if limit is None:
            raise ToolFailed(f"{target.channel} cannot post files: nothing was sent")
        if size > limit:
            shown, most = human_size(size), human_size(limit)
            if shown == most:  # rounded alike: the bytes tell them apart
                shown, most = f"{size:,} bytes", f"{limit:,} bytes"
            raise ToolFailed(
                f"{name} is {shown}, over the {most} {target.channel} takes there: nothing "
                "was sent (a smaller or compressed file would go)"
            )
        try:
            await outbox.send_file(target, real, name=name, caption=scrub_text(args.caption))
        except ChannelError as exc:
            raise ToolFailed(f"the upload of {name} failed: {exc}") from None
        log.info("send_file_sent", channel=str(target.channel), bytes=size)
        return f"sent {name} ({human_size(size)}) to {_where(target)}"

    return ToolSpec(
        name="send_file",
        description=(
            "Send a workspace file to a chat as an attachment, with an optional caption. "
            "Without channel/to it goes to the current conversation; another conversation "
            "needs approval."
        ),
        parameters=schema_of(SendFileArguments),
        handler=handler,
        requires_approval=True,
        approval_check=needs_approval,
        kind=ToolKind.WRITE,
        channel_aware=True,
        path_arguments=("path",),
        approval_notes=approval_notes,
        approval_preview=preview,
        approval_binding=binding,
    )
