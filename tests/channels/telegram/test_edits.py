"""Edited messages on Telegram, through the real python-telegram-bot and the loopback fake.

An ``edited_message`` update is normalised as a new message would be, under the original
message's id, and reported with ``ChannelHost.edited`` (never ``deliver``), by long polling and
by webhook. The addressing rules are the live ones; the bot's own messages give nothing; an
edit of a reply to an approval card is not a question for the agent. The polling offset moves
past an edit only once the host returned, so an edit whose handling crashed, or one made while
the bot was down, is reported after the restart.

"Not reported" is checked with a later message in the same chat: updates are handled in order,
so when that one has arrived, the edit before it was routed.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.channel import ApprovalCard
from bot.envelope import IngressEnvelope
from bot.store import Store
from tests.fakes.channel_health import serving as running
from tests.fakes.recording_host import HostCrash, RecordingHost
from tests.fakes.telegram_server import (
    JSON,
    FakeTelegram,
    bot_message,
    edit_of,
    forum_chat,
    mention,
    message,
    private_chat,
    user,
)
from tests.fakes.telegram_setup import APPROVER, REQUESTER, TOKEN, channel_for

DM = private_chat(REQUESTER)
GROUP = forum_chat(-100999)
TOPIC = 4
CARD = ApprovalCard(
    approval_id="apr-1",
    tool="shell",
    lines=("command: ls /tmp",),
    reason="shell is not auto-approved",
    requested_by="Ann",
)


def said(chat: JSON, text: str, message_id: int, **extra: Any) -> JSON:
    """A message payload from the requester (in the topic when ``chat`` is the group)."""
    thread = TOPIC if chat is GROUP else None
    return message(
        chat, user(REQUESTER, "Ann"), text, message_id=message_id, thread_id=thread, **extra
    )


def same_but_text(edited: IngressEnvelope, live: IngressEnvelope) -> bool:
    """``edited`` is ``live`` as it reads now: every field alike but the text and the
    envelope's own identity (id and arrival time)."""
    mutable = {"text", "envelope_id", "received_at"}
    return all(
        getattr(edited, f.name) == getattr(live, f.name)
        for f in dataclasses.fields(IngressEnvelope)
        if f.name not in mutable
    )


async def routed_up_to(tg: FakeTelegram, host: RecordingHost, chat: JSON, count: int) -> None:
    """Push a later message to ``chat`` and wait until it is the ``count``-th delivered."""
    text = "@hatchbot later"
    await tg.push({"message": said(chat, text, 900 + count, entities=mention(text))})
    envelopes = await host.wait_envelopes(count)
    assert envelopes[-1].text == "later"


async def test_an_edit_is_reported_under_the_original_id(tg: FakeTelegram, store: Store) -> None:
    host = RecordingHost()
    async with running(channel_for(tg, store), host):
        assert "edited_message" in tg.calls_of("getUpdates")[-1].params["allowed_updates"]
        original = said(DM, "helo", 7)
        await tg.push({"message": original})
        [live] = await host.wait_envelopes(1)
        await tg.push(edit_of(original, "hello"))
        [edited] = await host.wait_edits(1)
        await routed_up_to(tg, host, DM, 2)
    assert edited.message_id == live.message_id == f"{REQUESTER}:7"
    assert edited.text == "hello"
    assert same_but_text(edited, live)
    assert [e.text for e in host.envelopes] == ["helo", "later"]


@pytest.mark.parametrize(
    ("before", "after", "addressed", "text"),
    [
        ("deploy please", "@hatchbot deploy please", True, "deploy please"),
        ("@hatchbot deploy", "deploy, never mind", False, "deploy, never mind"),
        ("/deploy now", "/deploy@hatchbot now", True, "/deploy now"),
        ("/deploy now", "/deploy@otherbot now", False, "/deploy@otherbot now"),
    ],
)
async def test_an_edit_in_a_group_is_addressed_as_a_new_message_would_be(
    tg: FakeTelegram, store: Store, before: str, after: str, addressed: bool, text: str
) -> None:
    def entities(words: str) -> list[JSON]:
        if words.startswith("/"):
            return [{"type": "bot_command", "offset": 0, "length": len(words.split()[0])}]
        return mention(words) if "@hatchbot" in words else []

    host = RecordingHost()
    async with running(channel_for(tg, store), host):
        original = said(GROUP, before, 41, entities=entities(before))
        await tg.push({"message": original})
        await tg.push(edit_of(original, after, entities=entities(after)))
        [edited] = await host.wait_edits(1)
    assert (edited.text, edited.addressed_to_bot) == (text, addressed)
    assert edited.message_id == f"{GROUP['id']}:41"
    assert edited.thread_id == str(TOPIC)
    assert edited.reply_target.reply_to_message_id == "41"


async def test_edits_are_reported_as_their_messages_would_be_delivered(
    tg: FakeTelegram, store: Store
) -> None:
    """An edit of the bot's own message gives nothing; a photo whose caption was removed is
    still a message (its attachment); another bot's edit is reported flagged."""
    host = RecordingHost()
    async with running(channel_for(tg, store), host):
        await tg.push(edit_of(bot_message(DM, 90, "my own words"), "my own words, edited"))
        photo = [{"file_id": "P1", "file_unique_id": "u", "width": 1, "height": 1}]
        captioned = said(DM, "", 8, caption="a photo", photo=photo)
        uncaptioned = {k: v for k, v in captioned.items() if k != "caption"} | {"edit_date": 2}
        await tg.push({"edited_message": uncaptioned})
        other_bot = message(DM, user(555, "Bender", is_bot=True), "beep", message_id=9)
        await tg.push(edit_of(other_bot, "boop"))
        await routed_up_to(tg, host, DM, 1)
    reported = [(e.message_id, e.text, e.sender.is_bot, len(e.attachments)) for e in host.edits]
    assert reported == [(f"{REQUESTER}:8", "", False, 1), (f"{REQUESTER}:9", "boop", True, 0)]


