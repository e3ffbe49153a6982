"""Memory tools: ``memory_store`` keeps a note, ``memory_recall`` finds the best matches.

Notes are scoped by ``tools.memory.scope``, with the words of ``tools.workspace.scope``:
``conversation`` (default; each chat has its own, threads share their conversation's, a
scheduled run uses its job's conversation), ``channel`` (every conversation of one configured
channel shares notes), ``agent`` (every conversation of one agent) or ``shared`` (all of them).
The scope comes from the call's :class:`ToolContext`, never from the model's arguments.

Policy defaults: ``memory_recall`` is read-only and auto-approved. ``memory_store`` needs no
approval (it writes only the bot's own notes, in its own database, and reaches nothing outside
it) but is kind ``write``, so the ``readonly`` approval level still blocks it; admins who want
a person to see each note add it to ``approval.always_ask``. Secrets are scrubbed before a
note is stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from bot.config import MemoryToolConfig
from bot.scrub import scrub_text
from bot.store.memory import MemoryNote, MemoryNotes
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.observation import ToolFailed, bounded_text
from bot.tools.builtin.scopes import DEFAULT_AGENT
from bot.tools.spec import ToolContext, ToolKind, ToolResult, ToolSpec

RECALL_OUTPUT_CHARS = 8000


class MemoryStoreArguments(ToolArguments):
    content: str = Field(min_length=1, description="The note to remember.")
    tags: list[str] = Field(
        default_factory=list, max_length=10, description="Optional keywords for recall."
    )


class MemoryRecallArguments(ToolArguments):
    query: str = Field(default="", description="Words to look for; empty returns the newest notes.")
    limit: int = Field(default=5, ge=1, le=20, description="How many notes to return.")


MemoryScope = Literal["conversation", "channel", "agent", "shared"]

SHARED_KEY = "shared:all"

#: How the tools' descriptions name where a note is kept.
PLACES: Mapping[MemoryScope, str] = {
    "conversation": "this conversation",
    "channel": "this channel",
    "agent": "this agent's conversations",
    "shared": "every conversation",
}


def scope_key(scope: MemoryScope, context: ToolContext, *, agent: str = DEFAULT_AGENT) -> str:
    """The memory scope of a call as stored: ``<scope>:<which>`` (the kind first, so the notes
    of one kind share a prefix; see :meth:`MemoryNotes.count_outside`)."""
    if scope == "conversation":
        return f"conversation:{context.channel}:{context.conversation_id}"
    if scope == "channel":
        return f"channel:{context.channel}"
    if scope == "agent":
        return f"agent:{agent}"
    return SHARED_KEY


def _render(notes: list[MemoryNote]) -> str:
    lines = []
    for note in notes:
        tags = f" (tags: {note.tags})" if note.tags else ""
        lines.append(f"[#{note.id}] {note.content}{tags}")
    return "\n".join(lines)


def memory_store_tool(notes: MemoryNotes, cfg: MemoryToolConfig) -> ToolSpec:
    """``memory_store``: keep a note in the memory of the call's scope."""

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(MemoryStoreArguments, arguments)
        content = scrub_text(args.content.strip())
        if len(content) > cfg.max_note_chars:
            raise ToolFailed(
                f"the note is {len(content)} characters; the limit is {cfg.max_note_chars}"
            )
        tags = " ".join(scrub_text(" ".join(tag.split())) for tag in args.tags if tag.strip())
        note_id = await notes.add(
            scope_key=scope_key(cfg.scope, context),
            content=content,
            tags=tags,
            created_by=context.requester,
        )
        return f"stored note #{note_id}"

    return ToolSpec(
        name="memory_store",
        description=(
            f"Remember a short note for later, kept for {PLACES[cfg.scope]}. Use "
            "memory_recall to find it again."
        ),
        parameters=schema_of(MemoryStoreArguments),
        handler=handler,
        requires_approval=False,
        kind=ToolKind.WRITE,
    )


def memory_recall_tool(notes: MemoryNotes, cfg: MemoryToolConfig) -> ToolSpec:
    """``memory_recall``: the notes of this scope that best match a query, with their ids."""

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(MemoryRecallArguments, arguments)
        key = scope_key(cfg.scope, context)
        if args.query.strip():
            found = await notes.search(scope_key=key, query=args.query, limit=args.limit)
        else:
            found = await notes.recent(scope_key=key, limit=args.limit)
        if not found:
            return "no matching notes"
        return bounded_text(_render(found), RECALL_OUTPUT_CHARS)

    return ToolSpec(
        name="memory_recall",
        description=(
            f"Search the notes remembered for {PLACES[cfg.scope]}; best matches first, each "
            "with its id. An empty query lists the newest notes."
        ),
        parameters=schema_of(MemoryRecallArguments),
        handler=handler,
        requires_approval=False,
        kind=ToolKind.READ_ONLY,
        concurrency_safe=True,
        retry_safe=True,
    )
