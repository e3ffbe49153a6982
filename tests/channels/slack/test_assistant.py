"""Slack's assistant surface on the adapter (slack-bolt over Socket Mode to the loopback
Slack): a started thread gets the agent's suggested prompts and its context is kept in the
store (never in a message's metadata), the first message titles the thread once, the status
line is set in an assistant thread and left alone where Slack refuses it; off by default."""

from __future__ import annotations

import json
import time
from typing import Any

from bot.envelope import DeliveryTarget
from bot.store import Store
from bot.store.channel_state import ChannelState
from channels.slack.assistant import KEEP_S, ThreadContexts, thread_title
from tests.fakes.channel_health import serving
from tests.fakes.recording_host import RecordingHost
from tests.fakes.slack_server import FakeSlack, event_callback, message_event, params_match
from tests.fakes.slack_setup import REF, REQUESTER, channel_for

DM = "D0ASSIST"
THREAD = "1700000100.000100"
PROMPTS = [
    {"title": "Summarise", "message": "Summarise this channel"},
    {"title": "Deploy", "message": "What was deployed today?"},
]


def assistant(**overrides: Any) -> dict[str, Any]:
    return {"assistant": {"enabled": True, "prompts": {"default": PROMPTS}, **overrides}}


def target(thread: str = THREAD, conversation: str = DM) -> DeliveryTarget:
    return DeliveryTarget(channel=REF, conversation_id=conversation, thread_id=thread)


def in_thread(text: str, ts: str, thread: str = THREAD) -> dict[str, Any]:
    return event_callback(message_event(text, user=REQUESTER, channel=DM, ts=ts, thread_ts=thread))


async def stored_context(store: Store) -> dict[str, Any]:
    raw = await store.channel_state.get(str(REF), f"assistant:{DM}:{THREAD}")
    assert raw is not None
    value = json.loads(raw)
    assert isinstance(value, dict)
    return value


async def test_a_started_thread_gets_prompts_and_its_context_is_kept(
    slack: FakeSlack, store: Store
) -> None:
    host = RecordingHost()
    channel = channel_for(slack, store, **assistant())
    async with serving(channel, host):
        started = slack.assistant.start(
            user=REQUESTER, dm_channel=DM, thread_ts=THREAD, context_channel="C0001"
        )
        await slack.wait_ack(await slack.push("events_api", started))
        [call] = await slack.wait_for(
            "assistant.threads.setSuggestedPrompts",
            where=params_match({"channel_id": DM, "thread_ts": THREAD}),
        )
        assert call.params["prompts"] == PROMPTS
        assert call.params["title"] == "Try asking"
        assert slack.assistant.prompts[(DM, THREAD)]["prompts"] == PROMPTS
        assert (await stored_context(store))["context"]["channel_id"] == "C0001"
        changed = slack.assistant.context_changed(
            user=REQUESTER, dm_channel=DM, thread_ts=THREAD, context_channel="C0002"
        )
        await slack.wait_ack(await slack.push("events_api", changed))
        # the worker takes events in order: once this message is handed over, so is the change
        await slack.push("events_api", in_thread("hello", "1700000101.000100"))
        await host.wait_envelopes(1)
        contexts = ThreadContexts(store.channel_state, str(REF))
        found = await contexts.find(channel_id=DM, thread_ts=THREAD)
        assert found is not None and found.channel_id == "C0002"
    # the context lives in the store: no message was written or rewritten for it
    assert slack.calls_of("chat.update") == []
    assert slack.calls_of("chat.postMessage") == []


async def test_the_first_message_titles_the_thread_once(slack: FakeSlack, store: Store) -> None:
    host = RecordingHost()
    channel = channel_for(slack, store, **assistant())
    async with serving(channel, host):
        started = slack.assistant.start(user=REQUESTER, dm_channel=DM, thread_ts=THREAD)
        await slack.wait_ack(await slack.push("events_api", started))
        await slack.wait_for("assistant.threads.setSuggestedPrompts")
        first = "How do I rotate the *deploy* key\nfor staging?"
        await slack.push("events_api", in_thread(first, "1700000101.000100"))
        await slack.push("events_api", in_thread("and for prod?", "1700000102.000100"))
        envelopes = await host.wait_envelopes(2)
        await slack.wait_for("assistant.threads.setTitle")
    assert [e.text for e in envelopes] == [first, "and for prod?"]
    assert envelopes[0].reply_target.thread_id == THREAD
    assert slack.assistant.titles == {(DM, THREAD): "How do I rotate the *deploy* key for staging?"}
    assert len(slack.calls_of("assistant.threads.setTitle")) == 1
    assert (await stored_context(store))["titled"] is True


