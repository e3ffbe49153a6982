"""A Slack message's envelope carries its conversation's name (``conversations.info``),
looked up through the real slack_sdk against the fake: once per conversation while it is
cached, never for a DM, not asked again soon after Slack refused (``missing_scope`` and
the like), and not asked at all while Slack's ``Retry-After`` for the method runs."""

from __future__ import annotations

from bot.store import Store
from tests.fakes.channel_health import serving as running
from tests.fakes.recording_host import RecordingHost
from tests.fakes.slack_server import BOT_USER, FakeSlack, event_callback, message_event
from tests.fakes.slack_setup import channel_for


def mention(channel: str, ts: str) -> dict[str, object]:
    return event_callback(
        message_event(f"<@{BOT_USER}> hi", kind="app_mention", channel=channel, ts=ts)
    )


async def test_a_channels_name_is_read_once_and_a_dm_has_none(
    slack: FakeSlack, store: Store
) -> None:
    slack.conversations.names["C0001"] = "general"
    host = RecordingHost()
    async with running(channel_for(slack, store), host):
        await slack.push("events_api", mention("C0001", "1700000001.000100"))
        await slack.push("events_api", mention("C0001", "1700000001.000200"))
        dm = message_event("hi", channel="D0001", ts="1700000001.000300")
        await slack.push("events_api", event_callback(dm))
        first, second, direct = await host.wait_envelopes(3)
    assert first.conversation_title == second.conversation_title == "general"
    assert direct.is_direct and direct.conversation_title == ""
    assert [c.params["channel"] for c in slack.calls_of("conversations.info")] == ["C0001"]


async def test_a_refused_lookup_is_not_asked_again_at_once(slack: FakeSlack, store: Store) -> None:
    slack.conversations.failing.add("C0001")
    host = RecordingHost()
    async with running(channel_for(slack, store), host):
        await slack.push("events_api", mention("C0001", "1700000001.000100"))
        await slack.push("events_api", mention("C0001", "1700000001.000200"))
        envelopes = await host.wait_envelopes(2)
    assert [e.conversation_title for e in envelopes] == ["", ""]
    assert slack.conversations.info_calls == 1


async def test_no_lookup_while_slack_says_to_wait(slack: FakeSlack, store: Store) -> None:
    slack.conversations.names.update({"C0001": "general", "C0002": "random"})
    slack.rate_limit_next("conversations.info", retry_after_s=600, times=3)
    host = RecordingHost()
    async with running(channel_for(slack, store), host):
        await slack.push("events_api", mention("C0001", "1700000001.000100"))
        await host.wait_envelopes(1)  # its lookup was refused and not waited out
        await slack.push("events_api", mention("C0002", "1700000001.000200"))
        first, second = await host.wait_envelopes(2)
    assert first.conversation_title == second.conversation_title == ""
    # the second conversation's name was not asked for inside Slack's window
    assert len(slack.calls_of("conversations.info", status=429)) == 1
    assert slack.calls_of("conversations.info") == []