async def test_an_edited_reply_to_an_approval_card_is_not_a_question(
    tg: FakeTelegram, store: Store
) -> None:
    """The reply was consumed as an answer; its edit neither reaches the agent nor decides
    again."""
    host = RecordingHost()
    channel = channel_for(tg, store)
    async with running(channel, host):
        asked = "@hatchbot clean up"
        await tg.push({"message": said(GROUP, asked, 30, entities=mention(asked))})
        [env] = await host.wait_envelopes(1)
        sent = await channel.cards.post_approval_card(env.reply_target, CARD)
        card = tg.bot_message_now(int(GROUP["id"]), int(sent.message_id.split(":")[1]))
        reply = message(
            GROUP, user(APPROVER, "Boss"), "use v3", message_id=31, thread_id=TOPIC, reply_to=card
        )
        await tg.push({"message": reply})
        await host.wait_clicks(1)
        await tg.push(edit_of(reply, "use v4"))
        await routed_up_to(tg, host, GROUP, 2)
    assert host.edits == []
    assert [c.replacement_text for c in host.clicks] == ["use v3"]


WEBHOOK_SECRET = "webhook-secret_456"


async def test_an_edit_through_the_webhook_is_reported(tg: FakeTelegram, store: Store) -> None:
    host = RecordingHost()
    channel = channel_for(
        tg,
        store,
        secret=WEBHOOK_SECRET,
        mode="webhook",
        webhook_port=0,
        webhook_url="https://bot.example.test/telegram",
    )
    original = said(DM, "helo", 12)
    async with running(channel, host):
        [hook] = tg.calls_of("setWebhook")
        assert "edited_message" in hook.params["allowed_updates"]
        url = f"http://127.0.0.1:{channel.webhook_port}/telegram"
        headers = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
        async with aiohttp.ClientSession() as http:
            for number, update in enumerate(({"message": original}, edit_of(original, "hello"))):
                body = {"update_id": number + 1, **update}
                async with http.post(url, json=body, headers=headers) as response:
                    assert response.status == 200
    assert [e.text for e in host.envelopes] == ["helo"]
    assert [(e.message_id, e.text) for e in host.edits] == [(f"{REQUESTER}:12", "hello")]


# -- the offset ---------------------------------------------------------------------------------


class CrashOnEdit(RecordingHost):
    """A host whose handling of an edit to ``text`` dies (the daemon killed meanwhile)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.crash_text = text

    async def edited(self, envelope: IngressEnvelope) -> None:
        if envelope.text == self.crash_text:
            raise HostCrash(envelope.message_id)
        await super().edited(envelope)


async def test_a_crash_while_handling_an_edit_redelivers_it(tmp_path: Path) -> None:
    # The fake keeps confirmed updates: only the persisted offset decides what comes again.
    async with FakeTelegram(TOKEN, forget_confirmed=False) as tg:
        original = said(DM, "helo", 1)
        async with await Store.open(tmp_path / "state.db") as store:
            crashing = CrashOnEdit("hello")
            task = asyncio.create_task(channel_for(tg, store).run(crashing))
            await tg.push({"message": original})
            await tg.push(edit_of(original, "hello"))
            with pytest.raises(HostCrash):
                async with asyncio.timeout(10):
                    await task
            assert [e.text for e in crashing.envelopes] == ["helo"]
        async with await Store.open(tmp_path / "state.db") as store:
            second = RecordingHost()
            async with running(channel_for(tg, store), second):
                [edited] = await second.wait_edits(1)
                await routed_up_to(tg, second, DM, 1)
    assert (edited.message_id, edited.text) == (f"{REQUESTER}:1", "hello")
    assert [e.text for e in second.envelopes] == ["later"]


async def test_an_edit_made_while_down_is_reported_after_the_restart(tmp_path: Path) -> None:
    """Telegram keeps the edit for the bot (it asked for ``edited_message``) and the stored
    offset resumes right after the last update handled: the edit comes, nothing repeats."""
    async with FakeTelegram(TOKEN, forget_confirmed=False) as tg:
        first_message = said(DM, "helo", 1)
        async with await Store.open(tmp_path / "state.db") as store:
            first = RecordingHost()
            async with running(channel_for(tg, store), first):
                await tg.push({"message": first_message})
                await first.wait_envelopes(1)
        await tg.push(edit_of(first_message, "hello"))
        await tg.push({"message": said(DM, "m2", 2)})
        async with await Store.open(tmp_path / "state.db") as store:
            second = RecordingHost()
            async with running(channel_for(tg, store), second):
                [edited] = await second.wait_edits(1)
                await routed_up_to(tg, second, DM, 2)
    assert [e.text for e in first.envelopes] == ["helo"]
    assert (edited.message_id, edited.text) == (f"{REQUESTER}:1", "hello")
    assert [e.text for e in second.envelopes] == ["m2", "later"]
    assert first.edits == []
