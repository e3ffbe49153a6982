"""Audit rows for approval decisions, and their export formats.

Every value put into a row is scrubbed here, so callers cannot forget: the argument summary
comes from :func:`bot.approval.summary.summarise`, free text goes through ``scrub_text``.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime

from bot.approval.gate import ApprovalRequest
from bot.approval.summary import summary_json
from bot.channel import ApprovalChoice
from bot.scrub import scrub_text
from bot.store.approvals import ApprovalRecord, Resolution
from bot.store.audit import AuditEntry, Decision
from bot.visible_text import visible

FIELDS: tuple[str, ...] = (
    "id",
    "at",
    "channel",
    "conversation_id",
    "requester",
    "tool",
    "summary",
    "fingerprint",
    "decision",
    "decided_by",
    "reason",
    "latency_ms",
    "turn_id",
    "call_id",
)


def entry(
    *,
    at: float,
    channel: str,
    conversation_id: str,
    requester: str,
    tool: str,
    lines: tuple[str, ...],
    fingerprint: str,
    decision: Decision,
    decided_by: str,
    reason: str,
    latency_ms: float = 0.0,
    turn_id: str | None,
    call_id: str | None,
) -> AuditEntry:
    return AuditEntry(
        at=at,
        channel=channel,
        conversation_id=conversation_id,
        requester=scrub_text(requester),
        tool=tool,
        summary=summary_json(lines),
        fingerprint=fingerprint,
        decision=decision,
        decided_by=scrub_text(decided_by),
        reason=scrub_text(reason),
        latency_ms=round(latency_ms, 3),
        turn_id=turn_id,
        call_id=call_id,
    )


def entry_for_request(
    request: ApprovalRequest,
    lines: tuple[str, ...],
    *,
    at: float,
    decision: Decision,
    decided_by: str,
    reason: str,
    latency_ms: float = 0.0,
) -> AuditEntry:
    """The row of a decision about ``request`` made without an approvals row (the policy's,
    the terminal's, an auto-deny); ``lines`` is its argument summary."""
    env = request.turn.envelope
    return entry(
        at=at,
        channel=request.turn.channel,
        conversation_id=env.conversation_id,
        requester=env.sender.id,
        tool=request.tool,
        lines=lines,
        fingerprint=request.fingerprint,
        decision=decision,
        decided_by=decided_by,
        reason=reason,
        latency_ms=latency_ms,
        turn_id=request.turn.turn_id,
        call_id=request.call_id,
    )


def entry_for_record(
    record: ApprovalRecord, *, at: float, decision: Decision, decided_by: str, reason: str
) -> AuditEntry:
    return entry(
        at=at,
        channel=record.channel,
        conversation_id=record.conversation_id,
        requester=record.requester,
        tool=record.tool,
        lines=record.summary,
        fingerprint=record.fingerprint,
        decision=decision,
        decided_by=decided_by,
        reason=reason,
        latency_ms=max(0.0, (at - record.created_at) * 1000),
        turn_id=record.turn_id,
        call_id=record.call_id,
    )


def entry_for_resolution(record: ApprovalRecord, resolution: Resolution) -> AuditEntry:
    """The audit row of ``resolution`` applied to ``record``: the same decision, decider,
    reason and time as the row gets, so the two cannot disagree."""
    return entry_for_record(
        record,
        at=resolution.at,
        decision=resolution.status.decision,
        decided_by=resolution.decided_by,
        reason=resolution.reason,
    )


_REFUSED_CLICK = {
    ApprovalChoice.APPROVE: Decision.CLICK_REFUSED_APPROVE,
    ApprovalChoice.DENY: Decision.CLICK_REFUSED_DENY,
    ApprovalChoice.ALWAYS: Decision.CLICK_REFUSED_ALWAYS,
}


def refused_click(choice: ApprovalChoice) -> Decision:
    """The decision recorded for a refused click that tried ``choice``."""
    return _REFUSED_CLICK[choice]


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def _row(e: AuditEntry) -> dict[str, object]:
    """One exported row; every text field shown visibly (no control or bidi character
    reaches the reader's terminal or spreadsheet as itself)."""
    data = asdict(e)
    data["at"] = _iso(e.at)
    return {k: visible(v) if isinstance(v := data[k], str) else v for k in FIELDS}


def to_jsonl(entries: Sequence[AuditEntry]) -> str:
    return "".join(json.dumps(_row(e), ensure_ascii=False) + "\n" for e in entries)


FORMULA_START = ("=", "+", "-", "@")
"""What a spreadsheet reads as the start of a formula."""


def spreadsheet_cell(value: object) -> str:
    """``value`` as a CSV cell no spreadsheet runs: text made visible, and a leading ``'``
    before a formula's first character (leading spaces aside: a spreadsheet may trim them on
    import, and a newline is shown as `` ⏎ ``). Requesters, arguments and reasons are
    attacker-controlled, and ``=HYPERLINK(...)`` or a DDE formula runs when the file opens."""
    text = visible(value) if isinstance(value, str) else str(value)
    return "'" + text if text.lstrip(" ").startswith(FORMULA_START) else text


def to_csv(entries: Sequence[AuditEntry]) -> str:
    """The rows as CSV, every cell through :func:`spreadsheet_cell`."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(FIELDS), lineterminator="\n")
    writer.writeheader()
    for e in entries:
        # a row from before the turn and call ids has an empty cell, not "None"
        writer.writerow({k: spreadsheet_cell("" if v is None else v) for k, v in _row(e).items()})
    return out.getvalue()


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str, now: float) -> float:
    """``--since``: an ISO timestamp (naive means UTC) or a duration back from now
    (``90m``, ``24h``, ``7d``). Raises ``ValueError`` on anything else."""
    match = _DURATION.match(text)
    if match:
        return now - float(match.group(1)) * _UNIT_S[match.group(2)]
    stamp = datetime.fromisoformat(text)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()
