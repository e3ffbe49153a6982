"""Which tool call an audit row decided: its turn and call ids, so that an operator can go
from a decision to the call's row on the turns page and to ``hatchway receipts verify``.

A call's ``tool_calls`` row records the decision its audit row records (migration 0019: the
decision, who decided, and the call's fingerprint, which the audit row keeps too). An audit
row's call is the first call recorded at or after the decision (a call's row is written once
it ran or was refused, after its audit row) with the same fingerprint on the same channel
and conversation, the same decision and the same decider. Each call answers one audit row.
Rows from before migration 0019 and refused clicks (which decided nothing) have no call.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.store.audit import AuditEntry, Decision
from bot.store.tool_calls import ToolCallRecord

#: Clocks of two replicas may disagree by this much (the audit row's and the call's).
SKEW_S = 5.0

#: Refused clicks decide no call.
_NO_CALL = frozenset(
    {Decision.CLICK_REFUSED_APPROVE, Decision.CLICK_REFUSED_DENY, Decision.CLICK_REFUSED_ALWAYS}
)


def _conversation(call: ToolCallRecord) -> str:
    """The conversation id of a call's session key (``kind.alias:conversation[:…]``)."""
    return call.session_key.partition(":")[2]


def match_calls(
    entries: Sequence[AuditEntry], calls: Sequence[ToolCallRecord]
) -> dict[int, ToolCallRecord]:
    """The call each audit row decided, by audit row id (rows without one are left out)."""
    taken: set[tuple[str, str]] = set()
    found: dict[int, ToolCallRecord] = {}
    for entry in sorted(entries, key=lambda e: (e.at, e.id)):
        if entry.decision in _NO_CALL:
            continue
        candidates = [
            call
            for call in calls
            if call.fingerprint == entry.fingerprint
            and call.channel == entry.channel
            and call.decision == entry.decision
            and call.decided_by == entry.decided_by
            and (
                _conversation(call) == entry.conversation_id
                or _conversation(call).startswith(f"{entry.conversation_id}:")
            )
            and (call.created_at or 0.0) >= entry.at - SKEW_S
            and (call.turn_id, call.call_id) not in taken
        ]
        if candidates:
            call = min(candidates, key=lambda c: c.created_at or 0.0)
            taken.add((call.turn_id, call.call_id))
            found[entry.id] = call
    return found
