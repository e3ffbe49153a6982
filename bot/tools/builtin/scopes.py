"""Scopes of the built-in tools' data: which folder a call's files live in.

``tools.workspace.scope`` splits the workspace root (``tools.workspace.path``) into folders:

- ``conversation``: ``conversations/<channel>/<conversation>-<hash>``, one per conversation of
  a configured channel. Threads share their conversation's folder (a thread is a side line of
  the same room, and the people who can read it are the room's), and a scheduled run uses the
  folder of the conversation its job was created in.
- ``agent``: ``agents/<agent>-<hash>``, one per agent (one today, :data:`DEFAULT_AGENT`).
- ``shared``: the root itself, every conversation together (the layout before scopes).

Names come from platform ids and config names, so they are made filesystem-safe here: ASCII
letters, digits, ``.``, ``_`` and ``-`` are kept, every other character (``/``, NUL, spaces,
any non-ASCII) becomes ``_``, leading dots and dashes are dropped (no ``..``, no hidden
folders, nothing a command would take for an option) and the result is cut to
:data:`NAME_CHARS`. The hash (:data:`HASH_CHARS` hex digits of SHA-256 over the exact
channel and id) keeps two ids that clean up to the same text apart, so the rule is readable
and collision-free at once; nothing in a name can climb out of its parent.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath
from typing import Literal

WorkspaceScope = Literal["conversation", "agent", "shared"]

DEFAULT_AGENT = "default"
"""The name of the one agent a daemon runs today (its ``agent`` scope folder and notes)."""

CONVERSATIONS_DIR = "conversations"
AGENTS_DIR = "agents"
SCOPE_DIRS = frozenset({CONVERSATIONS_DIR, AGENTS_DIR})
"""The root's own entries when scoped: anything else directly in the root predates scopes."""

NAME_CHARS = 40
HASH_CHARS = 12

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str) -> str:
    """``text`` as a readable folder name: unsafe characters replaced, leading dots and
    dashes dropped, at most :data:`NAME_CHARS` long; ``_`` when nothing is left."""
    cleaned = _UNSAFE.sub("_", text).lstrip(".-")[:NAME_CHARS]
    return cleaned or "_"


def _digest(*parts: str) -> str:
    joined = "\0".join(parts).encode("utf-8", errors="surrogatepass")
    return hashlib.sha256(joined).hexdigest()[:HASH_CHARS]


def scope_folder(
    scope: WorkspaceScope, *, channel: str, conversation_id: str, agent: str = DEFAULT_AGENT
) -> PurePosixPath:
    """The folder of ``scope`` relative to the workspace root (``.`` for ``shared``), for a
    call from ``conversation_id`` of the configured ``channel`` (``kind.alias``)."""
    if scope == "shared":
        return PurePosixPath(".")
    if scope == "agent":
        return PurePosixPath(AGENTS_DIR, f"{safe_name(agent)}-{_digest('agent', agent)}")
    leaf = f"{safe_name(conversation_id)}-{_digest(channel, conversation_id)}"
    return PurePosixPath(CONVERSATIONS_DIR, safe_name(channel), leaf)
