"""Group context on Telegram, end to end (the daemon's App over python-telegram-bot and the
loopback Bot API): messages of a group not addressed to the bot are kept, never answered, an
edit rewrites its line; a mention brings them to the model as other participants' words in
an untrusted-data block with names and times, a stranger's marked; after ``hatchway forget --user``
(the command, run as its own process) that person's lines are gone from the next request."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app import App
from bot.config import Settings
from tests.context.forgetting import forget_user
from tests.context.waiting import context_of, has_kept, kept_texts, until
from tests.fakes.scripted_provider import ScriptedProvider, reply
from tests.fakes.telegram_server import (
    FakeTelegram,
    edit_of,
    forum_chat,
    mention,
    message,
    user,
)
from tests.fakes.telegram_setup import REQUESTER, STRANGER, settings_for, started

pytestmark = pytest.mark.usefixtures("telegram_env")


def with_context(tg: FakeTelegram, tmp_path: Path) -> Settings:
    return settings_for(tg, tmp_path, context={"group_messages": 10})


async def test_group_discussion_then_a_mention(tg: FakeTelegram, tmp_path: Path) -> None:
    provider = ScriptedProvider([reply("Wait for the fix."), reply("Still waiting.")])
    app = App(with_context(tg, tmp_path), provider=provider, tools=[])
    group = forum_chat()
    ann, eve = user(REQUESTER, "Ann"), user(STRANGER, "Eve")
    async with app:
        await started(app)
        await tg.push({"message": message(group, eve, "the release is blocked", message_id=50)})
        said = message(group, ann, "we should roll back", message_id=51)
        await tg.push({"message": said})
        await until(has_kept(app.store, "the release is blocked", "we should roll back"))
        await tg.push(edit_of(said, "we should wait for the fix"))
        await until(has_kept(app.store, "the release is blocked", "we should wait for the fix"))
        assert provider.requests == []  # kept for context only, never answered

        text = "@hatchbot what do you think?"
        asked = message(group, ann, text, message_id=52, entities=mention(text))
        await tg.push({"message": asked})
        await tg.wait_for("sendMessage", lambda c: "fix." in str(c.params["text"]))

        [request] = provider.requests
        content = request.messages[-1].content
        block = context_of(content)
        assert block, content
        assert content.endswith("what do you think?")
        assert "not addressed to you" in block
        assert "Eve (3003, not an allowed user): the release is blocked" in block
        assert "Ann (1001): we should wait for the fix" in block
        assert " UTC] " in block
        assert block.index("release is blocked") < block.index("wait for the fix")
        # history keeps the question as asked, without the block
        history = await app.store.history.load(f"telegram.main:{group['id']}")
        assert [m.content for m in history if m.role == "user"] == ["what do you think?"]

        # the operator's command, a process of its own, on the running daemon's database
        printed = await forget_user(tmp_path, str(STRANGER))
        assert f"  {'context_lines':<20} 1" in printed.splitlines(), printed
        again = "@hatchbot and now?"
        await tg.push(
            {"message": message(group, ann, again, message_id=53, entities=mention(again))}
        )
        await tg.wait_for("sendMessage", lambda c: "Still" in str(c.params["text"]))
    second = provider.requests[1].messages[-1].content
    assert "Eve" not in second and "release is blocked" not in second
    assert "Ann (1001): we should wait for the fix" in context_of(second)


async def test_a_reply_mention_brings_the_message_it_replies_to(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    provider = ScriptedProvider([reply("Step 3 needs the key."), reply("Step 4 is fine.")])
    app = App(settings_for(tg, tmp_path, context={"thread_messages": 5}), provider=provider)
    group = forum_chat()
    ann, eve = user(REQUESTER, "Ann"), user(STRANGER, "Eve")
    async with app:
        await started(app)
        failed = message(group, eve, "the deploy failed at step 3", message_id=60, thread_id=7)
        await tg.push({"message": failed})
        text = "@hatchbot why?"
        asked = message(
            group, ann, text, message_id=61, thread_id=7, reply_to=failed, entities=mention(text)
        )
        await tg.push({"message": asked})
        await tg.wait_for("sendMessage", lambda c: "key." in str(c.params["text"]))
        # in the same topic, a reply to another message brings that one
        later = message(group, eve, "step 4 passed", message_id=62, thread_id=7)
        await tg.push({"message": later})
        text = "@hatchbot and this?"
        again = message(
            group, ann, text, message_id=63, thread_id=7, reply_to=later, entities=mention(text)
        )
        await tg.push({"message": again})
        await tg.wait_for("sendMessage", lambda c: "fine." in str(c.params["text"]))
    block = context_of(provider.requests[0].messages[-1].content)
    assert "Eve (3003, not an allowed user): the deploy failed at step 3" in block
    assert block.count(" UTC] ") == 1  # the one message replied to: group context is off
    second = context_of(provider.requests[1].messages[-1].content)
    assert "step 4 passed" in second and "step 3" not in second


async def test_the_window_outlives_a_restart(tg: FakeTelegram, tmp_path: Path) -> None:
    group = forum_chat()
    eve = user(STRANGER, "Eve")
    settings = with_context(tg, tmp_path)
    async with App(settings, provider=ScriptedProvider([])) as app:
        await started(app)
        await tg.push({"message": message(group, eve, "the release is blocked", message_id=70)})
        await until(has_kept(app.store, "the release is blocked"))
    provider = ScriptedProvider([reply("Noted.")])
    async with App(settings, provider=provider) as app:
        await started(app)
        text = "@hatchbot status?"
        asked = message(group, user(REQUESTER, "Ann"), text, message_id=71, entities=mention(text))
        await tg.push({"message": asked})
        await tg.wait_for("sendMessage", lambda c: "Noted." in str(c.params["text"]))
    assert "the release is blocked" in context_of(provider.requests[0].messages[-1].content)


async def test_an_edit_that_addresses_the_bot_is_answered(tg: FakeTelegram, tmp_path: Path) -> None:
    provider = ScriptedProvider([reply("On it.")])
    group = forum_chat()
    ann = user(REQUESTER, "Ann")
    async with App(with_context(tg, tmp_path), provider=provider) as app:
        await started(app)
        said = message(group, ann, "can someone check the build", message_id=80)
        await tg.push({"message": said})
        await until(has_kept(app.store, "can someone check the build"))
        text = "@hatchbot can someone check the build"
        await tg.push(edit_of(said, text, entities=mention(text)))
        await tg.wait_for("sendMessage", lambda c: "On it." in str(c.params["text"]))
        assert await kept_texts(app.store) == []  # a turn now, no longer context
    assert provider.requests[0].messages[-1].content == "can someone check the build"