def test_a_title_is_one_line_cut_and_scrubbed() -> None:
    assert thread_title("a  b\n\tc", 60) == "a b c"
    assert thread_title("x" * 80, 10) == "x" * 9 + "…"
    token = "xoxb-1234567890-1234567890-abcdefabcdefabcdef"
    assert token not in thread_title(f"my token is {token}", 200)


async def test_the_status_line_in_an_assistant_thread(slack: FakeSlack, store: Store) -> None:
    channel = channel_for(slack, store, **assistant(status="is on it…"))
    async with serving(channel, RecordingHost()):
        started = slack.assistant.start(user=REQUESTER, dm_channel=DM, thread_ts=THREAD)
        await slack.wait_ack(await slack.push("events_api", started))
        assert channel.work_status.shows_status(target())
        assert not channel.work_status.shows_status(target(conversation="C0001"))
        assert not channel.work_status.shows_status(target(thread=""))
        await channel.work_status.show_status(target(), tool=None)
        await channel.work_status.show_status(target(), tool="web_search")
    assert slack.assistant.status_of(DM, THREAD) == ["is on it…", "is running web_search…"]


async def test_a_refused_status_leaves_the_thread_alone(slack: FakeSlack, store: Store) -> None:
    channel = channel_for(slack, store, **assistant())
    async with serving(channel, RecordingHost()):
        # a DM thread Slack never opened as an assistant thread
        await channel.work_status.show_status(target("1700000200.000100"), tool=None)
        assert ("assistant.threads.setStatus", "not_in_assistant_thread") in slack.refused
        assert not channel.work_status.shows_status(target("1700000200.000100"))
        await channel.work_status.show_status(target("1700000200.000100"), tool="shell")
    assert len(slack.calls_of("assistant.threads.setStatus")) == 1


async def test_without_assistant_write_the_thread_is_still_answered(
    slack: FakeSlack, store: Store
) -> None:
    slack.assistant.scopes.discard("assistant:write")
    host = RecordingHost()
    channel = channel_for(slack, store, **assistant())
    async with serving(channel, host):
        started = slack.assistant.start(user=REQUESTER, dm_channel=DM, thread_ts=THREAD)
        await slack.wait_ack(await slack.push("events_api", started))
        await slack.push("events_api", in_thread("hello", "1700000101.000100"))
        await slack.push("events_api", in_thread("anyone?", "1700000102.000100"))
        await host.wait_envelopes(2)
    # refused once (the prompts): the thread is left alone from then on, never titled
    assert slack.refused == [("assistant.threads.setSuggestedPrompts", "missing_scope")]
    assert slack.assistant.prompts == {} and slack.assistant.titles == {}


async def test_off_by_default(slack: FakeSlack, store: Store) -> None:
    host = RecordingHost()
    channel = channel_for(slack, store)
    async with serving(channel, host):
        started = slack.assistant.start(user=REQUESTER, dm_channel=DM, thread_ts=THREAD)
        await slack.wait_ack(await slack.push("events_api", started))
        await slack.push("events_api", in_thread("hello", "1700000101.000100"))
        await host.wait_envelopes(1)
        assert not channel.work_status.shows_status(target())
    assert [c for c in slack.calls if c.method.startswith("assistant.")] == []
    assert await store.channel_state.items(str(REF), "assistant:") == []


async def test_threads_idle_for_long_are_forgotten_at_start(slack: FakeSlack, store: Store) -> None:
    long_ago = ChannelState(store.db, clock=lambda: time.time() - KEEP_S - 60)
    await ThreadContexts(long_ago, str(REF)).save(
        channel_id=DM, thread_ts="1600000000.000100", context={"channel_id": "C0001"}
    )
    await ThreadContexts(store.channel_state, str(REF)).save(
        channel_id=DM, thread_ts=THREAD, context={"channel_id": "C0002"}
    )
    async with serving(channel_for(slack, store, **assistant()), RecordingHost()):
        pass
    rows = await store.channel_state.items(str(REF), "assistant:")
    assert [key for key, _ in rows] == [f"assistant:{DM}:{THREAD}"]
