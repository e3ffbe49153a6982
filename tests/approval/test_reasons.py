"""The policy's reasons: one enum, one rendering of their words, a grant's id only with a grant."""

from __future__ import annotations

import pytest

from bot.approval.gate import Assessment, PolicyResult
from bot.approval.reasons import PolicyReason, policy_text

#: Each reason's words, as logs show them and audit rows store them after ``policy: ``.
WORDS = {
    PolicyReason.DENY_LIST: "deny list",
    PolicyReason.READONLY_LEVEL: "readonly level",
    PolicyReason.FULL_LEVEL: "full level",
    PolicyReason.ALWAYS_ASK: "always_ask",
    PolicyReason.GRANT: "grant #12",
    PolicyReason.AUTO_APPROVE: "auto_approve",
    PolicyReason.READ_ONLY_TOOL: "read-only tool",
    PolicyReason.SIDE_EFFECTS: "side-effecting tool",
    PolicyReason.QUORUM: "quorum",
}


def test_every_reason_has_its_words() -> None:
    assert set(WORDS) == set(PolicyReason)


@pytest.mark.parametrize(("reason", "words"), WORDS.items(), ids=[r.name for r in WORDS])
def test_words_and_stored_reason(reason: PolicyReason, words: str) -> None:
    grant_id = 12 if reason is PolicyReason.GRANT else None
    quorum = 2 if reason is PolicyReason.QUORUM else 1
    result = PolicyResult(
        assessment=Assessment.ALLOW, reason=reason, grant_id=grant_id, quorum=quorum
    )
    assert policy_text(reason, grant_id) == result.text == words
    assert result.audit_reason == f"policy: {words}"


@pytest.mark.parametrize(
    ("reason", "grant_id"),
    [(PolicyReason.GRANT, None), (PolicyReason.AUTO_APPROVE, 3)],
    ids=["a grant without its id", "an id without a grant"],
)
def test_a_grant_id_comes_with_a_grant_only(reason: PolicyReason, grant_id: int | None) -> None:
    with pytest.raises(ValueError, match="grant id"):
        PolicyResult(assessment=Assessment.ALLOW, reason=reason, grant_id=grant_id)
