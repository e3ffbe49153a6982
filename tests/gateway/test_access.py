"""Access policy: allow-lists, DM and group policy, mention gating, pairing."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.config import ChannelsConfig
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.gateway.access import DM_DISABLED_REPLY, PAIR_NOT_AUTHORISED, STRANGER_REPLY, AccessPolicy
from bot.gateway.pairing import CODE_TTL_S, MAX_CODES_PER_DAY
from bot.store import Store

TG = ChannelRef(kind="telegram", alias="main")


def channels(**cfg: Any) -> ChannelsConfig:
    base: dict[str, Any] = {"allowed_users": ["alice"], "approvers": ["admin"]}
    base.update(cfg)
    return ChannelsConfig.model_validate({"telegram": {"main": base}})


def envelope(
    *,
    sender: str = "alice",
    direct: bool = False,
    addressed: bool = True,
    conversation: str = "G1",
    is_bot: bool = False,
    text: str = "hello",
    channel: ChannelRef = TG,
    roles: tuple[str, ...] = (),
) -> IngressEnvelope:
    return IngressEnvelope(
        channel=channel,
        message_id="1",
        conversation_id=conversation,
        sender=Sender(id=sender, display_name=sender.title(), is_bot=is_bot, roles=roles),
        text=text,
        reply_target=DeliveryTarget(channel=channel, conversation_id=conversation),
        is_direct=direct,
        is_group=not direct,
        addressed_to_bot=addressed or direct,
    )


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "hatchway.db") as opened:
        yield opened


ACCESS_TABLE: list[tuple[str, dict[str, Any], dict[str, Any], bool, str | None]] = [
    # id, channel config, envelope, allowed, reply
    ("unknown channel", {}, {"channel": ChannelRef(kind="slack", alias="x")}, False, None),
    ("other bot ignored", {}, {"is_bot": True}, False, None),
    (
        "other bot allowed when configured",
        {"ignore_other_bots": False},
        {"is_bot": True},
        True,
        None,
    ),
    ("dm allowlist: allowed user", {}, {"direct": True}, True, None),
    (
        "dm allowlist: stranger gets one line",
        {},
        {"direct": True, "sender": "eve"},
        False,
        STRANGER_REPLY,
    ),
    (
        "dm allowlist: empty list is nobody",
        {"allowed_users": []},
        {"direct": True},
        False,
        STRANGER_REPLY,
    ),
    (
        "dm allowlist: star is everyone",
        {"allowed_users": ["*"]},
        {"direct": True, "sender": "eve"},
        True,
        None,
    ),
    (
        "dm open",
        {"dm_policy": "open", "allowed_users": []},
        {"direct": True, "sender": "eve"},
        True,
        None,
    ),
    ("dm disabled", {"dm_policy": "disabled"}, {"direct": True}, False, DM_DISABLED_REPLY),
    ("group open, mentioned", {}, {}, True, None),
    ("group not mentioned is silent", {}, {"addressed": False}, False, None),
    ("group mention not required", {"require_mention": False}, {"addressed": False}, True, None),
    ("group stranger is silent", {}, {"sender": "eve"}, False, None),
    ("group star", {"allowed_users": ["*"]}, {"sender": "eve"}, True, None),
    (
        "group allowlist, listed",
        {"group_policy": "allowlist", "allowed_conversations": ["G1"]},
        {},
        True,
        None,
    ),
    ("group allowlist, not listed", {"group_policy": "allowlist"}, {}, False, None),
    ("group disabled", {"group_policy": "disabled"}, {}, False, None),
]


@pytest.mark.parametrize(
    ("cfg", "env", "allowed", "reply"),
    [pytest.param(*case[1:], id=case[0]) for case in ACCESS_TABLE],
)
async def test_access_table(
    store: Store, cfg: dict[str, Any], env: dict[str, Any], allowed: bool, reply: str | None
) -> None:
    policy = AccessPolicy(channels(**cfg), store)
    decision = await policy.check(envelope(**env))
    assert (decision.allowed, decision.reply) == (allowed, reply)
    assert decision.reason


async def test_stranger_gets_at_most_one_line_per_interval(store: Store) -> None:
    clock = Clock()
    policy = AccessPolicy(channels(), store, clock=clock)
    dm = envelope(direct=True, sender="eve")
    assert (await policy.check(dm)).reply == STRANGER_REPLY
    assert (await policy.check(dm)).reply is None
    clock.now += 2 * 3600
    assert (await policy.check(dm)).reply == STRANGER_REPLY


def _code(reply: str | None) -> str:
    assert reply is not None
    match = re.search(r"pairing code ([A-Z0-9]{8})", reply)
    assert match, reply
    return match.group(1)


async def test_pairing_flow_with_operator_approval(store: Store) -> None:
    clock = Clock()
    policy = AccessPolicy(channels(dm_policy="pairing"), store, clock=clock)
    dm = envelope(direct=True, sender="eve")
    first = await policy.check(dm)
    assert not first.allowed
    code = _code(first.reply)
    again = await policy.check(dm)
    assert (again.allowed, again.reply) == (False, None)  # pending: no new code, no spam
    outcome = await policy.approve_pairing(code.lower(), "operator:root")
    assert outcome.approved and outcome.record is not None
    assert outcome.record.approved_by == "operator:root"
    assert (await policy.check(dm)).allowed
    # Paired users count as allowed in groups of that alias too, and only that alias.
    assert (await policy.check(envelope(sender="eve"))).allowed
    assert not (await policy.approve_pairing(code, "operator:root")).approved  # single use


async def test_pairing_approved_in_chat_by_an_approver(store: Store) -> None:
    policy = AccessPolicy(channels(dm_policy="pairing"), store, clock=Clock())
    code = _code((await policy.check(envelope(direct=True, sender="eve"))).reply)
    by_user = await policy.check(envelope(sender="alice", text=f"@bot /pair {code}"))
    assert (by_user.allowed, by_user.reply) == (False, PAIR_NOT_AUTHORISED)
    again = await policy.check(envelope(sender="alice", text=f"@bot /pair {code}"))
    assert (again.allowed, again.reply) == (False, None)  # told once, not once per try
    by_stranger = await policy.check(envelope(direct=True, sender="mallory", text=f"/pair {code}"))
    assert not by_stranger.allowed
    assert not await store.pairings.is_paired(str(TG), "eve")
    by_admin = await policy.check(envelope(direct=True, sender="admin", text=f"/pair {code}"))
    assert not by_admin.allowed  # answered by the access layer, never reaches the model
    assert by_admin.reply is not None and by_admin.reply.startswith("Paired Eve (eve)")
    assert await store.pairings.is_paired(str(TG), "eve")
    assert (await policy.check(envelope(direct=True, sender="eve"))).allowed


async def test_pairing_approved_in_chat_by_a_holder_of_an_approver_role(store: Store) -> None:
    # the roles the platform gave with the message count, as on a card
    cfg = channels(dm_policy="pairing", approvers=[], approver_roles=["ops"])
    policy = AccessPolicy(cfg, store, clock=Clock())
    code = _code((await policy.check(envelope(direct=True, sender="eve"))).reply)
    claimed = await policy.check(envelope(sender="alice", text=f"@bot /pair {code}"))
    assert (claimed.allowed, claimed.reply) == (False, PAIR_NOT_AUTHORISED)
    by_role = await policy.check(envelope(sender="bob", roles=("ops",), text=f"@bot /pair {code}"))
    assert by_role.reply is not None and by_role.reply.startswith("Paired Eve (eve)")
    assert await store.pairings.is_paired(str(TG), "eve")


async def test_pairing_code_expires_and_is_rate_limited(store: Store) -> None:
    clock = Clock()
    policy = AccessPolicy(channels(dm_policy="pairing"), store, clock=clock)
    dm = envelope(direct=True, sender="eve")
    codes = []
    for _ in range(MAX_CODES_PER_DAY):
        codes.append(_code((await policy.check(dm)).reply))
        clock.now += CODE_TTL_S + 1
    assert len(set(codes)) == MAX_CODES_PER_DAY
    assert not (await policy.approve_pairing(codes[0], "operator:root")).approved  # expired
    limited = await policy.check(dm)
    assert (limited.allowed, limited.reply) == (False, None)
    clock.now += 86400
    assert _code((await policy.check(dm)).reply)


async def test_pairing_code_of_another_alias_cannot_be_approved_in_chat(store: Store) -> None:
    other = ChannelRef(kind="telegram", alias="other")
    cfg = ChannelsConfig.model_validate(
        {
            "telegram": {
                "main": {"allowed_users": [], "approvers": ["admin"], "dm_policy": "pairing"},
                "other": {"allowed_users": [], "approvers": ["admin"], "dm_policy": "pairing"},
            }
        }
    )
    policy = AccessPolicy(cfg, store, clock=Clock())
    code = _code((await policy.check(envelope(direct=True, sender="eve", channel=other))).reply)
    reply = await policy.check(envelope(direct=True, sender="admin", text=f"/pair {code}"))
    assert reply.reply == "No pending pairing with that code."
    assert not await store.pairings.is_paired(str(other), "eve")
