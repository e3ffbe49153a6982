"""Which budgets a turn is held to: its key in each scope, the tables that apply to it, and
the senders ``budget_exempt`` lets through (by id, or as the channel's approvers)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.config import parse_settings
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.store.usage import UsageScope
from bot.turn import TurnIdentity
from bot.usage.budgets import BudgetRules, Metric
from bot.usage.windows import Period

SLACK = ChannelRef(kind="slack", alias="work")


def rules(**budgets: Any) -> BudgetRules:
    settings = parse_settings(
        {
            "channels": {
                "slack": {"work": {"bot_token_env": "X", "approvers": ["U_BOSS"]}},
                "telegram": {"main": {"approvers": ["42"]}},
                "discord": {"main": {"approvers": ["7"], "approver_roles": ["Ops", "555"]}},
            },
            "budgets": budgets,
        },
        environ={},
        require_provider=False,
    )
    return BudgetRules(settings.budgets, settings.channels)


def turn(
    sender: str,
    channel: ChannelRef = SLACK,
    conversation: str = "C1",
    roles: tuple[str, ...] = (),
) -> TurnIdentity:
    envelope = IngressEnvelope(
        channel=channel,
        message_id="m1",
        conversation_id=conversation,
        sender=Sender(id=sender, roles=roles),
        text="hi",
        reply_target=DeliveryTarget(channel=channel, conversation_id=conversation),
    )
    return TurnIdentity(turn_id="t1", session_key=f"{channel}:{conversation}", envelope=envelope)


def test_a_turn_is_held_to_the_tables_of_its_keys() -> None:
    book = rules(
        per_user={"daily_tokens": 1000, "monthly_cost": 5},
        per_conversation={"daily_cost": 1},
        agents={"default": {"monthly_tokens": 10**6}},
        channels={"slack.work": {"daily_tokens": 10**5}},
    )
    assert book.scopes == (
        UsageScope.USER,
        UsageScope.CONVERSATION,
        UsageScope.AGENT,
        UsageScope.CHANNEL,
    )
    assert book.monthly
    keys = book.keys(turn("U_ANN"), agent="default")
    assert keys == (
        (UsageScope.USER, "slack.work U_ANN"),
        (UsageScope.CONVERSATION, "slack.work C1"),
        (UsageScope.AGENT, "default"),
        (UsageScope.CHANNEL, "slack.work"),
    )
    held = {
        scope: limits for scope, _, limits in book.for_turn(turn("U_ANN"), keys, agent="default")
    }
    assert [(lim.period, lim.metric, lim.amount) for lim in held[UsageScope.USER]] == [
        (Period.DAY, Metric.TOKENS, 1000.0),
        (Period.MONTH, Metric.COST, 5.0),
    ]
    assert [lim.metric for lim in held[UsageScope.CONVERSATION]] == [Metric.COST]
    # another agent and another channel have no budget of their own
    other = book.keys(turn("U_ANN"), agent="ops")
    scopes = [scope for scope, _, _ in book.for_turn(turn("U_ANN"), other, agent="ops")]
    assert scopes == [UsageScope.USER, UsageScope.CONVERSATION, UsageScope.CHANNEL]


def test_no_budget_means_no_keys() -> None:
    book = rules()
    assert (book.scopes, book.monthly) == ((), False)
    assert book.keys(turn("U_ANN"), agent="default") == ()


@pytest.mark.parametrize(
    ("exempt", "sender", "channel", "held"),
    [
        ([], "U_BOSS", SLACK, True),
        (["approvers"], "U_BOSS", SLACK, False),
        (["approvers"], "U_ANN", SLACK, True),
        # an approver of another channel is not one here
        (["approvers"], "42", SLACK, True),
        (["approvers"], "42", ChannelRef(kind="telegram", alias="main"), False),
        (["U_ANN"], "U_ANN", SLACK, False),
        (["U_ANN"], "U_BOSS", SLACK, True),
    ],
)
def test_budget_exempt(exempt: list[str], sender: str, channel: ChannelRef, held: bool) -> None:
    book = rules(budget_exempt=exempt, per_conversation={"daily_tokens": 10})
    identity = turn(sender, channel)
    assert (
        bool(book.for_turn(identity, book.keys(identity, agent="default"), agent="default")) is held
    )


DISCORD = ChannelRef(kind="discord", alias="main")


@pytest.mark.parametrize(
    ("exempt", "sender", "roles", "channel", "held"),
    [
        (["approvers"], "9", ("Ops",), DISCORD, False),  # a role by name
        (["approvers"], "9", ("555",), DISCORD, False),  # a role by id
        (["approvers"], "9", ("Dev", "556"), DISCORD, True),  # roles that are not approvers'
        (["approvers"], "9", (), DISCORD, True),
        (["approvers"], "7", (), DISCORD, False),  # still by id
        ([], "9", ("Ops",), DISCORD, True),  # roles count only through "approvers"
        # a role of the same name means nothing on a channel with no approver_roles
        (["approvers"], "9", ("Ops",), SLACK, True),
    ],
)
def test_budget_exempt_by_role(
    exempt: list[str], sender: str, roles: tuple[str, ...], channel: ChannelRef, held: bool
) -> None:
    book = rules(budget_exempt=exempt, per_conversation={"daily_tokens": 10})
    identity = turn(sender, channel, roles=roles)
    assert (
        bool(book.for_turn(identity, book.keys(identity, agent="default"), agent="default")) is held
    )
