"""Reading a conversation back from the fake Slack, as the Web API does it.

``conversations.history`` (the top level: messages that are not thread replies, and replies
also sent to the channel; newest first) and ``conversations.replies`` (a thread: its parent
first, then the replies, oldest first), both limited to ``oldest``..``latest`` (exclusive
unless ``inclusive``), paged by ``limit`` (history: default 100, at most 999; replies:
default 1000) with ``has_more`` and ``response_metadata.next_cursor``. A message's
``metadata`` is returned only when the call asks with ``include_all_metadata``.
Message metadata given to ``chat.postMessage`` is checked by :mod:`tests.fakes.slack_rules`.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

JSON = dict[str, Any]
Messages = Mapping[tuple[str, str], JSON]


def _truthy(value: object) -> bool:
    return str(value).lower() in ("1", "true")


def _window(params: JSON) -> Callable[[str], bool]:
    inclusive = _truthy(params.get("inclusive"))
    oldest = float(params.get("oldest") or 0)
    latest = float(params.get("latest") or "inf")

    def inside(ts: str) -> bool:
        value = float(ts)
        return oldest <= value <= latest if inclusive else oldest < value < latest

    return inside


def _shown(message: JSON, params: JSON) -> JSON:
    if _truthy(params.get("include_all_metadata")):
        return dict(message)
    return {k: v for k, v in message.items() if k != "metadata"}


def _page(messages: list[JSON], params: JSON, *, default: int, cap: int) -> JSON:
    """A page of ``messages`` (already in the order Slack returns them) from the cursor."""
    cursor = str(params.get("cursor") or "")
    start = int(base64.b64decode(cursor).decode().removeprefix("next:")) if cursor else 0
    limit = min(int(params.get("limit") or default), cap)
    page = messages[start : start + limit]
    more = start + limit < len(messages)
    next_cursor = base64.b64encode(f"next:{start + limit}".encode()).decode() if more else ""
    return {
        "ok": True,
        "messages": [_shown(m, params) for m in page],
        "has_more": more,
        "response_metadata": {"next_cursor": next_cursor},
    }


def _ordered(messages: Messages, channel: str) -> list[JSON]:
    here = [m for (where, _), m in messages.items() if where == channel]
    return sorted(here, key=lambda m: float(m["ts"]))


def history(messages: Messages, channel: str, params: JSON) -> JSON:
    """``conversations.history`` of ``channel``."""
    inside = _window(params)
    top = [
        m
        for m in _ordered(messages, channel)
        if inside(m["ts"])
        and (m.get("thread_ts") in (None, m["ts"]) or m.get("subtype") == "thread_broadcast")
    ]
    return _page(list(reversed(top)), params, default=100, cap=999)


def replies(messages: Messages, channel: str, params: JSON) -> JSON:
    """``conversations.replies`` of the thread of the message at ``ts``: its parent first,
    then the replies inside the window."""
    message = messages.get((channel, str(params.get("ts"))))
    if message is None:
        return {"ok": False, "error": "thread_not_found"}
    root = str(message.get("thread_ts") or message["ts"])
    inside = _window(params)
    thread = [
        m
        for m in _ordered(messages, channel)
        if m["ts"] != root and m.get("thread_ts") == root and inside(m["ts"])
    ]
    parent = messages.get((channel, root))
    return _page(([parent] if parent else []) + thread, params, default=1000, cap=1000)
