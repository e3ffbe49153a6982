"""Finding a reply again after a crash (:class:`bot.channel.DeliveryCheck`) on Slack, through
slack_sdk against the loopback fake: a keyed reply's chunks carry message metadata and are
found in ``conversations.replies`` or ``conversations.history`` after the user's message;
anything else (other replies, other authors, messages before the user's) is not the reply."""

from __future__ import annotations

from bot.channel import SentMessage
from bot.envelope import DeliveryTarget
from bot.store import Store
from channels.slack.delivery_check import MAX_PAGES, REPLY_EVENT
from tests.fakes.slack_server import BOT_ID, BOT_USER, FakeSlack
from tests.fakes.slack_setup import REF, channel_for

ASKED = "1600000000.000100"  # before anything the fake posts (its ts count from 1700000001)
KEY = "turn-41:answer"


def thread_target() -> DeliveryTarget:
    return DeliveryTarget(
        channel=REF, conversation_id="C0001", thread_id=ASKED, reply_to_message_id=ASKED
    )


async def test_a_keyed_reply_is_found_chunk_by_chunk_in_its_thread(
    slack: FakeSlack, store: Store
) -> None:
    channel = channel_for(slack, store, max_message_chars=500)
    assert channel.delivery is not None
    slack.add_message("C0001", ASKED, user="UANN", text="<@UBOT> explain")
    target = thread_target()
    text = "\n\n".join(f"paragraph {i}: " + "words " * 40 for i in range(6))
    sent = await channel.send(target, text, key=KEY)
    assert len(sent) >= 3
    posts = slack.calls_of("chat.postMessage")
    assert [p.params["metadata"] for p in posts] == [
        {"event_type": REPLY_EVENT, "event_payload": {"key": KEY, "part": i, "parts": len(sent)}}
        for i in range(1, len(sent) + 1)
    ]
    # around it: someone else's message, another reply of the bot, one forging the key
    slack.add_message("C0001", "1700000500.000100", user="UBOB", text="thanks", thread_ts=ASKED)
    await channel.send(target, "a later answer", key="turn-42:answer")
    slack.add_message(
        "C0001",
        "1700000600.000100",
        user="UMALLORY",
        text="not the bot",
        thread_ts=ASKED,
        metadata={"event_type": REPLY_EVENT, "event_payload": {"key": KEY, "part": 1}},
    )

    found = await channel.delivery.find_delivered(
        target, key=KEY, text=text, after_message_id=f"C0001:{ASKED}"
    )
    assert found == list(sent)
    (call,) = slack.calls_of("conversations.replies")
    assert call.params["ts"] == ASKED and call.params["oldest"] == ASKED
    assert call.params["include_all_metadata"] in ("1", "true", True)


async def test_a_top_level_reply_is_found_in_the_history(slack: FakeSlack, store: Store) -> None:
    channel = channel_for(slack, store)
    slack.add_message("D0001", ASKED, user="UANN", text="hi")
    target = DeliveryTarget(channel=REF, conversation_id="D0001", reply_to_message_id=ASKED)
    (sent,) = await channel.send(target, "hello Ann", key=KEY)
    found = await channel.delivery.find_delivered(
        target, key=KEY, text="hello Ann", after_message_id=f"D0001:{ASKED}"
    )
    assert found == [SentMessage(target=target, message_id=sent.message_id)]
    assert slack.calls_of("conversations.history")
    # asked about a later message, the reply is before it: not found
    later = await channel.delivery.find_delivered(
        target, key=KEY, text="hello Ann", after_message_id=f"D0001:{sent.message_id}"
    )
    assert later == []


async def test_nothing_sent_is_an_empty_answer(slack: FakeSlack, store: Store) -> None:
    channel = channel_for(slack, store)
    slack.add_message("C0001", ASKED, user="UANN", text="<@UBOT> hi")
    await channel.send(thread_target(), "an answer without a key")
    found = await channel.delivery.find_delivered(
        thread_target(), key=KEY, text="x", after_message_id=f"C0001:{ASKED}"
    )
    assert found == []
    (post,) = slack.calls_of("chat.postMessage")
    assert "metadata" not in post.params


async def test_the_reply_is_found_past_the_first_page(slack: FakeSlack, store: Store) -> None:
    channel = channel_for(slack, store)
    slack.add_message("C0002", ASKED, user="UANN", text="hi")
    target = DeliveryTarget(channel=REF, conversation_id="C0002")
    (sent,) = await channel.send(target, "the answer", key=KEY)
    for i in range(450):  # a busy channel after the answer (history is newest first)
        slack.add_message("C0002", f"1800000000.{i:06d}", user="UBOB", text=f"chatter {i}")
    found = await channel.delivery.find_delivered(
        target, key=KEY, text="the answer", after_message_id=f"C0002:{ASKED}"
    )
    assert found == [sent]
    assert len(slack.calls_of("conversations.history")) == 3


async def test_a_search_cut_short_or_a_failed_call_is_no_answer(
    slack: FakeSlack, store: Store
) -> None:
    channel = channel_for(slack, store)
    target = DeliveryTarget(channel=REF, conversation_id="C0003")
    for i in range(MAX_PAGES * 200 + 1):
        slack.add_message("C0003", f"1800000000.{i:06d}", user="UBOB", text="chatter")
    cut = await channel.delivery.find_delivered(
        target, key=KEY, text="x", after_message_id="C0003:1.1"
    )
    assert cut is None
    assert len(slack.calls_of("conversations.history")) == MAX_PAGES
    # a thread Slack does not know
    missing = DeliveryTarget(channel=REF, conversation_id="C0003", thread_id="5.5")
    failed = await channel.delivery.find_delivered(
        missing, key=KEY, text="x", after_message_id="C0003:5.5"
    )
    assert failed is None
    # a slash command is answered privately: nothing to look up
    slash = DeliveryTarget(
        channel=REF, conversation_id="C0003", reply_to_message_id="slash:UANN:1.2.3"
    )
    assert (
        await channel.delivery.find_delivered(
            slash, key=KEY, text="x", after_message_id="slash:UANN:1.2.3"
        )
        is None
    )


async def test_the_bot_is_known_by_its_bot_id_too(slack: FakeSlack, store: Store) -> None:
    channel = channel_for(slack, store)
    target = DeliveryTarget(channel=REF, conversation_id="C0004")
    metadata = {"event_type": REPLY_EVENT, "event_payload": {"key": KEY}}
    # posted as the app by another of its tokens: no user, the same bot id
    slack.add_message("C0004", "1700000900.000100", user="", text="x", bot_id=BOT_ID)
    slack.messages[("C0004", "1700000900.000100")]["metadata"] = metadata
    slack.add_message("C0004", "1700000901.000100", user=BOT_USER, text="y", metadata=metadata)
    found = await channel.delivery.find_delivered(target, key=KEY, text="x", after_message_id=None)
    # both are part 1 of the reply: the earlier copy counts
    assert found == [SentMessage(target=target, message_id="1700000900.000100")]
