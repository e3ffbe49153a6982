"""Session history: the messages of each session, kept across restarts.

A session key names a conversation (``telegram.main:123[:thread]``); ``/new`` bumps the
session's generation so that older messages stop being part of the context.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from bot.providers.base import ChatMessage, ToolCallRequest
from bot.store.db import Database, Transaction


def encode_message(message: ChatMessage) -> str:
    body: dict[str, object] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        body["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        body["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        body["name"] = message.name
    return json.dumps(body, ensure_ascii=False)


def decode_message(text: str) -> ChatMessage:
    body = json.loads(text)
    calls = tuple(
        ToolCallRequest(id=c["id"], name=c["name"], arguments=c["arguments"])
        for c in body.get("tool_calls", ())
    )
    return ChatMessage(
        role=body["role"],
        content=body.get("content", ""),
        tool_calls=calls,
        tool_call_id=body.get("tool_call_id"),
        name=body.get("name"),
    )


LOAD_LIMIT = 500
_LOAD = (
    "SELECT body FROM ("
    "  SELECT m.id, m.body FROM messages m"
    "  LEFT JOIN sessions s ON s.session_key = m.session_key"
    "  WHERE m.session_key = ? AND m.generation = COALESCE(s.generation, 0)"
    "  ORDER BY m.id DESC LIMIT ?"
    ") ORDER BY id"
)


class History:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def load(self, session_key: str, *, limit: int = LOAD_LIMIT) -> list[ChatMessage]:
        """The current generation's messages, oldest first (at most ``limit`` newest)."""
        rows = await self._db.fetchall(_LOAD, (session_key, limit))
        return [decode_message(r["body"]) for r in rows]

    @staticmethod
    async def load_in(
        tx: Transaction, session_key: str, *, limit: int = LOAD_LIMIT, last: bool = False
    ) -> list[ChatMessage]:
        """:meth:`load` inside a transaction the caller holds: it sees what the transaction
        appended. ``last``: the read ends the transaction and its commit travels with it
        (see :meth:`Transaction.fetchall`)."""
        rows = await tx.fetchall(_LOAD, (session_key, limit), last=last)
        return [decode_message(r["body"]) for r in rows]

    async def append(self, session_key: str, turn_id: str, messages: Sequence[ChatMessage]) -> None:
        """Append messages atomically: all of them or none."""
        if not messages:
            return
        async with self._db.transaction() as tx:
            await self.append_in(tx, session_key, turn_id, messages)

    async def append_in(
        self, tx: Transaction, session_key: str, turn_id: str, messages: Sequence[ChatMessage]
    ) -> None:
        """:meth:`append` inside a transaction the caller holds (to commit messages together
        with other rows, e.g. the ``tool_calls`` rows of the same tool batch)."""
        if not messages:
            return
        now = time.time()
        # The session's generation is read by the INSERT itself (no round trip to ask
        # first); both statements are queued and travel with the transaction's commit.
        await tx.executemany(
            "INSERT INTO messages (session_key, generation, turn_id, role, body, created_at)"
            " VALUES (?, COALESCE((SELECT generation FROM sessions WHERE session_key = ?), 0),"
            " ?, ?, ?, ?)",
            [(session_key, session_key, turn_id, m.role, encode_message(m), now) for m in messages],
        )
        await tx.executemany(
            "INSERT INTO sessions (session_key, generation, updated_at) VALUES (?, 0, ?) "
            "ON CONFLICT (session_key) DO UPDATE SET updated_at = excluded.updated_at",
            [(session_key, now)],
        )

    async def reset(self, session_key: str) -> None:
        """Start a new session (``/new``): older messages leave the context."""
        await self._db.execute(
            "INSERT INTO sessions (session_key, generation, updated_at) VALUES (?, 1, ?) "
            "ON CONFLICT (session_key) DO UPDATE SET generation = generation + 1, "
            "updated_at = excluded.updated_at",
            (session_key, time.time()),
        )
