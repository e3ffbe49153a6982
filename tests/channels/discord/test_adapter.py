"""The Discord adapter with the real discord.py against a loopback fake: inbound messages,
answers, threads, DMs, progress edits and typing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import discord
import pytest

from bot.envelope import DeliveryTarget, IngressEnvelope
from bot.store import Store
from channels.discord.cdn import AttachmentRef
from tests.fakes.discord_payloads import FakeGuild, user_payload
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import (
    ALICE,
    BOT,
    BOT_ID,
    DM,
    GENERAL,
    RecordingHost,
    make_channel,
    running,
    said,
)

pytestmark = pytest.mark.usefixtures("discord_env")

THREAD = "800000000000000011"
ELSEWHERE = "800000000000000020"
OTHER_BOT = user_payload("100000000000000009", "otherbot", bot=True)


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    """Two guilds: #general with a thread, and one the bot is not meant to serve."""
    async with FakeDiscord(bot_id=BOT_ID) as server:
        server.add_guild(channels={GENERAL: "general"}, threads={THREAD: (GENERAL, ALICE["id"])})
        server.add_guild(channels={ELSEWHERE: "elsewhere"})
        yield server


def guild(fake: FakeDiscord, index: int = 0) -> FakeGuild:
    return fake.guilds[index]


async def test_guild_message_mentioning_the_bot_starts_a_turn(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store, approvers=["1"])
    async with running(channel, host):
        message = said(fake, f"<@{BOT_ID}> what time is it?", mentions=[BOT])
        await fake.dispatch("MESSAGE_CREATE", message)
        [envelope] = await host.wait_envelopes(1)

    assert envelope.message_id == message["id"]
    assert (envelope.conversation_id, envelope.thread_id) == (GENERAL, None)
    # the channel's name, from the gateway's cache, for the console
    assert (envelope.conversation_title, envelope.thread_title) == ("general", "")
    assert envelope.text == "what time is it?"
    assert envelope.sender.id == ALICE["id"] and envelope.sender.display_name == "alice"
    assert not envelope.sender.is_bot
    assert envelope.is_group and not envelope.is_direct and envelope.addressed_to_bot
    assert envelope.reply_target == DeliveryTarget(
        channel=channel.ref, conversation_id=GENERAL, reply_to_message_id=message["id"]
    )
    caps = envelope.capabilities
    assert caps.can_edit and caps.can_react and caps.inline_buttons and caps.typing
    assert caps.max_message_chars == 2000
    assert caps.approval_backchannel and not caps.terminal_prompt


