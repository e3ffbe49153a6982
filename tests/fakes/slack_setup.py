"""The Slack side of a test: the app's tokens and signing secret, the people in its
workspace, and the channel or daemon settings wired to a
:class:`~tests.fakes.slack_server.FakeSlack`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.channel import ApprovalCard, CardState, ChannelHost
from bot.config import Settings, parse_settings
from bot.envelope import ChannelRef
from bot.store import Store
from channels.slack.adapter import SlackChannel, SlackCredentials
from channels.slack.config import SlackChannelConfig
from tests.fakes.channel_health import serving
from tests.fakes.loopback import serve_loopback
from tests.fakes.slack_server import JSON, FakeSlack

BOT_TOKEN = "xoxb-1111-2222-fake-bot-token"
APP_TOKEN = "xapp-1-A0001-fake-app-token"
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
REF = ChannelRef(kind="slack", alias="main")
REQUESTER = "UANN"
APPROVER = "UAPPROVER"
STRANGER = "USTRANGER"
CARD_APPROVAL_ID = "apr-7f3a"

# No short ping_interval_s: the SDK's socket is closed when a pong comes later than half of
# it, and on a busy machine the fake's pong can take longer than 0.25 s (an event sent then
# was lost with the socket). A socket the fake drops is noticed by its close at once.
_QUICK_RECONNECTS: dict[str, Any] = {
    "reconnect_initial_s": 0.01,
    "reconnect_max_s": 0.05,
}


def config_for(slack: FakeSlack, **overrides: Any) -> SlackChannelConfig:
    """Adapter config against ``slack``: anyone may talk, :data:`APPROVER` approves."""
    values: dict[str, Any] = {
        "api_base_url": slack.api_base_url,
        "allowed_users": ["*"],
        "approvers": [APPROVER],
        **_QUICK_RECONNECTS,
        **overrides,
    }
    return SlackChannelConfig.model_validate(values)


def channel_for(
    slack: FakeSlack,
    store: Store,
    *,
    bot_token: str = BOT_TOKEN,
    app_token: str = APP_TOKEN,
    web_app: web.Application | None = None,
    **overrides: Any,
) -> SlackChannel:
    """The adapter alone, on ``store``, with :func:`config_for` plus ``overrides``."""
    return SlackChannel(
        ref=REF,
        config=config_for(slack, **overrides),
        credentials=SlackCredentials(
            bot_token=bot_token, app_token=app_token, signing_secret=SECRET
        ),
        store=store,
        web_app=web_app,
    )


@asynccontextmanager
async def http_channel(
    slack: FakeSlack, store: Store, host: ChannelHost
) -> AsyncIterator[tuple[SlackChannel, str]]:
    """The adapter in HTTP mode, serving on loopback until the block ends; yields it and the
    URL Slack would post events to."""
    web_app = web.Application()
    channel = channel_for(slack, store, web_app=web_app, mode="http")
    async with serve_loopback(web_app) as server, serving(channel, host):
        yield channel, server.url("/slack/events")


def channel_values(slack: FakeSlack) -> dict[str, Any]:
    """The daemon's channel table: only :data:`REQUESTER` may talk, :data:`APPROVER` approves."""
    return {
        "api_base_url": slack.api_base_url,
        "allowed_users": [REQUESTER],
        "approvers": [APPROVER],
        **_QUICK_RECONNECTS,
    }


def daemon_settings(slack: FakeSlack, tmp_path: Path, **approval: Any) -> Settings:
    """Daemon settings with the channel of :func:`channel_values`, state under ``tmp_path``;
    ``approval`` keys go into ``[approval]`` (a 30 s timeout unless given)."""
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "approval": {"timeout_s": 30, **approval},
            "channels": {"slack": {"main": channel_values(slack)}},
        },
        environ={},
        require_provider=False,
    )


def slack_channel(slack: FakeSlack) -> SlackChannel:
    """The daemon's Slack channel, built ahead to hand to ``App(channels=…)``."""
    return SlackChannel(
        ref=REF,
        config=SlackChannelConfig.model_validate(channel_values(slack)),
        credentials=SlackCredentials(bot_token=BOT_TOKEN, app_token=APP_TOKEN),
    )


def card(state: CardState = CardState.PENDING, decided_by: str = "") -> ApprovalCard:
    """A shell approval card (id :data:`CARD_APPROVAL_ID`) asked for by :data:`REQUESTER`."""
    return ApprovalCard(
        approval_id=CARD_APPROVAL_ID,
        tool="shell",
        lines=("command: rm -rf build/ && make <all>",),
        reason="shell runs commands on the host",
        requested_by=REQUESTER,
        state=state,
        decided_by=decided_by,
    )


def has_buttons(message: JSON) -> bool:
    """Whether a posted message still shows its buttons."""
    return any(block.get("type") == "actions" for block in message.get("blocks") or [])
