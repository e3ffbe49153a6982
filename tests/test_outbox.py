"""The outbox's rule: a direct message goes only to an allowed user, whatever the group policy;
a group conversation passes the group policy; an id that does not tell which (Discord) must be
listed, or be allowed either way. Per platform, over real settings; the daemon path (the
``send_message`` tool in a turn, the real Telegram adapter) is in
``tests/channels/test_outbox_e2e.py``."""

from __future__ import annotations

from typing import Any, cast

import pytest

from bot.channel import Channel
from bot.config import Settings, parse_settings
from bot.envelope import ChannelRef, DeliveryTarget
from bot.outbox import ChannelOutbox, ConversationKind, conversation_kind

RUNNING = cast(Channel, object())  # the outbox only asks whether a channel runs


def outbox_for(kind: str, **channel: Any) -> ChannelOutbox:
    settings: Settings = parse_settings(
        {"channels": {kind: {"main": channel}}}, environ={}, require_provider=False
    )
    return ChannelOutbox(lambda: settings, lambda ref: RUNNING)


def allows(outbox: ChannelOutbox, kind: str, conversation_id: str) -> bool:
    ref = ChannelRef(kind=kind, alias="main")
    return outbox.allows(DeliveryTarget(channel=ref, conversation_id=conversation_id))


ANN = {"allowed_users": ["1001"]}
SLACK_ANN = {"allowed_users": ["U0ANN"]}
DISCORD_ANN = {"allowed_users": ["111"]}


@pytest.mark.parametrize(
    ("kind", "config", "target", "expected"),
    [
        # Telegram: a private chat's id is its user's id; groups are negative
        ("telegram", {**ANN, "group_policy": "open"}, "1001", True),
        ("telegram", {**ANN, "group_policy": "open"}, "3003", False),  # a stranger's DM
        ("telegram", {**ANN}, "3003", False),  # "open" is the default
        ("telegram", {"allowed_users": ["*"]}, "3003", True),
        ("telegram", {**ANN, "group_policy": "open"}, "-1001234567890", True),
        ("telegram", {**ANN, "group_policy": "open"}, "@public_news", True),
        ("telegram", {**ANN, "group_policy": "open"}, "not-a-chat", False),
        (
            "telegram",
            {**ANN, "group_policy": "allowlist", "allowed_conversations": ["-5"]},
            "-5",
            True,
        ),
        (
            "telegram",
            {**ANN, "group_policy": "allowlist", "allowed_conversations": ["-5"]},
            "-6",
            False,
        ),
        ("telegram", {**ANN, "group_policy": "allowlist"}, "3003", False),
        ("telegram", {**ANN, "group_policy": "allowlist"}, "1001", True),
        # "*" lets anyone talk; it does not put every group on the allow-list
        ("telegram", {"allowed_users": ["*"], "group_policy": "allowlist"}, "-6", False),
        ("telegram", {**ANN, "group_policy": "disabled"}, "-5", False),
        ("telegram", {**ANN, "group_policy": "disabled"}, "1001", True),
        ("telegram", {**ANN, "group_policy": "disabled"}, "3003", False),
        # Slack: U/W user ids open the DM with that user; D… is a DM of unnamed user
        ("slack", {**SLACK_ANN, "group_policy": "open"}, "U0ANN", True),
        ("slack", {**SLACK_ANN, "group_policy": "open"}, "U0EVE", False),
        ("slack", {**SLACK_ANN, "group_policy": "open"}, "W0EVE", False),
        ("slack", {**SLACK_ANN, "group_policy": "open"}, "D0EVE", False),
        ("slack", {"allowed_users": ["*"], "group_policy": "open"}, "D0EVE", True),
        ("slack", {**SLACK_ANN, "group_policy": "open"}, "C0GENERAL", True),
        ("slack", {**SLACK_ANN, "group_policy": "open"}, "G0PRIVATE", True),
        ("slack", {**SLACK_ANN, "group_policy": "open"}, "#general", False),
        (
            "slack",
            {**SLACK_ANN, "group_policy": "allowlist", "allowed_conversations": ["C0GEN"]},
            "C0GEN",
            True,
        ),
        (
            "slack",
            {**SLACK_ANN, "group_policy": "allowlist", "allowed_conversations": ["C0GEN"]},
            "C0OTHER",
            False,
        ),
        ("slack", {**SLACK_ANN, "group_policy": "disabled"}, "U0ANN", True),
        ("slack", {**SLACK_ANN, "group_policy": "disabled"}, "U0EVE", False),
        # Discord: a DM channel's id looks like any channel's, so it must be listed
        ("discord", {**DISCORD_ANN, "group_policy": "open"}, "999", False),
        (
            "discord",
            {**DISCORD_ANN, "group_policy": "open", "allowed_conversations": ["555"]},
            "555",
            True,
        ),
        ("discord", {"allowed_users": ["*"], "group_policy": "open"}, "999", True),
        ("discord", {"allowed_users": ["*"], "group_policy": "allowlist"}, "999", False),
        (
            "discord",
            {**DISCORD_ANN, "group_policy": "allowlist", "allowed_conversations": ["555"]},
            "555",
            True,
        ),
        (
            "discord",
            {**DISCORD_ANN, "group_policy": "disabled", "allowed_conversations": ["555"]},
            "555",
            False,
        ),
        # the console's one conversation is the local terminal
        ("console", {"allowed_users": ["ana"], "group_policy": "open"}, "terminal", True),
    ],
)
def test_direct_messages_go_only_to_allowed_users(
    kind: str, config: dict[str, Any], target: str, expected: bool
) -> None:
    assert allows(outbox_for(kind, **config), kind, target) is expected


def test_a_channel_that_is_not_running_or_not_configured_is_refused() -> None:
    settings = parse_settings(
        {"channels": {"telegram": {"main": {"allowed_users": ["*"]}}}},
        environ={},
        require_provider=False,
    )
    stopped = ChannelOutbox(lambda: settings, lambda ref: None)
    assert not allows(stopped, "telegram", "1001")
    running = ChannelOutbox(lambda: settings, lambda ref: RUNNING)
    other = DeliveryTarget(channel=ChannelRef(kind="telegram", alias="other"), conversation_id="1")
    assert not running.allows(other)


@pytest.mark.parametrize(
    ("kind", "conversation_id", "expected", "user"),
    [
        ("telegram", "1001", ConversationKind.DIRECT, "1001"),
        ("telegram", "-1001234567890", ConversationKind.GROUP, None),
        ("telegram", "0", ConversationKind.UNKNOWN, None),
        ("slack", "D024BE91L", ConversationKind.DIRECT, None),
        ("slack", "U024BE7LH", ConversationKind.DIRECT, "U024BE7LH"),
        ("slack", "C024BE91L", ConversationKind.GROUP, None),
        ("discord", "1234567890123", ConversationKind.UNKNOWN, None),
    ],
)
def test_conversation_kind_reads_each_platforms_ids(
    kind: str, conversation_id: str, expected: ConversationKind, user: str | None
) -> None:
    found = conversation_kind(kind, conversation_id)
    assert (found.kind, found.user) == (expected, user)
