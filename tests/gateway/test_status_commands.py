"""``/usage`` and ``/status`` in the real gateway, with the real access policy and a real
SQLite file: a person's usage and budgets answered privately (in place in a DM or where the
platform hides the answer, else in their DM with only a pointer in the group, and nothing
when that DM cannot be sent), and what serves a conversation, approvals and grants."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from bot.config import Settings, parse_settings
from bot.envelope import DeliveryTarget, IngressEnvelope
from bot.errors import ChannelError
from bot.gateway import Gateway
from bot.gateway.access import AccessPolicy
from bot.gateway.status_commands import NOT_SENT, SENT_PRIVATELY
from bot.providers.base import Usage
from bot.store import Store
from bot.store.grants import NewGrant
from bot.store.usage import UsageRecord
from tests.fakes.channel import FakeChannel
from tests.gateway.test_commands import REF, envelope
from tests.gateway.test_gateway import Turns, until


def settings(tmp_path: Path, **extra: Any) -> Settings:
    telegram = {
        "token_env": "T",
        "allowed_users": ["member", "member2", "boss"],
        "approvers": ["boss"],
    }
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "providers": {
                "default": {"kind": "openai", "model": "gpt-4o-mini", "api_key_env": "K"},
                "backup": {"kind": "openai", "model": "gpt-4.1-nano", "api_key_env": "K"},
            },
            "agent": {"provider": "default", "fallback": ["backup"]},
            "channels": {"telegram": {"main": telegram}},
            **extra,
        },
        environ={"K": "sk-test-key-1234", "T": "1:x"},
    )


BUDGETS = {
    "budgets": {
        "per_user": {"daily_tokens": 1000},
        "per_conversation": {"monthly_cost": 5},
        "budget_exempt": ["boss"],
    },
    "pricing": {"gpt-4o-mini": {"input": 1.0, "output": 2.0}},
}


@dataclass
class Rig:
    gateway: Gateway
    channel: FakeChannel
    store: Store

    def said_to(self, conversation: str) -> list[str]:
        return [t for target, t in self.channel.sent if target.conversation_id == conversation]


async def _rig(tmp_path: Path, cfg: Settings) -> AsyncIterator[Rig]:
    store = await Store.open(tmp_path / "h.db")
    fake = FakeChannel(REF)
    gateway = Gateway(
        settings=cfg,
        store=store,
        access=AccessPolicy(cfg.channels, store),
        run_turn=Turns(),
        channel_for=lambda ref: fake,
    )
    task = asyncio.create_task(gateway.run())
    try:
        yield Rig(gateway, fake, store)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await store.aclose()


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    async for value in _rig(tmp_path, settings(tmp_path, **BUDGETS)):
        yield value


def call(user: str, conversation: str, tokens: int, cost: float | None) -> UsageRecord:
    return UsageRecord(
        at=time.time(),
        turn_id="t1",
        session_key=f"telegram.main:{conversation}",
        channel="telegram.main",
        conversation_id=conversation,
        user_id=user,
        agent="default",
        provider="default",
        model="gpt-4o-mini",
        usage=Usage(input_tokens=tokens - 50, output_tokens=50),
        latency_ms=10,
        cost=cost,
    )


async def answered(rig: Rig, message: IngressEnvelope, conversation: str, count: int) -> None:
    await rig.gateway.deliver(message)
    await until(lambda: len(rig.said_to(conversation)) >= count)


async def test_usage_in_a_dm_is_answered_there(rig: Rig) -> None:
    await rig.store.usage.record(
        [
            call("member", "member", 300, 0.5),
            call("member", "group1", 200, 0.25),  # another conversation: still theirs
            call("member2", "member", 900, 1.0),  # someone else in this conversation
        ]
    )
    await answered(rig, envelope("/usage", conversation="member"), "member", 1)
    (text,) = rig.said_to("member")
    assert text.splitlines() == [
        "Your model usage on telegram.main (UTC):",
        "• today: 500 tokens, cost 0.7500",
        "• this month: 500 tokens, cost 0.7500",
        "Budgets that apply to you here:",
        "• Your daily tokens: 500 tokens left of 1,000 tokens (resets at 00:00 UTC)",
        "• This conversation's monthly cost: 3.5000 left of 5.0000 "
        f"(resets {text.rsplit('(resets ', 1)[1]}",
    ]
    assert text.rsplit("(resets ", 1)[1].startswith("on 1 ")


async def test_usage_in_a_group_goes_to_the_senders_dm(rig: Rig) -> None:
    await rig.store.usage.record([call("member", "group1", 400, None)])
    await answered(rig, envelope("/usage", conversation="group1", direct=False), "group1", 1)
    assert rig.said_to("group1") == [SENT_PRIVATELY]
    (private,) = rig.said_to("member")
    assert "• today: 400 tokens, cost 0.0000" in private
    assert "Your daily tokens: 600 tokens left of 1,000 tokens" in private
    target = next(t for t, text in rig.channel.sent if text == private)
    assert target == DeliveryTarget(channel=REF, conversation_id="member")


async def test_a_dm_that_cannot_be_sent_shows_nothing_in_the_group(rig: Rig) -> None:
    def refuse(target: DeliveryTarget, text: str) -> None:
        if target.conversation_id == "member":
            raise ChannelError("Forbidden: bot can't initiate conversation with a user")

    rig.channel.on_send = refuse
    await answered(rig, envelope("/usage", conversation="group1", direct=False), "group1", 1)
    assert rig.said_to("group1") == [NOT_SENT.format(prefix="/")]


async def test_a_private_reply_is_answered_in_place(rig: Rig) -> None:
    hidden = replace(envelope("/usage", conversation="C1", direct=False), private_reply=True)
    await answered(rig, hidden, "C1", 1)
    (text,) = rig.said_to("C1")
    assert text.startswith("Your model usage on telegram.main")
    assert rig.said_to("member") == []


async def test_an_exempt_person_and_no_budgets(rig: Rig, tmp_path: Path) -> None:
    await answered(rig, envelope("/usage", sender="boss", conversation="boss"), "boss", 1)
    (text,) = rig.said_to("boss")
    assert text.endswith("No budget stops you (budgets.budget_exempt); your calls still count.")
    async for plain in _rig(tmp_path / "plain", settings(tmp_path / "plain")):
        await answered(plain, envelope("/usage", conversation="member"), "member", 1)
        assert plain.said_to("member") == [
            "Your model usage on telegram.main (UTC):\n• today: 0 tokens\n• this month: 0 tokens"
            "\nNo budget applies to you here."
        ]


async def test_a_stranger_gets_no_usage(rig: Rig) -> None:
    await rig.gateway.deliver(envelope("/usage", sender="nobody", conversation="nobody"))
    await rig.gateway.deliver(envelope("/usage", conversation="member"))
    await until(lambda: len(rig.said_to("member")) >= 1)
    assert all("usage on" not in text for text in rig.said_to("nobody"))


async def test_status_names_agent_model_approvals_and_grants(rig: Rig) -> None:
    now = time.time()
    for scope, key, tool in [
        ("conversation", "telegram.main:group1", "shell"),
        ("conversation", "telegram.main:group2", "file_write"),  # another conversation
        ("channel", "telegram.main", "http_fetch"),
    ]:
        await rig.store.grants.create(
            NewGrant(
                tool=tool,
                scope=scope,
                scope_key=key,
                granted_by="boss",
                created_at=now,
                expires_at=None if tool != "shell" else 4102444800.0,
            )
        )
    await answered(rig, envelope("/status", conversation="group1", direct=False), "group1", 1)
    (text,) = rig.said_to("group1")
    assert text.splitlines() == [
        "Agent: default, chosen by channels.telegram.main.agent. Model: gpt-4o-mini (default);"
        " if it fails: gpt-4.1-nano (backup).",
        "Approvals: nobody can answer one here, so tools that need one are refused.",
        "Grants in force here:",
        "• shell: this conversation, until 2100-01-01 00:00 UTC",
        "• http_fetch: this channel, until revoked",
    ]


async def test_status_says_whether_an_approval_can_be_answered_here(rig: Rig) -> None:
    def capable(sender: str) -> IngressEnvelope:
        where = envelope("/status", sender=sender, conversation="group1", direct=False)
        return replace(where, capabilities=replace(where.capabilities, approval_backchannel=True))

    await answered(rig, capable("member"), "group1", 1)
    await answered(rig, capable("boss"), "group1", 2)
    member, boss = (text.splitlines() for text in rig.said_to("group1"))
    assert member[1] == "Approvals: an approver can answer a request's card in this conversation."
    assert member[2] == "Grants in force here: none."
    # the only approver cannot approve his own requests (approval.self_approval is off)
    assert boss[1] == (
        "Approvals: nobody can answer one here, so tools that need one are refused. "
        "You are an approver here."
    )
