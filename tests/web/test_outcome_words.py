"""The console's words for a call's outcome and an audit decision: the chat's words, from the
values a row stores; a row from before outcomes were kept says "not recorded", never a
guess."""

from __future__ import annotations

import pytest

from bot.store.audit import Decision
from bot.store.tool_calls import ToolCallRecord
from bot.webconsole.outcomes import call_outcome, decision_words


def _call(**fields: object) -> ToolCallRecord:
    base: dict[str, object] = {
        "turn_id": "t",
        "call_id": "c",
        "session_key": "telegram.main:1",
        "channel": "telegram.main",
        "tool": "shell",
        "arguments": "{}",
        "status": "executed",
        "synthetic": False,
        "observation": "",
        "duration_ms": 1.0,
    }
    return ToolCallRecord(**{**base, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "words", "css"),
    [
        ({}, "ran (failed or not: not recorded)", "outcome-unknown"),
        ({"approved_by": "7"}, "ran (failed or not: not recorded), let run by", "outcome-unknown"),
        ({"status": "not_executed"}, "not run (why: not recorded)", "outcome-unknown"),
        ({"status": "interrupted"}, "stopped", "outcome-stopped"),
        ({"failed": False, "reason": "none"}, "ran ok", "outcome-ok"),
        (
            {"failed": True, "failure": "HTTP 404", "reason": "none"},
            "ran and failed: HTTP 404",
            "outcome-failed",
        ),
        (
            {"failed": False, "reason": "none", "decision": "approved", "decided_by": "7"},
            "ran ok, approved by",
            "outcome-ok",
        ),
        (
            {"failed": False, "reason": "none", "decision": "always", "decided_by": "7"},
            "ran ok, approved and granted by",
            "outcome-ok",
        ),
        (
            {"status": "not_executed", "reason": "policy_denied", "decision": "policy_denied"},
            "denied by the policy",
            "outcome-denied",
        ),
        (
            {
                "status": "not_executed",
                "reason": "approval_timed_out",
                "decision": "expired",
                "decision_reason": "restart",
            },
            "expired: the bot restarted",
            "outcome-expired",
        ),
        (
            {
                "status": "not_executed",
                "reason": "auto_denied",
                "decision": "auto_denied",
                "decision_reason": "no approver configured",
            },
            "refused by the runtime: no approver configured",
            "outcome-denied",
        ),
        (
            {"status": "env_error", "reason": "environment"},
            "could not run: environment error",
            "outcome-failed",
        ),
    ],
)
def test_a_calls_outcome_in_words(fields: dict[str, object], words: str, css: str) -> None:
    outcome = call_outcome(_call(**fields))
    assert (outcome.label, outcome.css) == (words, css)


@pytest.mark.parametrize(
    ("decision", "reason", "words"),
    [
        (Decision.EDITED, "web", "denied with a reply"),
        (Decision.ALWAYS, "click", "approved and granted"),
        (Decision.CLICK_REFUSED_APPROVE, "not_authorised", "refused: not an approver"),
        (Decision.CLICK_REFUSED_DENY, "self_approval", "refused: their own request"),
        (Decision.EXPIRED, "timeout", "expired: nobody answered in time"),
        (Decision.POLICY_ALLOWED, "policy: grant #3", "allowed by the policy"),
    ],
)
def test_an_audit_decision_in_words(decision: Decision, reason: str, words: str) -> None:
    assert decision_words(decision, reason)[0] == words
