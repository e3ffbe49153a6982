"""Group context on Slack, end to end (the daemon's App over slack-bolt / slack_sdk and the
loopback Slack): channel messages not addressed to the bot are kept, never answered; an edit
(``message_changed``) rewrites a line, a deletion (``message_deleted``) drops it; a mention
brings the rest to the model as other participants' words in an untrusted-data block, a
stranger's marked; after ``hatchway forget --user`` (the command, run as
its own process) that person's lines are gone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.app import App
from bot.channel import HealthState
from bot.config import Settings, parse_settings
from channels.slack.adapter import SlackChannel, SlackCredentials
from channels.slack.config import SlackChannelConfig
from tests.channels.slack.test_edits import changed, deleted
from tests.context.forgetting import forget_user
from tests.context.waiting import context_of, has_kept, until
from tests.fakes.channel_health import wait_for_health
from tests.fakes.scripted_provider import ScriptedProvider, reply
from tests.fakes.slack_server import BOT_USER, FakeSlack, event_callback, message_event, person
from tests.fakes.slack_setup import APP_TOKEN, BOT_TOKEN, REF, REQUESTER, STRANGER, channel_values


def values(slack: FakeSlack, **context: Any) -> dict[str, Any]:
    return {**channel_values(slack), "context": {"group_messages": 10, **context}}


def settings(slack: FakeSlack, tmp_path: Path, **context: Any) -> Settings:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "channels": {"slack": {"main": values(slack, **context)}},
        },
        environ={},
        require_provider=False,
    )


def channel(slack: FakeSlack, **context: Any) -> SlackChannel:
    return SlackChannel(
        ref=REF,
        config=SlackChannelConfig.model_validate(values(slack, **context)),
        credentials=SlackCredentials(bot_token=BOT_TOKEN, app_token=APP_TOKEN),
    )


async def said(slack: FakeSlack, text: str, *, user: str, ts: str, **extra: Any) -> None:
    await slack.wait_ack(
        await slack.push(
            "events_api", event_callback(message_event(text, user=user, ts=ts, **extra))
        )
    )


async def test_channel_discussion_then_a_mention(slack: FakeSlack, tmp_path: Path) -> None:
    slack.users[STRANGER] = person(STRANGER, "Eve")
    provider = ScriptedProvider([reply("Wait for the fix."), reply("Still waiting.")])
    adapter = channel(slack)
    app = App(settings(slack, tmp_path), provider=provider, channels={str(REF): adapter})
    async with app:
        await wait_for_health(adapter, HealthState.CONNECTED)
        await said(slack, "the release is blocked", user=STRANGER, ts="1700000010.000100")
        await said(slack, "we should roll back", user=REQUESTER, ts="1700000011.000100")
        await said(slack, "lunch?", user=REQUESTER, ts="1700000012.000100")
        edit = changed(
            {
                "user": REQUESTER,
                "text": "we should wait for the fix",
                "ts": "1700000011.000100",
                "edited": {"user": REQUESTER, "ts": "1700000013.000100"},
            },
            {"user": REQUESTER, "text": "we should roll back", "ts": "1700000011.000100"},
        )
        await slack.wait_ack(await slack.push("events_api", event_callback(edit)))
        gone = deleted(
            "1700000012.000100", {"user": REQUESTER, "text": "lunch?", "ts": "1700000012.000100"}
        )
        await slack.wait_ack(await slack.push("events_api", event_callback(gone)))
        await until(has_kept(app.store, "the release is blocked", "we should wait for the fix"))
        assert provider.requests == []  # kept for context only, never answered

        mention = message_event(
            f"<@{BOT_USER}> what do you think?", kind="app_mention", ts="1700000020.000100"
        )
        await slack.push("events_api", event_callback(mention))
        await slack.wait_for("chat.postMessage", where=lambda p: "fix." in str(p.get("text")))

        [request] = provider.requests
        content = request.messages[-1].content
        block = context_of(content)
        assert content.endswith("what do you think?")
        assert f"Eve ({STRANGER}, not an allowed user): the release is blocked" in block
        assert f"Ann ({REQUESTER}): we should wait for the fix" in block
        assert "lunch" not in block and "roll back" not in block

        # the operator's command, a process of its own, on the running daemon's database
        printed = await forget_user(tmp_path, STRANGER)
        assert f"  {'context_lines':<20} 1" in printed.splitlines(), printed
        again = message_event(f"<@{BOT_USER}> and now?", kind="app_mention", ts="1700000030.000100")
        await slack.push("events_api", event_callback(again))
        await slack.wait_for("chat.postMessage", where=lambda p: "Still" in str(p.get("text")))
    second = provider.requests[1].messages[-1].content
    assert "Eve" not in second and "release is blocked" not in second
    assert "we should wait for the fix" in context_of(second)


THREAD = "1700000100.000100"


async def test_a_mention_mid_thread_pulls_the_thread(slack: FakeSlack, tmp_path: Path) -> None:
    slack.users[STRANGER] = person(STRANGER, "Eve")
    slack.add_message("C0001", THREAD, user=STRANGER, text="ship on friday?", thread_ts=THREAD)
    slack.add_message(
        "C0001",
        "1700000101.000100",
        user=REQUESTER,
        text="only if the migration is done",
        thread_ts=THREAD,
    )
    slack.add_message(
        "C0001", "1700000102.000100", user="UOTHER", text="ok", thread_ts=THREAD, bot_id="B0THER"
    )
    # the first read is refused as over Slack's limit: it is waited out, then answered
    slack.rate_limit_next("conversations.replies", 1)
    provider = ScriptedProvider([reply("Friday is risky."), reply("Now it is fine.")])
    options = {"group_messages": 0, "thread_messages": 20}
    adapter = channel(slack, **options)
    app = App(settings(slack, tmp_path, **options), provider=provider, channels={str(REF): adapter})
    async with app:
        await wait_for_health(adapter, HealthState.CONNECTED)
        mention = message_event(
            f"<@{BOT_USER}> what do you think?",
            kind="app_mention",
            ts="1700000105.000100",
            thread_ts=THREAD,
        )
        await slack.push("events_api", event_callback(mention))
        await slack.wait_for("chat.postMessage", where=lambda p: "risky" in str(p.get("text")))
        [request] = provider.requests
        block = context_of(request.messages[-1].content)
        assert f"Eve ({STRANGER}, not an allowed user): ship on friday?" in block
        assert f"Ann ({REQUESTER}): only if the migration is done" in block
        assert "UOTHER" not in block  # another bot's message is left out
        assert len(slack.calls_of("conversations.replies", status=429)) == 1

        # an edit of a message read reaches the cache; the thread is not read again
        edit = changed(
            {
                "user": REQUESTER,
                "text": "the migration is done",
                "ts": "1700000101.000100",
                "thread_ts": THREAD,
                "edited": {"user": REQUESTER, "ts": "1700000106.000100"},
            },
            {
                "user": REQUESTER,
                "text": "only if the migration is done",
                "ts": "1700000101.000100",
                "thread_ts": THREAD,
            },
        )
        await slack.wait_ack(await slack.push("events_api", event_callback(edit)))
        again = message_event(
            f"<@{BOT_USER}> and now?", kind="app_mention", ts="1700000110.000100", thread_ts=THREAD
        )
        await slack.push("events_api", event_callback(again))
        await slack.wait_for("chat.postMessage", where=lambda p: "fine" in str(p.get("text")))
    second = context_of(provider.requests[1].messages[-1].content)
    assert f"Ann ({REQUESTER}): the migration is done" in second
    assert "only if" not in second
    assert len(slack.calls_of("conversations.replies")) == 1


async def test_a_message_both_kept_and_read_back_is_shown_once(
    slack: FakeSlack, tmp_path: Path
) -> None:
    slack.users[STRANGER] = person(STRANGER, "Eve")
    slack.add_message("C0001", THREAD, user=STRANGER, text="ship on friday?", thread_ts=THREAD)
    provider = ScriptedProvider([reply("Once.")])
    options = {"group_messages": 10, "thread_messages": 20}
    adapter = channel(slack, **options)
    app = App(settings(slack, tmp_path, **options), provider=provider, channels={str(REF): adapter})
    async with app:
        await wait_for_health(adapter, HealthState.CONNECTED)
        await said(slack, "ship on friday?", user=STRANGER, ts=THREAD)  # kept as it is posted
        await until(has_kept(app.store, "ship on friday?"))
        mention = message_event(
            f"<@{BOT_USER}> thoughts?", kind="app_mention", ts="1700000105.000100", thread_ts=THREAD
        )
        await slack.push("events_api", event_callback(mention))
        await slack.wait_for("chat.postMessage", where=lambda p: "Once." in str(p.get("text")))
    block = context_of(provider.requests[0].messages[-1].content)
    assert block.count("ship on friday?") == 1


async def test_a_long_thread_past_the_rate_limit_is_read_in_part(
    slack: FakeSlack, tmp_path: Path
) -> None:
    slack.add_message("C0001", THREAD, user=STRANGER, text="reply 0", thread_ts=THREAD)
    for n in range(1, 205):
        ts = f"{1700000100 + n}.000100"
        slack.add_message("C0001", ts, user=STRANGER, text=f"reply {n}", thread_ts=THREAD)
    # the first page (200 messages) is read; the second stays refused through every retry
    slack.rate_limit_next("conversations.replies", 1, times=4, after=1)
    provider = ScriptedProvider([reply("Read in part.")])
    options = {"group_messages": 0, "thread_messages": 20}
    adapter = channel(slack, **options)
    app = App(settings(slack, tmp_path, **options), provider=provider, channels={str(REF): adapter})
    async with app:
        await wait_for_health(adapter, HealthState.CONNECTED)
        mention = message_event(
            f"<@{BOT_USER}> summary?", kind="app_mention", ts="1700000900.000100", thread_ts=THREAD
        )
        await slack.push("events_api", event_callback(mention))
        await slack.wait_for("chat.postMessage", where=lambda p: "part." in str(p.get("text")))
    block = context_of(provider.requests[0].messages[-1].content)
    assert "reply 199" in block and "reply 180" in block  # the newest 20 of the page read
    assert "reply 179" not in block and "reply 200" not in block
    assert len(slack.calls_of("conversations.replies", status=429)) == 4
