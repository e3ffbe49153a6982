"""The crash matrix's rig, shared with ``bench/crash_load.py``: the daemon's config around a
platform fake and an OpenAI-compatible fake, the crash point's environment, and what the
store says after the daemon stopped (inbox, outbox, history, integrity).

The daemon runs as a real process (:func:`tests.ops.daemon_process.start_daemon`); the only
tool with side effects the model calls is ``shell``, allowed without approval
(``auto_approve``), so a turn runs unattended and each run of the command appends one line
to a file in the workspace (:func:`lines` counts them). Tests where it asks first name the
approvers in the channel's table (:func:`approval_table`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bot.crashpoints import ENV as CRASH_ENV

if TYPE_CHECKING:
    from tests.reliability.platform_drivers import PlatformDriver

LLM_KEY = "crash-matrix-model-key-5c2e"
LLM_KEY_ENV = "CRASH_LLM_KEY"
#: The statuses an inbox entry or an outbox reply may be left in once everything settled.
SETTLED_INBOX = frozenset({"done", "failed"})
SETTLED_OUTBOX = frozenset({"sent", "failed"})


def write_config(
    path: Path,
    *,
    llm_url: str,
    tables: Sequence[str],
    workspace: Path,
    on_interrupted: str = "notify",
    concurrency: int | None = None,
    auto_approve: Sequence[str] = ("shell",),
    log_level: str = "info",
) -> Path:
    """The daemon's config: the channel ``tables``, the model at ``llm_url``, ``shell``
    allowed without approval (``auto_approve``), the state next to the file, JSON logs."""
    agent = f'on_interrupted = "{on_interrupted}"\n'
    if concurrency is not None:
        agent += f"max_concurrent_turns = {concurrency}\n"
    path.write_text(
        f"""
[agent]
system_prompt = "test"
turn_timeout_s = 600
{agent}
[providers.default]
kind = "openai"
base_url = "{llm_url}"
model = "gpt-4o-mini"
api_key_env = "{LLM_KEY_ENV}"
max_retries = 0
timeout_s = 600

[approval]
auto_approve = {json.dumps(list(auto_approve))}

[tools.workspace]
path = "{workspace}"

[logging]
level = "{log_level}"
format = "json"
{"".join(tables)}""",
        encoding="utf-8",
    )
    return path


def approval_table(driver: PlatformDriver, approvers: Sequence[str], extra: str = "") -> str:
    """The driver's channel table with :func:`approval_keys`."""
    return driver.channel_table() + approval_keys(driver, approvers, extra)


def approval_keys(driver: PlatformDriver, approvers: Sequence[str], extra: str = "") -> str:
    """The keys of a channel table (and those in ``extra``) where ``approvers`` decide and
    may approve their own requests (``self_approval``)."""
    listed = ", ".join(f'"{who}"' for who in approvers)
    return (
        f"approvers = [{listed}]\n"
        + extra
        + f"[channels.{driver.channel}.approval]\nself_approval = true\n"
    )


def daemon_env(platform_env: Mapping[str, str], crash_at: str | None = None) -> dict[str, str]:
    """The daemon's own variables: the platform tokens, the model key, the crash point."""
    env = {**platform_env, LLM_KEY_ENV: LLM_KEY}
    if crash_at is not None:
        env[CRASH_ENV] = crash_at
    return env


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryMessage:
    session_key: str
    role: str
    content: str
    call_ids: tuple[str, ...]  # an assistant message's tool calls
    answers_call: str | None  # a tool message's call id


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredState:
    """What the database holds once the daemon stopped."""

    integrity: list[tuple[str, ...]]
    inbox: dict[tuple[str, str], tuple[str, str | None]]  # (channel, message_id) -> status
    outbox: list[tuple[str, str, str, str]]  # channel, message_id, kind, status
    history: list[HistoryMessage]
    tool_calls: dict[str, int]  # tool -> rows

    def unsettled_inbox(self) -> list[tuple[str, str, str]]:
        return [
            (channel, message_id, status)
            for (channel, message_id), (status, _) in self.inbox.items()
            if status not in SETTLED_INBOX
        ]

    def unsettled_outbox(self) -> list[tuple[str, str, str, str]]:
        return [row for row in self.outbox if row[3] not in SETTLED_OUTBOX]

    def unanswered_calls(self) -> list[str]:
        """Tool calls in history without a result after them (history not well-formed)."""
        answered = {m.answers_call for m in self.history if m.answers_call is not None}
        return [c for m in self.history for c in m.call_ids if c not in answered]

    def said(self, role: str, needle: str) -> int:
        """How many history messages of ``role`` contain ``needle``."""
        return sum(1 for m in self.history if m.role == role and needle in m.content)


def read_state(db: Path) -> StoredState:
    with sqlite3.connect(db) as conn:
        integrity = conn.execute("PRAGMA integrity_check").fetchall()
        inbox = {
            (channel, message_id): (status, error)
            for channel, message_id, status, error in conn.execute(
                "SELECT channel, message_id, status, error FROM inbox"
            )
        }
        outbox = conn.execute("SELECT channel, message_id, kind, status FROM outbox").fetchall()
        history = [
            _history_message(session_key, body)
            for session_key, body in conn.execute(
                "SELECT session_key, body FROM messages ORDER BY id"
            )
        ]
        tool_calls = dict(conn.execute("SELECT tool, COUNT(*) FROM tool_calls GROUP BY tool"))
    return StoredState(
        integrity=integrity,
        inbox=inbox,
        outbox=outbox,
        history=history,
        tool_calls=tool_calls,
    )


def _history_message(session_key: str, body: str) -> HistoryMessage:
    data = json.loads(body)
    return HistoryMessage(
        session_key=session_key,
        role=str(data["role"]),
        content=str(data.get("content") or ""),
        call_ids=tuple(str(c["id"]) for c in data.get("tool_calls", ())),
        answers_call=data.get("tool_call_id"),
    )


def lines(workspace: Path, name: str) -> list[str]:
    """The lines shell commands appended to files called ``name`` anywhere in the workspace
    (a command writes in its conversation's folder of it, the only place its sandbox lets it
    write), oldest file first."""
    found = sorted(workspace.rglob(name), key=lambda p: p.stat().st_mtime)
    return [line for path in found for line in path.read_text(encoding="utf-8").split()]
