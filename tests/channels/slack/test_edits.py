"""Edited and deleted Slack messages, through the real slack-bolt / slack_sdk against the
loopback fake: an edit that changes the text is reported with the message as it reads now
(under the original's ``message_id``); unfurls, reply counts and the bot's own edits are not;
deletions and tombstones are reported by ``message_id``."""

from __future__ import annotations

from typing import Any

import pytest

from bot.store import Store
from channels.slack.message_events import Deletion, Edit, Ignored, classify
from channels.slack.normalise import BotIdentity
from tests.fakes.channel_health import serving
from tests.fakes.recording_host import RecordingHost
from tests.fakes.slack_server import (
    BOT_ID,
    BOT_USER,
    FakeSlack,
    event_callback,
    message_event,
)
from tests.fakes.slack_setup import REF, channel_for

JSON = dict[str, Any]


def changed(
    new: JSON, previous: JSON, *, channel: str = "C0001", ts: str = "1700000100.000100"
) -> JSON:
    """A ``message_changed`` event as Slack sends it: the message as it reads now and as it
    read before, the conversation on the outer event only."""
    return {
        "type": "message",
        "subtype": "message_changed",
        "hidden": True,
        "channel": channel,
        "channel_type": {"D": "im"}.get(channel[:1], "channel"),
        "ts": ts,
        "event_ts": ts,
        "message": {"type": "message", **new},
        "previous_message": {"type": "message", **previous},
    }


def deleted(deleted_ts: str, previous: JSON, *, channel: str = "C0001") -> JSON:
    return {
        "type": "message",
        "subtype": "message_deleted",
        "hidden": True,
        "channel": channel,
        "channel_type": "channel",
        "ts": "1700000200.000100",
        "event_ts": "1700000200.000100",
        "deleted_ts": deleted_ts,
        "previous_message": {"type": "message", **previous},
    }


async def push_acked(slack: FakeSlack, event: JSON) -> None:
    """Push one event and wait for its ack (its listener has run to its end)."""
    await slack.wait_ack(await slack.push("events_api", event_callback(event)))


async def test_an_edit_that_changes_the_text_is_reported_as_the_message_now_reads(
    slack: FakeSlack, store: Store
) -> None:
    host = RecordingHost()
    original = {"user": "UANN", "ts": "1700000001.000200", "text": "deploy to staging"}
    edited = {
        **original,
        "text": f"<@{BOT_USER}> deploy to production",
        "edited": {"user": "UANN", "ts": "1700000100.000000"},
    }
    async with serving(channel_for(slack, store), host):
        await push_acked(slack, changed(edited, original))
        (envelope,) = await host.wait_edits(1)
    assert envelope.channel == REF
    assert envelope.message_id == "C0001:1700000001.000200"
    assert envelope.text == "deploy to production"
    assert envelope.addressed_to_bot  # the edit added the mention
    assert envelope.sender.id == "UANN" and envelope.sender.display_name == "Ann"
    assert envelope.thread_id == "1700000001.000200"
    assert envelope.reply_target.reply_to_message_id == "1700000001.000200"
    assert host.envelopes == []


async def test_an_edit_in_a_thread_keeps_its_thread(slack: FakeSlack, store: Store) -> None:
    host = RecordingHost()
    before = {"user": "UANN", "ts": "5.2", "thread_ts": "5.1", "text": "first try"}
    after = {**before, "text": "second try"}
    async with serving(channel_for(slack, store), host):
        await push_acked(slack, changed(after, before))
        (envelope,) = await host.wait_edits(1)
    assert (envelope.message_id, envelope.thread_id, envelope.text) == (
        "C0001:5.2",
        "5.1",
        "second try",
    )


