"""Answers streamed into an assistant thread (slack_sdk over HTTP to the loopback Slack): the
stream's ``ts`` is recorded when it starts, and the turn's keyed reply finishes that message
(``chat.stopStream``, then ``chat.update`` with the reply and its metadata, so the delivery
check finds it) instead of posting a new one, also from a new process after a crash; where
streaming fails, nothing is lost: the reply is posted as usual."""

from __future__ import annotations

from typing import Any

from bot.envelope import DeliveryTarget
from bot.errors import ChannelError
from bot.store import Store
from channels.slack.adapter import SlackChannel
from channels.slack.delivery_check import reply_metadata
from tests.fakes.slack_server import BOT_USER, FakeSlack
from tests.fakes.slack_setup import REF, REQUESTER, channel_for

DM = "D0ASSIST"
THREAD = "1700000100.000100"
KEY = "reply-7f3a"
TARGET = DeliveryTarget(channel=REF, conversation_id=DM, thread_id=THREAD)


def streaming_channel(slack: FakeSlack, store: Store, **assistant: Any) -> SlackChannel:
    slack.assistant.start(user=REQUESTER, dm_channel=DM, thread_ts=THREAD)
    return channel_for(slack, store, assistant={"enabled": True, **assistant})


def bot_messages(slack: FakeSlack) -> list[dict[str, Any]]:
    """What the bot posted (the thread's root, Slack's, left out)."""
    return [
        m
        for m in slack.messages.values()
        if m.get("user") == BOT_USER and m.get("subtype") != "assistant_app_thread"
    ]


async def test_a_streamed_answer_is_finished_by_its_reply(slack: FakeSlack, store: Store) -> None:
    channel = streaming_channel(slack, store)
    async with channel._api.kept_alive():
        assert channel.answer_stream.streams_to(TARGET)
        await channel.answer_stream.append(TARGET, "It rotates ")
        [row] = await store.channel_state.items(str(REF), "stream:")
        await channel.answer_stream.append(TARGET, "on Mondays.")
        sent = await channel.send(TARGET, "It rotates on **Mondays**.", key=KEY)
        found = await channel.delivery.find_delivered(
            TARGET, key=KEY, text="It rotates on **Mondays**.", after_message_id=None
        )
    [message] = bot_messages(slack)
    assert row[1] == message["ts"]
    assert [s.message_id for s in sent] == [message["ts"]]
    assert found is not None and [m.message_id for m in found] == [message["ts"]]
    assert message["text"] == "It rotates on *Mondays*."
    assert message["metadata"] == reply_metadata(KEY, 1, 1)
    assert not message["streaming"]
    assert [method for method, _, _ in slack.streams.log] == [
        "chat.startStream",
        "chat.appendStream",
        "chat.stopStream",
    ]
    assert slack.calls_of("chat.postMessage") == []
    assert await store.channel_state.items(str(REF), "stream:") == []


async def test_a_long_reply_finishes_the_stream_and_posts_the_rest(
    slack: FakeSlack, store: Store
) -> None:
    channel = streaming_channel(slack, store)
    text = "\n\n".join(f"paragraph {i} " + "x" * 150 for i in range(30))
    async with channel._api.kept_alive():
        await channel.answer_stream.append(TARGET, "paragraph 0")
        sent = await channel.send(TARGET, text, key=KEY)
    messages = bot_messages(slack)
    assert len(sent) == len(messages) > 1
    assert [m["metadata"]["event_payload"]["part"] for m in messages] == list(
        range(1, len(messages) + 1)
    )
    assert messages[0]["ts"] == sent[0].message_id


async def test_a_stream_left_by_a_crash_is_finished_after_the_restart(
    slack: FakeSlack, store: Store
) -> None:
    before = streaming_channel(slack, store)
    async with before._api.kept_alive():
        await before.answer_stream.append(TARGET, "It rot")
    slack.streams.expire()  # Slack ended the stream while the daemon was down
    after = channel_for(slack, store, assistant={"enabled": True})
    async with after._api.kept_alive():
        sent = await after.send(TARGET, "It rotates on Mondays.", key=KEY)
    [message] = bot_messages(slack)
    assert [s.message_id for s in sent] == [message["ts"]]
    assert message["text"] == "It rotates on Mondays."
    assert message["metadata"] == reply_metadata(KEY, 1, 1)
    assert ("chat.stopStream", "message_not_in_streaming_state") in slack.refused


async def test_a_refused_start_loses_nothing(slack: FakeSlack, store: Store) -> None:
    slack.streams.refuse_starts = "feature_not_enabled"
    channel = streaming_channel(slack, store)
    async with channel._api.kept_alive():
        try:
            await channel.answer_stream.append(TARGET, "It rotates")
        except ChannelError:
            pass
        else:
            raise AssertionError("a refused stream must raise ChannelError")
        sent = await channel.send(TARGET, "It rotates on Mondays.", key=KEY)
    [message] = bot_messages(slack)
    assert [s.message_id for s in sent] == [message["ts"]]
    assert message["metadata"] == reply_metadata(KEY, 1, 1)


async def test_unkeyed_messages_leave_the_stream_alone(slack: FakeSlack, store: Store) -> None:
    channel = streaming_channel(slack, store)
    async with channel._api.kept_alive():
        await channel.answer_stream.append(TARGET, "It rotates")
        await channel.send(TARGET, "⏳ lookup")  # a progress message
    streamed, progress = bot_messages(slack)
    assert streamed["streaming"] and streamed["text"] == "It rotates"
    assert progress["text"] == "⏳ lookup"


async def test_no_stream_outside_assistant_threads_or_when_off(
    slack: FakeSlack, store: Store
) -> None:
    channel = streaming_channel(slack, store, stream=False)
    assert not channel.answer_stream.streams_to(TARGET)
    other = channel_for(slack, store, assistant={"enabled": True})
    channel_thread = DeliveryTarget(channel=REF, conversation_id="C0001", thread_id=THREAD)
    assert not other.answer_stream.streams_to(channel_thread)
    assert other.answer_stream.streams_to(TARGET)