@pytest.mark.parametrize(
    ("case", "addressed"),
    [
        ("plain", False),
        ("mention", True),
        ("reply_to_bot", True),
        ("reply_to_someone", False),
    ],
)
async def test_mention_and_reply_gating(
    fake: FakeDiscord, store: Store, case: str, addressed: bool
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    fields: dict[str, Any] = {}
    if case == "mention":
        fields["mentions"] = [BOT]
    elif case.startswith("reply_to"):
        author = BOT if case == "reply_to_bot" else OTHER_BOT
        fields["referenced"] = said(fake, "earlier", author=author)
    async with running(channel, host):
        text = f"<@{BOT_ID}> hi" if case == "mention" else "hi"
        await fake.dispatch("MESSAGE_CREATE", said(fake, text, **fields))
        [envelope] = await host.wait_envelopes(1)
    assert envelope.addressed_to_bot is addressed
    assert not envelope.capabilities.approval_backchannel  # no approvers configured


async def test_own_duplicate_system_and_foreign_guild_messages_are_not_delivered(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store, allowed_guilds=[guild(fake).id])
    first = said(fake, "first")
    system = said(fake, "pinned a message")
    system["type"] = 6
    async with running(channel, host):
        await fake.dispatch("MESSAGE_CREATE", said(fake, "echo", author=BOT))
        await fake.dispatch("MESSAGE_CREATE", first)
        await fake.dispatch("MESSAGE_CREATE", first)  # a replay of the same message id
        await fake.dispatch("MESSAGE_CREATE", system)
        await fake.dispatch("MESSAGE_CREATE", said(fake, "not ours", channel_id=ELSEWHERE))
        await fake.dispatch("MESSAGE_CREATE", said(fake, "from a bot", author=OTHER_BOT))
        envelopes = await host.wait_envelopes(2)
    assert [e.text for e in envelopes] == ["first", "from a bot"]
    assert envelopes[1].sender.is_bot  # flagged for the gateway's policy, not dropped here


async def test_dm_turn_is_direct_and_answered_in_the_dm(fake: FakeDiscord, store: Store) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        await fake.dispatch("MESSAGE_CREATE", said(fake, "hello there", channel_id=DM))
        [envelope] = await host.wait_envelopes(1)
        await channel.send(envelope.reply_target, "Hi! How can I help?")
        [call] = await fake.wait_for_call("POST", f"/channels/{DM}/messages")
    assert envelope.is_direct and not envelope.is_group and envelope.addressed_to_bot
    assert (envelope.conversation_id, envelope.text) == (DM, "hello there")
    assert envelope.conversation_title == ""  # a DM has no name
    assert call.body is not None and call.body["content"] == "Hi! How can I help?"


def _long_answer() -> str:
    code = "\n".join(f"    line_{i} = compute({i})" for i in range(60))
    prose = " ".join(f"Sentence number {i} explains a detail." for i in range(80))
    return f"## Result\n\n{prose}\n\n```python\n{code}\n```\n\n{prose}\n\n#### Done\n"


async def test_long_answer_splits_under_2000_without_breaking_code(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    answer = _long_answer()
    assert len(answer) > 4000
    async with running(channel, host):
        await fake.dispatch("MESSAGE_CREATE", said(fake, "explain", mentions=[BOT]))
        [envelope] = await host.wait_envelopes(1)
        sent = await channel.send(envelope.reply_target, answer)
        calls = await fake.wait_for_call("POST", f"/channels/{GENERAL}/messages", count=len(sent))
    assert len(sent) == len(calls) >= 3
    contents = [c.body["content"] for c in calls if c.body is not None]
    assert all(len(text) <= 2000 for text in contents)
    assert all(text.count("```") % 2 == 0 for text in contents)
    assert "line_59 = compute(59)" in "".join(contents)
    assert "**Done**" in contents[-1]  # a level-4 heading, converted
    first, *rest = [c.body for c in calls if c.body is not None]
    assert first["message_reference"]["message_id"] == int(envelope.message_id)
    assert all("message_reference" not in body for body in rest)


async def test_answers_in_a_thread_go_to_the_thread(fake: FakeDiscord, store: Store) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        await fake.dispatch("MESSAGE_CREATE", said(fake, "in thread", channel_id=THREAD))
        [envelope] = await host.wait_envelopes(1)
        await channel.send(envelope.reply_target, "answer")
        await fake.wait_for_call("POST", f"/channels/{THREAD}/messages")
    assert (envelope.conversation_id, envelope.thread_id) == (GENERAL, THREAD)
    assert (envelope.conversation_title, envelope.thread_title) == ("general", "thread")
    assert envelope.is_group


async def test_thread_per_request_opens_a_thread_on_the_first_answer(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store, thread_per_request=True)
    async with running(channel, host):
        message = said(fake, f"<@{BOT_ID}> summarise the logs", mentions=[BOT])
        await fake.dispatch("MESSAGE_CREATE", message)
        [envelope] = await host.wait_envelopes(1)
        assert fake.calls_to("POST", r"/channels/\d+/messages/\d+/threads") == []
        await channel.send(envelope.reply_target, "working on it")
        await channel.send(envelope.reply_target, "done")
        [opened] = fake.calls_to("POST", r"/channels/\d+/messages/\d+/threads")
        answers = await fake.wait_for_call("POST", f"/channels/{message['id']}/messages", count=2)
        follow_up = said(fake, "and the errors?", channel_id=message["id"])
        await fake.dispatch("MESSAGE_CREATE", follow_up)
        [_, in_thread] = await host.wait_envelopes(2)
    assert opened.path == f"/channels/{GENERAL}/messages/{message['id']}/threads"
    assert opened.body is not None and opened.body["name"] == "summarise the logs"
    assert envelope.thread_id == message["id"] and envelope.conversation_id == GENERAL
    assert all(a.body is not None and "message_reference" not in a.body for a in answers)
    # a follow-up in the bot's thread needs no mention and continues the same conversation
    assert in_thread.addressed_to_bot
    assert (in_thread.conversation_id, in_thread.thread_id) == (GENERAL, message["id"])


async def test_progress_edit_typing_and_reaction(fake: FakeDiscord, store: Store) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        await fake.dispatch("MESSAGE_CREATE", said(fake, "go", mentions=[BOT]))
        [envelope] = await host.wait_envelopes(1)
        target = envelope.reply_target
        await channel.typing(target)
        [progress] = await channel.send(target, "⏳ working")
        await channel.edit(progress, "⏳ working\n🔧 shell: ls")
        await channel.edit(progress, "⏳ working\n🔧 shell: ls")  # unchanged text is fine
        await channel.edit(progress, "x" * 5000)  # an edit is one message: cut, not split
        await channel.react(target, envelope.message_id, "👀")
        edits = await fake.wait_for_call(
            "PATCH", f"/channels/{GENERAL}/messages/{progress.message_id}", count=3
        )
    assert fake.calls_to("POST", f"/channels/{GENERAL}/typing")
    assert edits[0].body is not None and edits[0].body["content"] == "⏳ working\n🔧 shell: ls"
    assert edits[2].body is not None and len(edits[2].body["content"]) <= 2000
    [reaction] = fake.calls_to("PUT", rf"/channels/{GENERAL}/messages/\d+/reactions/.+/@me")
    assert envelope.message_id in reaction.path


async def test_rate_limited_send_is_retried_after_retry_after(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        await fake.dispatch("MESSAGE_CREATE", said(fake, "hi", channel_id=DM))
        [envelope] = await host.wait_envelopes(1)
        fake.rate_limits.append(0.05)
        sent = await channel.send(envelope.reply_target, "hello")
    attempts = fake.calls_to("POST", f"/channels/{DM}/messages")
    assert len(sent) == 1 and len(attempts) == 2  # one 429, then the retry


async def test_attachments_carry_metadata_and_where_to_find_them_again(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    attachment = fake.cdn.attachment(GENERAL, "plot.png", b"png", content_type="image/png")
    message = said(fake, "see", attachments=[attachment])
    async with running(channel, host):
        await fake.dispatch("MESSAGE_CREATE", message)
        [envelope] = await host.wait_envelopes(1)
    [meta] = envelope.attachments
    assert (meta.kind, meta.name, meta.mime_type, meta.size) == (
        "image",
        "plot.png",
        "image/png",
        3,
    )
    assert AttachmentRef.decode(meta.ref) == AttachmentRef(
        channel_id=GENERAL,
        message_id=message["id"],
        attachment_id=attachment["id"],
        url=attachment["url"],
    )


async def test_endpoints_stay_per_client(store: Store) -> None:
    """Two channels on two fakes each talk only to their own; discord.py's class-level
    defaults are untouched."""
    base, gateway = discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    async with FakeDiscord(bot_id=BOT_ID) as one, FakeDiscord(bot_id=BOT_ID) as two:
        for server in (one, two):
            server.add_guild(channels={GENERAL: "general"})
        host_one, host_two = RecordingHost(), RecordingHost()
        async with (
            running(make_channel(one, store), host_one),
            running(make_channel(two, store), host_two),
        ):
            await one.dispatch("MESSAGE_CREATE", said(one, "to one"))
            await two.dispatch("MESSAGE_CREATE", said(two, "to two"))
            envelopes: list[IngressEnvelope] = [
                *(await host_one.wait_envelopes(1)),
                *(await host_two.wait_envelopes(1)),
            ]
        assert (one.identifies, two.identifies) == (1, 1)
    assert [e.text for e in envelopes] == ["to one", "to two"]
    assert base == discord.http.Route.BASE
    assert gateway == discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
