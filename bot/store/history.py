"""Session history: the messages of each session, kept across restarts.

A session key names a conversation (``telegram.main:123[:thread]``); ``/new`` bumps the
session's generation so that older messages stop being part of the context.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from bot.providers.base import ChatMessage, ToolCallRequest
from bot.store.engine import Database
from bot.store.statements import Read, Row, Write

#: ``json.dumps(body, ensure_ascii=False)`` without building an encoder for every message
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode


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
    return _ENCODE(body)


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
    ") AS newest ORDER BY id"
)
# The session's generation is read by the INSERT itself (no round trip to ask first).
_APPEND = (
    "INSERT INTO messages (session_key, generation, turn_id, role, body, created_at)"
    " VALUES (?, COALESCE((SELECT generation FROM sessions WHERE session_key = ?), 0),"
    " ?, ?, ?, ?)"
)
_TOUCH = (
    "INSERT INTO sessions (session_key, generation, updated_at) VALUES (?, 0, ?) "
    "ON CONFLICT (session_key) DO UPDATE SET updated_at = excluded.updated_at"
)


def _decode(rows: list[Row]) -> list[ChatMessage]:
    return [decode_message(r["body"]) for r in rows]


def appending(session_key: str, turn_id: str, messages: Sequence[ChatMessage]) -> list[Write]:
    """The writes of :meth:`History.append` (for a unit of work); none for no messages."""
    if not messages:
        return []
    now = time.time()
    return [
        Write(
            _APPEND,
            [(session_key, session_key, turn_id, m.role, encode_message(m), now) for m in messages],
        ),
        Write(_TOUCH, [(session_key, now)]),
    ]


class History:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def load(self, session_key: str, *, limit: int = LOAD_LIMIT) -> list[ChatMessage]:
        """The current generation's messages, oldest first (at most ``limit`` newest)."""
        return await self._db.read(self.loading(session_key, limit=limit))

    @staticmethod
    def loading(session_key: str, *, limit: int = LOAD_LIMIT) -> Read[list[ChatMessage]]:
        """The query of :meth:`load`, as a value: to run after a unit of work's writes, in
        its transaction (``store.commit(work, then=store.history.loading(key))``)."""
        return Read(_LOAD, (session_key, limit), _decode)

    async def append(self, session_key: str, turn_id: str, messages: Sequence[ChatMessage]) -> None:
        """Append messages atomically: all of them or none (one trip)."""
        await self._db.commit(appending(session_key, turn_id, messages))

    async def answer_of(self, session_key: str, turn_id: str) -> str | None:
        """The final answer the run ``turn_id`` appended to the session, as it was sent
        (stripped): its last message, when that is the assistant's text with no tool call;
        None when the run ended otherwise or never got there."""
        row = await self._db.fetchone(
            "SELECT body FROM messages WHERE session_key = ? AND turn_id = ?"
            " ORDER BY id DESC LIMIT 1",
            (session_key, turn_id),
        )
        if row is None:
            return None
        message = decode_message(row["body"])
        if message.role != "assistant" or message.tool_calls:
            return None
        return message.content.strip() or None

    async def forget_turn(self, session_key: str, turn_id: str) -> int:
        """Delete what the run ``turn_id`` appended to the session (a cut-off run about to
        run again from the start); the number of messages deleted."""
        rows = await self._db.execute_returning_all(
            "DELETE FROM messages WHERE session_key = ? AND turn_id = ? RETURNING id",
            (session_key, turn_id),
        )
        return len(rows)

    async def reset(self, session_key: str) -> None:
        """Start a new session (``/new``): older messages leave the context."""
        await self._db.execute(
            "INSERT INTO sessions (session_key, generation, updated_at) VALUES (?, 1, ?) "
            "ON CONFLICT (session_key) DO UPDATE SET generation = sessions.generation + 1, "
            "updated_at = excluded.updated_at",
            (session_key, time.time()),
        )
