"""The ``view_attachment`` tool: show the model a file a user sent earlier in this conversation.

An image goes to the model with the message it came with, and after that only when the model
asks for it here: history keeps the message's line about it (its name, its attachment id,
where it is saved), never the bytes. The model names the file by that id, or by its name;
only the files of the call's own session are reachable, so one conversation never sees
another's. An image is read again from the bot's own copy (the workspace's may have been
changed by a tool) and made fit for every provider (:func:`bot.attachments.images.
load_image_part`); any other file is described, with where the workspace has it for
``file_read``. Read-only, and run without asking by default (``approval.auto_approve``).
Offered only to an agent that can see images (:data:`IMAGE_TOOLS`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import Field

from bot.attachments.images import load_image_part
from bot.attachments.lines import IMAGE_AGAIN, SMALLER_IMAGE
from bot.attachments.naming import human_size
from bot.errors import AttachmentError, AttachmentTooLarge
from bot.store.attachments import AttachmentKind, AttachmentRecord, Attachments
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.observation import ToolFailed
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import ToolContext, ToolKind, ToolOutput, ToolResult, ToolSpec

#: Files listed when the one asked for is not found (the newest ones).
LISTED = 10
#: The tools that exist to show the model an image: not offered to an agent that cannot
#: see one (``[attachments] enabled = false``, or no provider of its chain is sent images).
IMAGE_TOOLS = frozenset({"view_attachment"})


class ViewAttachmentArguments(ToolArguments):
    attachment: str = Field(
        min_length=1,
        max_length=300,
        description="The attachment id (as in 'attachment 3f2a…' in the message) or file name.",
    )


def pick(records: Sequence[AttachmentRecord], wanted: str) -> AttachmentRecord:
    """The record ``wanted`` names: its id (also as the line writes it, ``attachment 3f…``),
    else its name (exactly, then ignoring case; the newest of several). :class:`ToolFailed`
    naming the files there are when none matches."""
    wanted = wanted.strip()
    if wanted.lower().startswith("attachment "):
        wanted = wanted[len("attachment ") :].strip()
    for record in records:
        if record.id == wanted.lower():
            return record
    named = [r for r in records if r.name == wanted] or [
        r for r in records if r.name.casefold() == wanted.casefold()
    ]
    if named:
        return named[-1]
    if not records:
        raise ToolFailed("no file was sent in this conversation")
    shown = ", ".join(f"{r.name} ({r.id})" for r in records[-LISTED:])
    raise ToolFailed(f"no attachment {wanted!r} in this conversation; its files: {shown}")


def where(record: AttachmentRecord, workspace: Workspace) -> str:
    """Where the call's workspace has the file, in the words of the message's line."""
    if record.workspace_path is None:
        return "it could not be saved in the workspace"
    root = workspace.real_root()
    try:
        copy = Path(record.workspace_path).resolve()
    except RuntimeError:  # a symlink loop a tool left there; its message names the path
        return "its copy in the workspace is gone (a symlink loop is in its place)"
    if not copy.is_file():
        return "its copy in the workspace is gone"
    if not workspace.contains(copy, root=root):
        return "its copy is outside the workspace these tools see now"
    return f"saved in the workspace as {workspace.display(copy, root=root)}"


def _head(record: AttachmentRecord) -> str:
    return (
        f"{record.name} (attachment {record.id}; {record.mime_type or record.kind.value}, "
        f"{human_size(record.size)})"
    )


async def view(record: AttachmentRecord, workspace: Workspace) -> ToolResult:
    """What the model is shown of ``record`` (see the module doc)."""
    place = where(record, workspace)
    if record.kind is AttachmentKind.IMAGE:
        try:
            image = await load_image_part(Path(record.path), name=record.name)
        except AttachmentError as exc:
            advice = SMALLER_IMAGE if isinstance(exc, AttachmentTooLarge) else IMAGE_AGAIN
            raise ToolFailed(f"{_head(record)} cannot be shown: {exc}; {place}; {advice}") from None
        text = (
            f"image {_head(record)} is attached to this result (a model that reads no images "
            f"gets this line alone); {place}"
        )
        return ToolOutput(text=text, images=(image,))
    if record.kind is AttachmentKind.BINARY:
        return f"file {_head(record)} is not an image or text: nothing to show; {place}"
    noun = "PDF" if record.kind is AttachmentKind.PDF else "file"
    hint = "; read it with file_read" if place.startswith("saved") else ""
    return f"{noun} {_head(record)} is not an image; {place}{hint}"


def view_attachment_tool(attachments: Attachments, workspace: Workspace) -> ToolSpec:
    """Build ``view_attachment`` over the store's ``attachments`` rows; ``workspace`` says
    where the file tools see each file."""

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(ViewAttachmentArguments, arguments)
        records = await attachments.of_session(context.session_key)
        return await view(pick(records, args.attachment), workspace.for_call(context))

    return ToolSpec(
        name="view_attachment",
        description=(
            "Look again at a file a user sent earlier in this conversation: an image is shown "
            "to you with the result; for other files, where the workspace has them."
        ),
        parameters=schema_of(ViewAttachmentArguments),
        handler=handler,
        requires_approval=False,
        kind=ToolKind.READ_ONLY,
        concurrency_safe=True,
    )