async def test_changes_without_new_text_and_the_bots_own_edits_are_not_reported(
    slack: FakeSlack, store: Store
) -> None:
    host = RecordingHost()
    said = {"user": "UANN", "ts": "6.1", "text": "see https://example.com"}
    unfurled = {**said, "attachments": [{"from_url": "https://example.com", "title": "Example"}]}
    parent = {"user": "UANN", "ts": "6.2", "text": "a thread"}
    replied_to = {**parent, "reply_count": 1, "thread_ts": "6.2"}
    own = {"user": BOT_USER, "bot_id": BOT_ID, "ts": "6.3", "text": "⏳ working"}
    own_now = {**own, "text": "✅ done"}
    joined = {"user": "UANN", "ts": "6.4", "subtype": "channel_join", "text": "joined"}
    async with serving(channel_for(slack, store), host):
        for event in (
            changed(unfurled, said),
            changed(replied_to, parent),
            changed(own_now, own),
            changed({**joined, "text": "has joined"}, joined),
            {**changed({**said, "text": "no previous"}, said), "previous_message": None},
        ):
            await push_acked(slack, event)
        # a later deletion is handled after every event before it (the worker keeps order)
        await push_acked(slack, deleted("6.9", {"user": "UANN", "ts": "6.9", "text": "x"}))
        await host.wait_deletions(1)
    assert host.edits == []
    assert host.envelopes == []


async def test_deletions_and_tombstones_are_reported(slack: FakeSlack, store: Store) -> None:
    host = RecordingHost()
    async with serving(channel_for(slack, store), host):
        await push_acked(slack, deleted("7.1", {"user": "UANN", "ts": "7.1", "text": "oops"}))
        # the bot deleting its own message is nothing to report
        await push_acked(slack, deleted("7.2", {"user": BOT_USER, "bot_id": BOT_ID, "ts": "7.2"}))
        parent = {"user": "UANN", "ts": "7.3", "text": "question", "thread_ts": "7.3"}
        tombstone = {
            "user": "USLACKBOT",
            "ts": "7.3",
            "thread_ts": "7.3",
            "subtype": "tombstone",
            "text": "This message was deleted.",
        }
        await push_acked(slack, changed(tombstone, parent))
        deletions = await host.wait_deletions(2)
    assert deletions == [(REF, "C0001:7.1"), (REF, "C0001:7.3")]
    assert host.edits == []


async def test_a_message_then_its_edit_then_its_deletion_arrive_in_order(
    slack: FakeSlack, store: Store
) -> None:
    host = RecordingHost()
    message = message_event("first words", channel="D0001", ts="8.1")
    async with serving(channel_for(slack, store), host):
        await push_acked(slack, message)
        await push_acked(
            slack,
            changed(
                {"user": "UANN", "ts": "8.1", "text": "better words"},
                {"user": "UANN", "ts": "8.1", "text": "first words"},
                channel="D0001",
            ),
        )
        await push_acked(slack, deleted("8.1", {"user": "UANN", "ts": "8.1"}, channel="D0001"))
        await host.wait_deletions(1)
    (envelope,) = host.envelopes
    (edit,) = host.edits
    assert envelope.message_id == edit.message_id == "D0001:8.1"
    assert (envelope.text, edit.text) == ("first words", "better words")
    assert edit.is_direct and edit.thread_id is None
    assert host.deletions == [(REF, "D0001:8.1")]


BOT = BotIdentity(user_id=BOT_USER, bot_id=BOT_ID, team_id="T0001")
_OWN = {"user": BOT_USER, "bot_id": BOT_ID, "ts": "9.1", "text": "⏳ working"}
_ANN = {"user": "UANN", "ts": "9.2", "text": "hello"}


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (changed({**_OWN, "text": "✅ done"}, _OWN), Ignored(reason="own_message")),
        (changed({**_ANN, "text": "hi"}, {**_OWN, "ts": "9.2"}), Ignored(reason="own_message")),
        (deleted("9.1", _OWN), Ignored(reason="own_message")),
        (changed(_ANN, _ANN), Ignored(reason="edit_without_text_change")),
        (deleted("9.2", _ANN), Deletion(message_id="C0001:9.2")),
        ({"type": "message", "subtype": "message_changed"}, Ignored(reason="malformed")),
    ],
)
def test_what_an_edit_or_deletion_is(event: JSON, expected: object) -> None:
    # bolt drops most of the bot's own events before any listener; the adapter does not
    # rely on it
    assert classify(event_callback(event), BOT) == expected


def test_an_edit_is_the_message_as_it_reads_now() -> None:
    kind = classify(event_callback(changed({**_ANN, "text": "hi there"}, _ANN)), BOT)
    assert isinstance(kind, Edit)
    assert (kind.callback.event.ts, kind.callback.event.text) == ("9.2", "hi there")
    assert kind.callback.event.channel == "C0001"
