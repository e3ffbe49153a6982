"""Group context on Discord, end to end (the daemon's App over discord.py and the loopback
gateway and REST fake): channel messages not addressed to the bot are kept, never answered;
an edit (MESSAGE_UPDATE) rewrites a line, a deletion (MESSAGE_DELETE) drops it; a mention
brings the rest to the model as other participants' words in an untrusted-data block, a
stranger's marked; after ``hatchway forget --user`` (the command, run as
its own process) that person's lines are gone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.channel import HealthState
from bot.config import Settings, parse_settings
from channels.discord.adapter import DiscordChannel
from tests.context.forgetting import forget_user
from tests.context.waiting import context_of, has_kept, until
from tests.fakes.channel_health import wait_for_health
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import ALICE, BOB, BOT, BOT_ID, CAROL, GENERAL, said
from tests.fakes.scripted_provider import ScriptedProvider, reply

pytestmark = pytest.mark.usefixtures("discord_env")


def settings(fake: FakeDiscord, tmp_path: Path, **context: Any) -> Settings:
    main: dict[str, Any] = {
        "api_base_url": fake.base_url,
        "gateway_url": fake.gateway_url,
        "guild_ready_timeout_s": 0.05,
        "allowed_users": [ALICE["id"], BOB["id"]],
        "approvers": [BOB["id"]],
        "context": context,
    }
    return parse_settings(
        {"state_dir": str(tmp_path), "channels": {"discord": {"main": main}}},
        environ={},
        require_provider=False,
    )


async def started(app: App) -> DiscordChannel:
    channel = app.channels["discord.main"]
    assert isinstance(channel, DiscordChannel)
    await wait_for_health(channel, HealthState.CONNECTED)
    return channel


async def test_channel_discussion_then_a_mention(fake: FakeDiscord, tmp_path: Path) -> None:
    provider = ScriptedProvider([reply("Wait for the fix."), reply("Still waiting.")])
    app = App(settings(fake, tmp_path, group_messages=10), provider=provider, tools=[])
    async with app:
        await started(app)
        blocked = said(fake, "the release is blocked", author=CAROL)
        back = said(fake, "we should roll back", author=BOB)
        lunch = said(fake, "lunch?", author=BOB)
        for message in (blocked, back, lunch):
            await fake.dispatch("MESSAGE_CREATE", message)
        await until(has_kept(app.store, "the release is blocked", "we should roll back", "lunch?"))
        await fake.edit_message(back["id"], "we should wait for the fix")
        await fake.delete_message(lunch["id"])
        await until(has_kept(app.store, "the release is blocked", "we should wait for the fix"))
        assert provider.requests == []  # kept for context only, never answered

        mention = said(fake, f"<@{BOT_ID}> what do you think?", mentions=[BOT])
        await fake.dispatch("MESSAGE_CREATE", mention)
        await fake.wait_until(lambda: "Wait for the fix." in fake.posted(GENERAL))

        [request] = provider.requests
        content = request.messages[-1].content
        block = context_of(content)
        assert content.endswith("what do you think?")
        assert f"carol ({CAROL['id']}, not an allowed user): the release is blocked" in block
        assert f"bob ({BOB['id']}): we should wait for the fix" in block
        assert "lunch" not in block and "roll back" not in block

        # the operator's command, a process of its own, on the running daemon's database
        printed = await forget_user(tmp_path, CAROL["id"])
        assert f"  {'context_lines':<20} 1" in printed.splitlines(), printed
        again = said(fake, f"<@{BOT_ID}> and now?", mentions=[BOT])
        await fake.dispatch("MESSAGE_CREATE", again)
        await fake.wait_until(lambda: "Still waiting." in fake.posted(GENERAL))
    second = provider.requests[1].messages[-1].content
    assert "carol" not in second and "release is blocked" not in second
    assert "we should wait for the fix" in context_of(second)


THREAD = "800000000000000020"


@pytest.fixture
async def threaded() -> AsyncIterator[FakeDiscord]:
    """Discord with one guild: #general and a thread in it that Alice opened."""
    async with FakeDiscord(bot_id=BOT_ID) as server:
        server.add_guild(channels={GENERAL: "general"}, threads={THREAD: (GENERAL, ALICE["id"])})
        yield server
    assert server.rule_refusals == [], "the adapter sent what Discord refuses"


async def test_a_mention_mid_thread_pulls_the_thread(threaded: FakeDiscord, tmp_path: Path) -> None:
    fake = threaded
    provider = ScriptedProvider(
        [reply("Friday is risky."), reply("Without it."), reply("Reply chain read.")]
    )
    options = {"thread_messages": 20}
    app = App(settings(fake, tmp_path, **options), provider=provider, tools=[])
    async with app:
        await started(app)
        thread: list[dict[str, Any]] = []
        for author, text in ((CAROL, "ship on friday?"), (BOB, "only if the migration is done")):
            thread.append(said(fake, text, channel_id=THREAD, author=author))
            await fake.dispatch("MESSAGE_CREATE", thread[-1])
        mention = said(fake, f"<@{BOT_ID}> what do you think?", channel_id=THREAD, mentions=[BOT])
        await fake.dispatch("MESSAGE_CREATE", mention)
        await fake.wait_until(lambda: "Friday is risky." in fake.posted(THREAD))
        [request] = provider.requests
        block = context_of(request.messages[-1].content)
        assert f"carol ({CAROL['id']}, not an allowed user): ship on friday?" in block
        assert f"bob ({BOB['id']}): only if the migration is done" in block
        assert block.index("friday") < block.index("migration")

        # a message deleted from the thread leaves the cached thread; nothing is read again
        reads = len(fake.calls_to("GET", rf"/channels/{THREAD}/messages"))
        await fake.delete_message(thread[0]["id"])
        again = said(fake, f"<@{BOT_ID}> still?", channel_id=THREAD, mentions=[BOT])
        await fake.dispatch("MESSAGE_CREATE", again)
        await fake.wait_until(lambda: "Without it." in fake.posted(THREAD))
        later = context_of(provider.requests[1].messages[-1].content)
        assert "friday" not in later and "only if the migration is done" in later
        assert len(fake.calls_to("GET", rf"/channels/{THREAD}/messages")) == reads

        # outside a thread, a reply chain: the messages replied to, one after another
        first = said(fake, "the plan: ship the migration first", author=BOB)
        await fake.dispatch("MESSAGE_CREATE", first)
        second = said(fake, "and then the API", author=CAROL, referenced=first)
        await fake.dispatch("MESSAGE_CREATE", second)
        asked = said(fake, f"<@{BOT_ID}> is that right?", mentions=[BOT], referenced=second)
        await fake.dispatch("MESSAGE_CREATE", asked)
        await fake.wait_until(lambda: "Reply chain read." in fake.posted(GENERAL))
    chain = context_of(provider.requests[2].messages[-1].content)
    assert "ship the migration first" in chain and "and then the API" in chain
    assert chain.index("migration first") < chain.index("then the API")
    assert "friday" not in chain
