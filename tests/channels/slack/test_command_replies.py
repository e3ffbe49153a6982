"""Where answers to a slash command may go: only Slack's own hosts (judged against
``api_base_url``), and a response URL only as often as Slack honours it."""

from __future__ import annotations

import pytest

from bot.store import Store
from channels.slack.command_replies import RESPONSE_URL_USES, response_url_allowed
from channels.slack.commands import app_id_of, slash_message_id, slash_user
from tests.fakes.channel_health import serving as running
from tests.fakes.recording_host import RecordingHost
from tests.fakes.slack_server import FakeSlack
from tests.fakes.slack_setup import STRANGER, channel_for

SLACK = "https://slack.com/api/"


@pytest.mark.parametrize(
    ("url", "api", "allowed"),
    [
        ("https://hooks.slack.com/commands/T1/2/abc", SLACK, True),
        ("https://slack.com/commands/T1/2/abc", SLACK, True),
        ("https://hooks.slack-gov.com/commands/T1/2/abc", "https://slack-gov.com/api/", True),
        ("https://hooks.slack-gov.com/commands/T1/2/abc", SLACK, False),
        ("http://hooks.slack.com/commands/T1/2/abc", SLACK, False),
        ("https://hooks.slack.com:8443/commands/T1/2/abc", SLACK, False),
        ("https://hooks.slack.com.evil.example/x", SLACK, False),
        ("https://evil.example/hooks.slack.com/x", SLACK, False),
        ("https://me@hooks.slack.com/commands/T1/2/abc", SLACK, False),
        ("https://hooks.slack.com:notaport/x", SLACK, False),
        ("file:///etc/passwd", SLACK, False),
        ("", SLACK, False),
        ("http://127.0.0.1:8080/commands/x", "http://127.0.0.1:8080/api/", True),
        ("http://127.0.0.1:8081/commands/x", "http://127.0.0.1:8080/api/", False),
    ],
)
def test_only_slacks_hosts_are_used(url: str, api: str, allowed: bool) -> None:
    assert response_url_allowed(url, api) is allowed


@pytest.mark.parametrize(
    ("token", "app_id"),
    [
        ("xapp-1-A0123ABC-4567-deadbeef", "A0123ABC"),
        ("xapp-1-A0001-fake-app-token", "A0001"),
        ("xoxb-1-A0123ABC-4567", ""),
        ("xapp-garbage", ""),
        (None, ""),
    ],
)
def test_the_app_id_comes_from_the_app_level_token(token: str | None, app_id: str) -> None:
    assert app_id_of(token) == app_id


def test_a_slash_message_id_names_its_user() -> None:
    assert slash_user(slash_message_id("U1", "13345224609.738474")) == "U1"
    for other in (None, "", "C0001:1700000001.000200", "slash:", "slash:U1", "slash::x"):
        assert slash_user(other) is None


async def test_a_response_url_is_used_as_often_as_slack_allows(
    slack: FakeSlack, store: Store
) -> None:
    host = RecordingHost()
    channel = channel_for(slack, store, max_message_chars=200)
    async with running(channel, host):
        payload = slack.slash("help", user=STRANGER)
        await slack.push("slash_commands", payload)
        (envelope,) = await host.wait_envelopes(1)
        paragraphs = [f"paragraph {n}: " + "word " * 30 for n in range(RESPONSE_URL_USES + 2)]
        await channel.send(envelope.reply_target, "\n\n".join(paragraphs))
        posts = await slack.wait_responses(payload["response_url"], RESPONSE_URL_USES)
        ephemerals = slack.calls_of("chat.postEphemeral")
    assert len(posts) == RESPONSE_URL_USES
    assert len(ephemerals) == 2 and all(e.params["user"] == STRANGER for e in ephemerals)
    texts = [p["text"] for p in posts] + [str(e.params["text"]) for e in ephemerals]
    assert [t.split(":", 1)[0] for t in texts] == [f"paragraph {n}" for n in range(7)]
    assert slack.responses.refused == []
