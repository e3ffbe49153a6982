"""The audit log as CSV, streamed: the rows of the console's filter, newest first.

Every cell is written for a spreadsheet that will open it
(:func:`bot.approval.audit.spreadsheet_cell`, as ``hatchway audit --format csv`` writes them).
Tool arguments, names and reasons are attacker-controlled (a model or a chat user wrote them),
and a spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula
(``=HYPERLINK(...)``, DDE): such a cell (leading spaces aside) gets a leading ``'``, which
spreadsheets show as text and do not display. Control and bidirectional characters are shown
as escapes first (:func:`bot.visible_text.visible`), so no tab, carriage return or reordering
mark reaches the reader as itself, and none can hide a formula's start.

The rows are read a batch at a time (:meth:`bot.store.audit.AuditLog.matching`) and written
as they come, so an export of the whole trail holds one batch in memory.
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from aiohttp import web

from bot.approval.audit import FIELDS, spreadsheet_cell
from bot.store.audit import AuditEntry
from bot.webconsole.security import HEADERS


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def csv_row(entry: AuditEntry) -> list[str]:
    """One row in :data:`bot.approval.audit.FIELDS` order (the CLI export's columns)."""
    values: dict[str, object] = {
        "id": entry.id,
        "at": _iso(entry.at),
        "channel": entry.channel,
        "conversation_id": entry.conversation_id,
        "requester": entry.requester,
        "tool": entry.tool,
        "summary": entry.summary,
        "fingerprint": entry.fingerprint,
        "decision": entry.decision.value,
        "decided_by": entry.decided_by,
        "reason": entry.reason,
        "latency_ms": entry.latency_ms,
        "turn_id": entry.turn_id or "",
        "call_id": entry.call_id or "",
    }
    return [spreadsheet_cell(values[name]) for name in FIELDS]


def _line(cells: list[str]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow(cells)
    return out.getvalue().encode("utf-8")


async def stream_csv(
    request: web.Request, entries: AsyncIterator[AuditEntry], *, filename: str
) -> web.StreamResponse:
    """Send ``entries`` as a CSV download named ``filename``, written as they are read."""
    # The console's headers are set here: a streamed answer's go out before the middleware
    # sees it.
    response = web.StreamResponse(
        headers={
            **HEADERS,
            "Content-Type": "text/csv; charset=utf-8",
            "Content-Disposition": f'attachment; filename="{filename}"',
        }
    )
    await response.prepare(request)
    await response.write(_line(list(FIELDS)))
    chunk: list[bytes] = []
    async for entry in entries:
        chunk.append(_line(csv_row(entry)))
        if len(chunk) >= 200:
            await response.write(b"".join(chunk))
            chunk = []
    if chunk:
        await response.write(b"".join(chunk))
    await response.write_eof()
    return response
