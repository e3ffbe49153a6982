"""Slack's assistant surface in the fake Slack: assistant threads and the three
``assistant.threads.*`` methods, answered as Slack documents them.

A thread is an assistant thread once :meth:`AssistantThreads.start` opened it (what Slack
does when a person opens the app's assistant pane: the thread's root message, of subtype
``assistant_app_thread``, is in the fake's messages, and Slack sends
``assistant_thread_started``, whose payload ``start`` returns). Then:

- ``assistant.threads.setStatus`` (``channel_id``, ``thread_ts``, ``status``; an empty status
  clears it; ``loading_messages`` at most 10) needs ``assistant:write`` or ``chat:write``; in a
  DM it works only in an assistant thread (``not_in_assistant_thread``), in a channel's thread
  with ``chat:write`` alone (Slack's change of March 2026).
- ``assistant.threads.setSuggestedPrompts`` (``channel_id``, ``prompts``: at most four, each
  with a ``title`` and a ``message``; ``thread_ts``, ``title`` optional) and
  ``assistant.threads.setTitle`` (``channel_id``, ``thread_ts``, ``title``) need
  ``assistant:write`` and an assistant thread.

A missing argument is ``channel_not_found``, ``invalid_thread_ts`` or ``invalid_arguments``;
a missing scope ``missing_scope`` with ``needed`` and ``provided``, as Slack answers.
:attr:`AssistantThreads.scopes` are the app's scopes (take ``assistant:write`` away to see a
workspace without the AI-apps setting).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]

METHODS = frozenset(
    {
        "assistant.threads.setStatus",
        "assistant.threads.setSuggestedPrompts",
        "assistant.threads.setTitle",
    }
)
MAX_PROMPTS = 4
MAX_LOADING_MESSAGES = 10


@dataclass(frozen=True, slots=True)
class Answer:
    """What the fake answers; ``broke_rules`` marks a call Slack refuses as malformed (never
    expected from hatchway), as opposed to a refusal of circumstance (scope, thread)."""

    body: JSON
    broke_rules: bool = False


def _error(word: str, *, broke_rules: bool = False, **extra: Any) -> Answer:
    return Answer({"ok": False, "error": word, **extra}, broke_rules=broke_rules)


@dataclass
class AssistantThreads:
    """The fake's assistant threads and what the app set on them; ``messages`` are the
    fake's stored messages (by (channel, ts)), where a thread's root is put."""

    messages: dict[tuple[str, str], JSON]
    bot_user: str
    scopes: set[str] = field(
        default_factory=lambda: {"assistant:write", "chat:write", "im:history"}
    )
    threads: set[tuple[str, str]] = field(default_factory=set)
    #: every status set, in order, as (channel, thread_ts, status)
    statuses: list[tuple[str, str, str]] = field(default_factory=list)
    titles: dict[tuple[str, str], str] = field(default_factory=dict)
    prompts: dict[tuple[str, str], JSON] = field(default_factory=dict)

    def start(
        self,
        *,
        user: str,
        dm_channel: str,
        thread_ts: str,
        context_channel: str = "",
        team: str = "T0001",
    ) -> JSON:
        """Open an assistant thread; the ``assistant_thread_started`` event callback Slack
        sends for it."""
        self.threads.add((dm_channel, thread_ts))
        self.messages[(dm_channel, thread_ts)] = {
            "type": "message",
            "subtype": "assistant_app_thread",
            "ts": thread_ts,
            "thread_ts": thread_ts,
            "user": self.bot_user,
            "text": "",
        }
        return _callback(
            "assistant_thread_started",
            user=user,
            dm_channel=dm_channel,
            thread_ts=thread_ts,
            context_channel=context_channel,
            team=team,
        )

    def context_changed(
        self, *, user: str, dm_channel: str, thread_ts: str, context_channel: str
    ) -> JSON:
        """The ``assistant_thread_context_changed`` callback of a person viewing another
        channel with the pane open."""
        return _callback(
            "assistant_thread_context_changed",
            user=user,
            dm_channel=dm_channel,
            thread_ts=thread_ts,
            context_channel=context_channel,
            team="T0001",
        )

    def status_of(self, channel: str, thread_ts: str) -> list[str]:
        return [s for c, t, s in self.statuses if (c, t) == (channel, thread_ts)]

    def answer(self, method: str, params: JSON) -> Answer | None:
        """Slack's answer to an ``assistant.threads.*`` call, or None for other methods."""
        if method not in METHODS:
            return None
        channel = str(params.get("channel_id") or "")
        thread_ts = str(params.get("thread_ts") or "")
        if not channel:
            return _error("channel_not_found", broke_rules=True)
        if method == "assistant.threads.setStatus":
            return self._set_status(channel, thread_ts, params)
        if "assistant:write" not in self.scopes:
            return self._missing("assistant:write")
        if method == "assistant.threads.setTitle":
            title = str(params.get("title") or "")
            if not thread_ts:
                return _error("invalid_thread_ts", broke_rules=True)
            if not title.strip():
                return _error("invalid_arguments", broke_rules=True)
            if (channel, thread_ts) not in self.threads:
                return _error("not_in_assistant_thread")
            self.titles[(channel, thread_ts)] = title
            return Answer({"ok": True})
        return self._set_prompts(channel, thread_ts, params)

    def _missing(self, needed: str) -> Answer:
        return _error("missing_scope", needed=needed, provided=",".join(sorted(self.scopes)))

    def _set_status(self, channel: str, thread_ts: str, params: JSON) -> Answer:
        if not ({"assistant:write", "chat:write"} & self.scopes):
            return self._missing("chat:write")
        if not thread_ts:
            return _error("invalid_thread_ts", broke_rules=True)
        if "status" not in params or not isinstance(params["status"], str):
            return _error("invalid_arguments", broke_rules=True)
        loading = params.get("loading_messages")
        if loading is not None and (
            not isinstance(loading, list) or len(loading) > MAX_LOADING_MESSAGES
        ):
            return _error("invalid_arguments", broke_rules=True)
        in_dm = channel.startswith("D")
        if in_dm and (channel, thread_ts) not in self.threads:
            return _error("not_in_assistant_thread")
        if in_dm and "assistant:write" not in self.scopes:
            return self._missing("assistant:write")
        self.statuses.append((channel, thread_ts, params["status"]))
        return Answer({"ok": True})

    def _set_prompts(self, channel: str, thread_ts: str, params: JSON) -> Answer:
        prompts = params.get("prompts")
        if (
            not isinstance(prompts, list)
            or not 1 <= len(prompts) <= MAX_PROMPTS
            or not all(
                isinstance(p, dict)
                and isinstance(p.get("title"), str)
                and p["title"].strip()
                and isinstance(p.get("message"), str)
                and p["message"].strip()
                for p in prompts
            )
        ):
            return _error("invalid_arguments", broke_rules=True)
        if thread_ts and (channel, thread_ts) not in self.threads:
            return _error("not_in_assistant_thread")
        self.prompts[(channel, thread_ts)] = {"title": params.get("title"), "prompts": prompts}
        return Answer({"ok": True})


def _callback(
    kind: str, *, user: str, dm_channel: str, thread_ts: str, context_channel: str, team: str
) -> JSON:
    context: JSON = {"team_id": team, "enterprise_id": ""}
    if context_channel:
        context["channel_id"] = context_channel
    return {
        "token": "verification",
        "team_id": team,
        "api_app_id": "A0001",
        "type": "event_callback",
        "event_id": f"Ev{uuid.uuid4().hex[:10].upper()}",
        "event_time": 1700000000,
        "authorizations": [{"team_id": team, "user_id": "UBOT", "is_bot": True}],
        "event": {
            "type": kind,
            "assistant_thread": {
                "user_id": user,
                "context": context,
                "channel_id": dm_channel,
                "thread_ts": thread_ts,
            },
            "event_ts": thread_ts,
        },
    }
