"""``/grants`` in the real gateway, with the real access policy, command limits and a real
SQLite file: the grants that apply in this conversation (size, maker, end), and an
approver revoking one with ``/grants revoke N``; nobody else can, nor revoke a grant of
another conversation."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.gateway.grant_commands import NONE_HERE, NOT_APPROVER, NOT_HERE, USAGE
from bot.store.grants import NewGrant
from tests.gateway.test_commands import envelope
from tests.gateway.test_status_commands import Rig, _rig, answered, settings


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    async for value in _rig(tmp_path, settings(tmp_path)):
        yield value


async def granted(rig: Rig, scope: str, key: str, tool: str, **extra: object) -> int:
    return await rig.store.grants.create(
        NewGrant(
            tool=tool,
            scope=scope,
            scope_key=key,
            granted_by="boss",
            created_at=time.time(),
            **extra,  # type: ignore[arg-type]
        )
    )


async def test_grants_lists_the_grants_that_apply_here(rig: Rig) -> None:
    here = await granted(
        rig,
        "conversation",
        "telegram.main:group1",
        "shell",
        size="for 1 h",
        expires_at=4102444800.0,
    )
    await granted(rig, "conversation", "telegram.main:group2", "file_write", size="always")
    old = await granted(rig, "channel", "telegram.main", "http_fetch")  # before sizes
    await answered(rig, envelope("/grants", conversation="group1", direct=False), "group1", 1)
    (text,) = rig.said_to("group1")
    assert text.splitlines() == [
        "Grants that apply here:",
        f"• #{here} shell: for 1 h, this conversation, by boss, until 2100-01-01 00:00 UTC",
        f"• #{old} http_fetch: always (size not recorded), this channel, by boss, until revoked",
    ]


async def test_an_approver_revokes_a_grant_that_applies_here(rig: Rig) -> None:
    grant = await granted(rig, "conversation", "telegram.main:group1", "shell", size="for 1 h")
    message = envelope(
        f"/grants revoke {grant}", sender="boss", conversation="group1", direct=False
    )
    await answered(rig, message, "group1", 1)
    assert rig.said_to("group1") == [
        f"Grant #{grant} revoked: its tool asks again from its next call."
    ]
    assert await rig.store.grants.list(now=time.time()) == []
    await answered(rig, envelope("/grants", conversation="group1", direct=False), "group1", 2)
    assert rig.said_to("group1")[-1] == NONE_HERE


@pytest.mark.parametrize(
    ("sender", "conversation", "expected"),
    [
        ("member", "group1", NOT_APPROVER),  # a member, not an approver
        ("boss", "group2", NOT_HERE),  # the grant is another conversation's
    ],
)
async def test_a_revoke_that_may_not_happen_changes_nothing(
    rig: Rig, sender: str, conversation: str, expected: str
) -> None:
    grant = await granted(rig, "conversation", "telegram.main:group1", "shell")
    text = f"/grants revoke {grant}"
    await answered(
        rig, envelope(text, sender=sender, conversation=conversation, direct=False), conversation, 1
    )
    assert rig.said_to(conversation) == [expected.format(n=grant)]
    assert [g.id for g in await rig.store.grants.list(now=time.time())] == [grant]


@pytest.mark.parametrize("text", ["/grants revoke", "/grants revoke x", "/grants drop 1"])
async def test_a_malformed_grants_command_says_how(rig: Rig, text: str) -> None:
    await answered(
        rig, envelope(text, sender="boss", conversation="group1", direct=False), "group1", 1
    )
    assert rig.said_to("group1") == [USAGE.format(prefix="/")]
