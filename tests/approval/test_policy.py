"""The decision order: deny list → level → always_ask → grants → auto_approve → ask."""

from __future__ import annotations

from typing import Any

import pytest

from bot.approval.gate import Assessment, call_fingerprint
from bot.approval.grants import GrantScope, new_grant
from bot.approval.policy import ApprovalPolicy
from bot.approval.reasons import PolicyReason
from bot.store import Store
from bot.store.grants import GrantRecord
from tests.approval.conftest import (
    APPROVER,
    SLACK,
    make_request,
    make_settings,
    service_for,
)

CASES: list[
    tuple[str, dict[str, Any], dict[str, Any], str, bool, bool, Assessment, PolicyReason]
] = [
    # id, [approval], channel override, tool, requires_approval, granted, expected, reason
    (
        "deny beats full",
        {"level": "full", "deny": ["shell"]},
        {},
        "shell",
        True,
        False,
        Assessment.DENY,
        PolicyReason.DENY_LIST,
    ),
    (
        "deny beats grant",
        {"deny": ["shell"]},
        {},
        "shell",
        True,
        True,
        Assessment.DENY,
        PolicyReason.DENY_LIST,
    ),
    (
        "deny pattern",
        {"deny": ["mcp_*"]},
        {},
        "mcp_github_push",
        True,
        False,
        Assessment.DENY,
        PolicyReason.DENY_LIST,
    ),
    (
        "readonly refuses side effects",
        {"level": "readonly"},
        {},
        "shell",
        True,
        True,
        Assessment.DENY,
        PolicyReason.READONLY_LEVEL,
    ),
    (
        "readonly runs read-only tools",
        {"level": "readonly"},
        {},
        "file_read",
        False,
        False,
        Assessment.ALLOW,
        PolicyReason.AUTO_APPROVE,
    ),
    (
        "full allows",
        {"level": "full"},
        {},
        "shell",
        True,
        False,
        Assessment.ALLOW,
        PolicyReason.FULL_LEVEL,
    ),
    (
        "always_ask beats grant",
        {"always_ask": ["shell"]},
        {},
        "shell",
        True,
        True,
        Assessment.ASK,
        PolicyReason.ALWAYS_ASK,
    ),
    (
        "always_ask beats auto_approve",
        {"always_ask": ["file_read"]},
        {},
        "file_read",
        False,
        False,
        Assessment.ASK,
        PolicyReason.ALWAYS_ASK,
    ),
    ("grant allows", {}, {}, "shell", True, True, Assessment.ALLOW, PolicyReason.GRANT),
    (
        "auto_approve allows",
        {"auto_approve": ["shell"]},
        {},
        "shell",
        True,
        False,
        Assessment.ALLOW,
        PolicyReason.AUTO_APPROVE,
    ),
    (
        "read-only tool allowed under supervised",
        {"auto_approve": []},
        {},
        "lookup",
        False,
        False,
        Assessment.ALLOW,
        PolicyReason.READ_ONLY_TOOL,
    ),
    ("side effect asks", {}, {}, "shell", True, False, Assessment.ASK, PolicyReason.SIDE_EFFECTS),
    (
        "channel override level",
        {},
        {"level": "readonly"},
        "shell",
        True,
        False,
        Assessment.DENY,
        PolicyReason.READONLY_LEVEL,
    ),
    (
        "channel override deny",
        {},
        {"deny": ["shell"]},
        "shell",
        True,
        False,
        Assessment.DENY,
        PolicyReason.DENY_LIST,
    ),
    (
        "channel override auto_approve",
        {},
        {"auto_approve": ["shell"]},
        "shell",
        True,
        False,
        Assessment.ALLOW,
        PolicyReason.AUTO_APPROVE,
    ),
]


