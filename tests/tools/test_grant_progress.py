"""A call a grant lets run without a card says so in the progress line: which grant, who
made it, when it ends (docs/approvals.md, "Grants chosen at click time")."""

from __future__ import annotations

from collections.abc import Mapping

from bot.approval.gate import ApprovalRequest, Assessment, PolicyResult
from bot.approval.reasons import PolicyReason
from bot.progress import grant_line
from bot.store import Store
from bot.store.grants import NewGrant
from bot.tools.spec import ToolContext, ToolResult
from tests.fakes.scripted_provider import call
from tests.tools.gates import PolicyGate
from tests.tools.harness import Harness, spec

EXPIRES = 1_796_000_000.0  # 2026-11-30 00:53:20 UTC


class UnderGrant(PolicyGate):
    def __init__(self, grant_id: int) -> None:
        super().__init__()
        self.grant_id = grant_id

    async def assess(self, request: ApprovalRequest) -> PolicyResult:
        return PolicyResult(
            assessment=Assessment.ALLOW, reason=PolicyReason.GRANT, grant_id=self.grant_id
        )


async def act(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
    return "done"


async def test_a_call_under_a_grant_names_it_in_the_progress_line(store: Store) -> None:
    grant_id = await store.grants.create(
        NewGrant(
            tool="act",
            scope="conversation",
            scope_key="console.main:c1",
            granted_by="U_BEA",
            created_at=EXPIRES - 3600,
            expires_at=EXPIRES,
            size="for 1 h",
        )
    )
    harness = Harness(store, [spec("act", act)], gate=UnderGrant(grant_id))
    await harness.run(call("act", {"x": 1}))
    line = f"🔓 act: ran under grant #{grant_id} by U_BEA, expires 2026-11-30 00:53 UTC"
    assert ("grant", line) in harness.progress.events
    assert grant_line("act", grant_id=3, granted_by="U\u202eX", expires_at=None) == (
        "🔓 act: ran under grant #3 by U\\u202eX, expires never"
    )


async def test_a_call_the_policy_allows_otherwise_says_nothing_of_grants(store: Store) -> None:
    harness = Harness(store, [spec("act", act)])
    await harness.run(call("act", {"x": 1}))
    assert not [e for e in harness.progress.events if e[0] == "grant"]
