"""Slack's native streaming in the fake Slack: ``chat.startStream``, ``chat.appendStream`` and
``chat.stopStream``, answered as Slack documents them.

``chat.startStream`` (``channel``; ``thread_ts``, as a streamed message always replies to a
request; ``recipient_user_id`` and ``recipient_team_id`` outside a DM) posts a message of the
bot's in its streaming state and answers its ``ts``; ``chat.appendStream`` (``channel``,
``ts``, ``markdown_text``) adds to it; ``chat.stopStream`` (``channel``, ``ts``; optional
``markdown_text`` and ``metadata``) ends it. ``markdown_text`` is at most 12,000 characters
per call (``msg_too_long``). A call on a message that is not streaming (never was, stopped,
or over Slack's time: :meth:`Streams.expire`) is ``message_not_in_streaming_state``; a
stream call on a ``ts`` that names no message ``message_not_found``. The stored messages are
the fake's own (:attr:`~tests.fakes.slack_server.FakeSlack.messages`), so history, replies
and ``chat.update`` see them like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.fakes.slack_rules import metadata_problem

JSON = dict[str, Any]
METHODS = frozenset({"chat.startStream", "chat.appendStream", "chat.stopStream"})
MAX_MARKDOWN = 12_000


@dataclass(frozen=True, slots=True)
class Answer:
    body: JSON
    broke_rules: bool = False


def _error(word: str, *, broke_rules: bool = False) -> Answer:
    return Answer({"ok": False, "error": word}, broke_rules=broke_rules)


@dataclass
class Streams:
    """The fake's streams over its stored ``messages`` (by (channel, ts))."""

    messages: dict[tuple[str, str], JSON]
    bot_user: str
    bot_id: str
    #: every stream call answered ``ok``, in order, as (method, ts, markdown_text)
    log: list[tuple[str, str, str]] = field(default_factory=list)
    #: an error every ``chat.startStream`` is answered with (a workspace without streaming)
    refuse_starts: str = ""

    def streaming(self) -> list[JSON]:
        """The messages still streaming."""
        return [m for m in self.messages.values() if m.get("streaming")]

    def expire(self) -> None:
        """Every open stream is over (Slack ends one about five minutes after its start)."""
        for message in self.streaming():
            message["streaming"] = False

    def answer(self, method: str, params: JSON, *, ts: str) -> Answer | None:
        if method not in METHODS:
            return None
        channel = str(params.get("channel") or "")
        if not channel:
            return _error("channel_not_found", broke_rules=True)
        text = params.get("markdown_text")
        if text is not None and (not isinstance(text, str) or len(text) > MAX_MARKDOWN):
            return _error("msg_too_long", broke_rules=True)
        if method == "chat.startStream":
            return self._start(channel, params, ts)
        message = self.messages.get((channel, str(params.get("ts") or "")))
        if not params.get("ts"):
            return _error("invalid_arguments", broke_rules=True)
        if message is None:
            return _error("message_not_found")
        if not message.get("streaming"):
            return _error("message_not_in_streaming_state")
        if method == "chat.appendStream":
            if not text:
                return _error("invalid_arguments", broke_rules=True)
            message["text"] = str(message.get("text") or "") + text
        else:
            metadata = params.get("metadata")
            if metadata is not None and (problem := metadata_problem(metadata)):
                return _error(problem, broke_rules=True)
            message["text"] = str(message.get("text") or "") + (text or "")
            message["streaming"] = False
            if metadata is not None:
                message["metadata"] = metadata
        self.log.append((method, str(params["ts"]), text or ""))
        return Answer({"ok": True, "channel": channel, "ts": params["ts"]})

    def _start(self, channel: str, params: JSON, ts: str) -> Answer:
        if self.refuse_starts:
            return _error(self.refuse_starts)
        thread_ts = str(params.get("thread_ts") or "")
        if not thread_ts:
            return _error("invalid_arguments", broke_rules=True)
        if not channel.startswith("D"):
            for name in ("recipient_user_id", "recipient_team_id"):
                if not params.get(name):
                    return _error(f"missing_{name}", broke_rules=True)
        text = str(params.get("markdown_text") or "")
        self.messages[(channel, ts)] = {
            "type": "message",
            "ts": ts,
            "user": self.bot_user,
            "bot_id": self.bot_id,
            "app_id": "A0001",
            "text": text,
            "thread_ts": thread_ts,
            "streaming": True,
        }
        self.log.append(("chat.startStream", ts, text))
        return Answer({"ok": True, "channel": channel, "ts": ts})