@pytest.mark.parametrize(
    ("approval", "override", "tool", "requires", "granted", "expected", "reason"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
async def test_decision_order(
    store: Store,
    approval: dict[str, Any],
    override: dict[str, Any],
    tool: str,
    requires: bool,
    granted: bool,
    expected: Assessment,
    reason: PolicyReason,
) -> None:
    settings = make_settings(approval, approval=override)
    service = service_for(settings, store)
    if granted:
        await store.grants.create(
            new_grant(
                tool=tool,
                scope="conversation",
                channel=SLACK,
                conversation_id="C1",
                granted_by="U_ADMIN",
                now=1.0,
                ttl_s=None,
            )
        )
    result = await service.assess(make_request(tool, {"x": 1}, requires_approval=requires))
    assert (result.assessment, result.reason) == (expected, reason)
    assert result.grant_id == (1 if reason is PolicyReason.GRANT else None)


@pytest.mark.parametrize(
    ("scope", "conversation", "matches"),
    [
        ("conversation", "C1", True),
        ("conversation", "C2", False),
        ("channel", "C2", True),
        ("global", "C9", True),
    ],
)
async def test_grant_scopes(
    store: Store, scope: GrantScope, conversation: str, matches: bool
) -> None:
    from tests.approval.conftest import make_envelope

    service = service_for(make_settings(), store)
    await store.grants.create(
        new_grant(
            tool="shell",
            scope=scope,
            channel=SLACK,
            conversation_id="C1",
            granted_by="U_ADMIN",
            now=1.0,
            ttl_s=None,
        )
    )
    request = make_request(envelope=make_envelope(conversation=conversation))
    expected = Assessment.ALLOW if matches else Assessment.ASK
    assert (await service.assess(request)).assessment is expected


async def test_expired_and_revoked_grants_do_not_match(store: Store) -> None:
    now = [1000.0]
    settings = make_settings()
    from bot.approval.service import ApprovalService

    service = ApprovalService(settings, store, lambda _ref: None, clock=lambda: now[0])
    grant_id = await store.grants.create(
        new_grant(
            tool="shell",
            scope="conversation",
            channel=SLACK,
            conversation_id="C1",
            granted_by="U_ADMIN",
            now=now[0],
            ttl_s=60,
        )
    )
    assert (await service.assess(make_request())).assessment is Assessment.ALLOW
    now[0] += 61
    assert (await service.assess(make_request())).assessment is Assessment.ASK
    now[0] -= 61
    assert await store.grants.revoke(grant_id, now[0])
    assert not await store.grants.revoke(grant_id, now[0])
    assert (await service.assess(make_request())).assessment is Assessment.ASK


async def test_model_approved_argument_changes_nothing(store: Store) -> None:
    service = service_for(make_settings(), store)
    plain = make_request(arguments={"command": "rm x"})
    marked = make_request(arguments={"command": "rm x", "approved": True})
    assert (await service.assess(marked)).assessment is Assessment.ASK
    assert (await service.assess(plain)).assessment is Assessment.ASK
    # The marker is just another argument: it changes the fingerprint, never the decision.
    assert marked.fingerprint != plain.fingerprint


def test_a_requests_fingerprint_is_hashed_once() -> None:
    request = make_request(arguments={"command": "ls", "cwd": "/tmp"})
    first = request.fingerprint
    assert first == call_fingerprint("shell", {"cwd": "/tmp", "command": "ls"})
    assert request.fingerprint is first  # kept, not hashed again


async def test_policy_denials_and_unprompted_side_effects_are_audited(store: Store) -> None:
    service = service_for(make_settings({"deny": ["shell"], "auto_approve": ["file_write"]}), store)
    await service.assess(make_request("shell"))
    await service.assess(make_request("file_write", {"path": "a"}))
    await service.assess(make_request("file_read", {"path": "a"}, requires_approval=False))
    rows = await store.audit.since()
    assert [(r.tool, r.decision, r.decided_by, r.reason) for r in rows] == [
        ("shell", "policy_denied", "runtime", "policy: deny list"),
        ("file_write", "policy_allowed", "runtime", "policy: auto_approve"),
    ]


@pytest.mark.parametrize(
    ("approval", "granted", "decision", "stored"),
    [
        pytest.param({"deny": ["shell"]}, False, "policy_denied", "policy: deny list", id="deny"),
        pytest.param(
            {"level": "readonly"}, False, "policy_denied", "policy: readonly level", id="readonly"
        ),
        pytest.param({"level": "full"}, False, "policy_allowed", "policy: full level", id="full"),
        pytest.param(
            {"auto_approve": ["shell"]},
            False,
            "policy_allowed",
            "policy: auto_approve",
            id="auto_approve",
        ),
        pytest.param({}, True, "policy_allowed", "policy: grant #1", id="grant"),
    ],
)
async def test_every_audited_policy_reason_is_stored_as_before(
    store: Store, approval: dict[str, Any], granted: bool, decision: str, stored: str
) -> None:
    """The stored reason of each rule that can leave an audit row, spelt as rows written
    before :class:`PolicyReason` spell it (no migration rewrites them)."""
    if granted:
        await store.grants.create(
            new_grant(
                tool="shell",
                scope="conversation",
                channel=SLACK,
                conversation_id="C1",
                granted_by="U_ADMIN",
                now=1.0,
                ttl_s=None,
            )
        )
    result = await service_for(make_settings(approval), store).assess(make_request("shell"))
    [row] = await store.audit.since()
    assert (row.decision, row.decided_by, row.reason) == (decision, "runtime", stored)
    assert (row.turn_id, row.call_id) == ("turn-1", "call-1")  # the call it is about
    assert result.audit_reason == stored


@pytest.mark.parametrize(
    ("approval", "tool", "requires", "looked_up", "expected", "reason"),
    [
        pytest.param(
            {"auto_approve": ["shell"]},
            "shell",
            True,
            False,
            Assessment.ALLOW,
            PolicyReason.AUTO_APPROVE,
            id="auto_approve allows without reading grants",
        ),
        pytest.param(
            {"auto_approve": []},
            "lookup",
            False,
            False,
            Assessment.ALLOW,
            PolicyReason.READ_ONLY_TOOL,
            id="a read-only tool is allowed without reading grants",
        ),
        pytest.param(
            {},
            "shell",
            True,
            True,
            Assessment.ALLOW,
            PolicyReason.GRANT,
            id="a grant is read when it can turn ask into allow",
        ),
        pytest.param(
            {"always_ask": ["shell"]},
            "shell",
            True,
            False,
            Assessment.ASK,
            PolicyReason.ALWAYS_ASK,
            id="always_ask is decided before grants",
        ),
    ],
)
async def test_grants_are_read_only_when_they_can_change_the_outcome(
    approval: dict[str, Any],
    tool: str,
    requires: bool,
    looked_up: bool,
    expected: Assessment,
    reason: PolicyReason,
) -> None:
    """Each grant lookup is a database read per tool call; an outcome that is ALLOW anyway
    (step 5 or 6) does not wait for one."""
    lookups: list[str] = []

    async def grant() -> GrantRecord | None:
        lookups.append(tool)
        return GrantRecord(
            id=7,
            tool=tool,
            scope="conversation",
            scope_key="slack.team:C1",
            granted_by=APPROVER,
            created_at=1.0,
            expires_at=None,
            revoked_at=None,
        )

    policy = ApprovalPolicy(make_settings(approval))
    result = await policy.evaluate(make_request(tool, requires_approval=requires), grant)
    assert (result.assessment, result.reason, result.grant_id) == (
        expected,
        reason,
        7 if reason is PolicyReason.GRANT else None,
    )
    assert lookups == ([tool] if looked_up else [])
