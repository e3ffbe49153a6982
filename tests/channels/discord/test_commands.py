"""Chat commands on Discord with the real discord.py against the loopback fake: the
application commands synced at start, an interaction deferred at once and delivered as
``/<name>``, its answer through the interaction (or the channel when it cannot be), and the
text forms (``/new`` typed in a DM, ``@bot stop`` in a server)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from structlog.testing import capture_logs

from bot.channel import HealthState
from bot.chat_commands import CHAT_COMMANDS
from bot.envelope import (
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    target_from_json,
    target_to_json,
)
from bot.store import Store
from channels.discord.inbound import NOT_SERVED_HERE
from channels.discord.normalise import CommandFacts, NormaliseOptions, envelope_from_command
from tests.fakes.discord_commands import AnsweringHost, invoke
from tests.fakes.discord_interactions import EPHEMERAL
from tests.fakes.discord_payloads import APPLICATION_ID
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
DEFERRED = 5


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    """One guild: #general with a thread alice started."""
    async with FakeDiscord(bot_id=BOT_ID) as server:
        server.add_guild(channels={GENERAL: "general"}, threads={THREAD: (GENERAL, ALICE["id"])})
        yield server


def answered_with_name(envelope: IngressEnvelope) -> str | None:
    return f"answer to {envelope.text}" if envelope.text.startswith("/") else None


async def test_start_registers_the_chat_commands_globally(fake: FakeDiscord, store: Store) -> None:
    async with running(make_channel(fake, store), RecordingHost()):
        [sync] = fake.calls_to("PUT", r"/applications/.*")
    assert sync.path == f"/applications/{APPLICATION_ID}/commands"
    registered = fake.commands[None]
    assert [(c["name"], c["description"]) for c in registered] == [
        (spec.name, spec.summary) for spec in CHAT_COMMANDS
    ]
    assert all(c["type"] == 1 for c in registered)
    # a command that reads text after its name takes it as one required string option
    options = {c["name"]: c["options"] for c in registered}
    for spec in CHAT_COMMANDS:
        if spec.takes:
            [text] = options[spec.name]
            assert (text["name"], text["type"], text["required"]) == ("text", 3, True)
            assert text["description"] == spec.takes
        else:
            assert options[spec.name] == []
    assert all(c["contexts"] == [0, 1] for c in registered)  # servers and the bot's DMs
    assert list(fake.commands) == [None]  # no per-guild copies


async def test_a_failed_sync_is_logged_and_the_channel_still_serves(
    fake: FakeDiscord, store: Store
) -> None:
    fake.failing[r"/applications/\d+/commands"] = 503
    host = RecordingHost()
    channel = make_channel(fake, store)
    with capture_logs() as logs:
        async with running(channel, host):
            assert channel.health.state is HealthState.CONNECTED
            await fake.dispatch("MESSAGE_CREATE", said(fake, "hello", channel_id=DM))
            [envelope] = await host.wait_envelopes(1)
    assert envelope.text == "hello"
    [failed] = [e for e in logs if e["event"] == "discord_commands_sync_failed"]
    assert failed["status"] == 503 and failed["log_level"] == "warning"
    assert fake.commands == {}


async def test_sync_commands_false_leaves_the_registration_alone(
    fake: FakeDiscord, store: Store
) -> None:
    async with running(make_channel(fake, store, sync_commands=False), RecordingHost()):
        await fake.dispatch("MESSAGE_CREATE", said(fake, "hi", channel_id=DM))
    assert fake.calls_to("PUT", r"/applications/.*") == []


@pytest.mark.parametrize(
    ("name", "where", "ephemeral"),
    [
        # in a server only the asker sees the answer (it may be a rate limit's refusal)
        ("stop", GENERAL, True),
        ("new", THREAD, True),
        ("id", GENERAL, True),
        ("help", THREAD, True),
        ("forget", GENERAL, True),
        ("id", DM, False),  # a DM is private already
        ("stop", DM, False),
    ],
)
async def test_a_command_is_deferred_and_delivered_as_its_text(
    fake: FakeDiscord, store: Store, name: str, where: str, ephemeral: bool
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store, thread_per_request=True)
    async with running(channel, host):
        interaction_id, callback = await invoke(fake, name, ALICE, where)
        [envelope] = await host.wait_envelopes(1)
        await fake.wait_until(lambda: interaction_id in fake.deleted_responses)
    flags = {"data": {"flags": EPHEMERAL}} if ephemeral else {}
    assert callback.body == {"type": DEFERRED, **flags}
    assert envelope.text == f"/{name}" and envelope.addressed_to_bot
    assert envelope.message_id == interaction_id
    assert envelope.sender.id == ALICE["id"] and envelope.sender.display_name == "alice"
    assert envelope.command_scope == "session"
    assert envelope.is_direct is (where == DM) and envelope.is_group is (where != DM)
    thread = THREAD if where == THREAD else None  # never a thread of its own
    conversation = GENERAL if where == THREAD else where
    assert (envelope.conversation_id, envelope.thread_id) == (conversation, thread)
    assert envelope.reply_target == DeliveryTarget(
        channel=channel.ref,
        conversation_id=conversation,
        thread_id=thread,
        reply_to_message_id=interaction_id,
        private_to=ALICE["id"] if ephemeral else None,  # said by the target itself
    )
    # Nothing answered it, so its "thinking…" was removed; nothing went to the channel.
    assert fake.follow_ups == {} and fake.calls_to("POST", r"/channels/\d+/messages") == []


async def test_a_command_in_a_thread_opened_after_start_acts_on_that_thread(
    fake: FakeDiscord, store: Store
) -> None:
    """The thread is not in discord.py's cache: the interaction's channel object says which
    thread it is and its parent."""
    late = "800000000000000012"
    host = RecordingHost()
    async with running(make_channel(fake, store), host):
        fake.guilds[0].threads[late] = (GENERAL, ALICE["id"])  # after GUILD_CREATE
        await invoke(fake, "stop", ALICE, late)
        [envelope] = await host.wait_envelopes(1)
    assert (envelope.conversation_id, envelope.thread_id) == (GENERAL, late)
    assert envelope.reply_target.thread_id == late


async def test_the_answer_goes_through_the_interaction(fake: FakeDiscord, store: Store) -> None:
    host = AnsweringHost(answered_with_name)
    channel = make_channel(fake, store)
    host.channel = channel
    async with running(channel, host):
        private, _ = await invoke(fake, "id", ALICE, GENERAL)
        in_thread, _ = await invoke(fake, "new", ALICE, THREAD)
        in_dm, _ = await invoke(fake, "new", ALICE, DM)
        await host.wait_envelopes(3)
    [told] = fake.follow_ups[private]
    assert told["content"] == "answer to /id" and told["flags"] == EPHEMERAL
    assert fake.ephemerals[private] == [told]
    [told_in_thread] = fake.follow_ups[in_thread]  # every answer in a server is private
    assert told_in_thread["content"] == "answer to /new" and told_in_thread["flags"] == EPHEMERAL
    assert told_in_thread["channel_id"] == THREAD and told_in_thread["id"] not in fake.messages
    [shown] = fake.follow_ups[in_dm]
    assert shown["content"] == "answer to /new" and shown["channel_id"] == DM
    assert fake.messages[shown["id"]] is shown  # a message of the DM
    assert fake.deleted_responses == set()
    assert fake.calls_to("POST", r"/channels/\d+/messages") == []


async def test_a_long_answer_and_its_edits_use_the_interaction(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        interaction_id, _ = await invoke(fake, "help", ALICE, DM)
        [envelope] = await host.wait_envelopes(1)
        # a command that became a turn: its answers arrive after the gateway let it go
        sent = await channel.send(envelope.reply_target, "\n\n".join(["x" * 1500] * 3))
        await channel.edit(sent[0], "⏳ edited")
    assert len(sent) == 3
    assert [m["id"] for m in fake.follow_ups[interaction_id]] == [s.message_id for s in sent]
    [edit] = fake.calls_to("PATCH", rf"/webhooks/\d+/itoken{interaction_id}/messages/\d+")
    assert edit.path.endswith(f"/messages/{sent[0].message_id}")
    assert fake.follow_ups[interaction_id][0]["content"] == "⏳ edited"
    assert fake.calls_to("POST", r"/channels/\d+/messages") == []


async def test_an_answer_the_interaction_cannot_take_in_a_dm_goes_to_the_dm(
    fake: FakeDiscord, store: Store
) -> None:
    fake.failing[r"/webhooks/.*"] = 404  # the interaction is gone (its token expired)
    host = AnsweringHost(answered_with_name)
    channel = make_channel(fake, store)
    host.channel = channel
    async with running(channel, host):
        interaction_id, callback = await invoke(fake, "stop", ALICE, DM)
        await host.wait_envelopes(1)
        await fake.wait_for_call("POST", f"/channels/{DM}/messages")
    assert callback.body == {"type": DEFERRED}
    assert fake.posted(DM) == ["answer to /stop"]
    assert interaction_id not in fake.follow_ups


@pytest.mark.parametrize("dm_open", [True, False], ids=["dm open", "dm closed (50007)"])
async def test_a_private_answer_the_interaction_cannot_take_is_never_posted_in_the_channel(
    fake: FakeDiscord, store: Store, dm_open: bool
) -> None:
    """A command in a server is answered privately (``/usage``, ``/status``): when the
    interaction no longer takes the answer, it goes to the user's DM with the bot, or, when
    they closed their DMs, nowhere (logged) — never in the channel or thread."""
    fake.failing[r"/webhooks/.*"] = 404  # the interaction is gone (its token expired)
    if not dm_open:
        fake.people.closed_dms.add(ALICE["id"])
    host = AnsweringHost(answered_with_name)
    channel = make_channel(fake, store)
    host.channel = channel
    with capture_logs() as logs:
        async with running(channel, host):
            interaction_id, callback = await invoke(fake, "usage", ALICE, THREAD)
            [envelope] = await host.wait_envelopes(1)
            sent = await channel.send(envelope.reply_target, "\n\n".join(["y" * 1500] * 2))
            if dm_open:
                await channel.edit(sent[0], "⏳ edited")
    assert callback.body == {"type": DEFERRED, "data": {"flags": EPHEMERAL}}
    assert interaction_id not in fake.follow_ups
    assert fake.calls_to("POST", f"/channels/({THREAD}|{GENERAL})/messages") == []
    dropped = [e for e in logs if e["event"] == "discord_private_reply_dropped"]
    if dm_open:
        dm = fake.people.dm_of(ALICE["id"])
        assert dm is not None
        assert fake.posted(dm) == ["answer to /usage", "y" * 1500, "y" * 1500]
        assert [s.target.conversation_id for s in sent] == [dm, dm]
        [edit] = fake.calls_to("PATCH", rf"/channels/{dm}/messages/\d+")
        assert edit.path.endswith(f"/messages/{sent[0].message_id}")
        assert dropped == []
    else:
        assert sent == []
        assert len(dropped) == 3 and {e["interaction_id"] for e in dropped} == {interaction_id}
        assert all(e["code"] == 50007 and e["log_level"] == "warning" for e in dropped)


async def test_a_command_from_a_server_not_served_is_refused_privately(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store, allowed_guilds=["1"])
    async with running(channel, host):
        _, callback = await invoke(fake, "id", ALICE, GENERAL)
        await fake.dispatch("MESSAGE_CREATE", said(fake, "/new", channel_id=DM))
        [envelope] = await host.wait_envelopes(1)  # a DM is served; the command was not
    assert callback.body is not None and callback.body["type"] == 4
    assert callback.body["data"]["content"] == NOT_SERVED_HERE
    assert callback.body["data"]["flags"] == EPHEMERAL
    assert envelope.text == "/new"


@pytest.mark.parametrize(
    ("where", "content", "mentions", "text", "addressed"),
    [
        (DM, "/new", False, "/new", True),
        (DM, "/STOP", False, "/stop", True),
        (DM, "/stop  now ", False, "/stop now", True),
        (DM, "new", False, "new", True),  # a word, not a command
        (DM, "/deploy now", False, "/deploy now", True),  # not ours: as typed
        (GENERAL, f"<@{BOT_ID}> new", True, "/new", True),
        (GENERAL, f"<@!{BOT_ID}>  Stop", True, "/stop", True),
        (GENERAL, f"<@{BOT_ID}> /help", True, "/help", True),
        (GENERAL, f"<@{BOT_ID}> stop the deploy", True, "stop the deploy", True),
        (GENERAL, f"stop <@{BOT_ID}>", True, "stop", True),
        (GENERAL, f"<@{BOT_ID}> <@{ALICE['id']}> stop", True, "@alice stop", True),
        (GENERAL, "/stop", False, "/stop", False),  # typed in a server: not addressed
        (THREAD, f"<@{BOT_ID}> stop", True, "/stop", True),
    ],
)
async def test_text_forms_of_the_commands(
    fake: FakeDiscord,
    store: Store,
    where: str,
    content: str,
    mentions: bool,
    text: str,
    addressed: bool,
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store, thread_per_request=True)
    people = [BOT, ALICE] if "<@1" in content else [BOT]
    async with running(channel, host):
        message = said(fake, content, channel_id=where, mentions=people if mentions else None)
        await fake.dispatch("MESSAGE_CREATE", message)
        [envelope] = await host.wait_envelopes(1)
    assert (envelope.text, envelope.addressed_to_bot) == (text, addressed)
    if text.startswith("/") and where != DM:  # a command opens no thread of its own
        conversation, thread = (GENERAL, THREAD) if where == THREAD else (GENERAL, None)
        assert (envelope.conversation_id, envelope.thread_id) == (conversation, thread)


@pytest.mark.parametrize("dm_open", [True, False], ids=["dm open", "dm closed (50007)"])
async def test_a_private_answer_sent_again_after_a_restart_is_never_posted_in_the_channel(
    fake: FakeDiscord, store: Store, dm_open: bool
) -> None:
    """A reply recorded for a private command and sent again by start-up recovery: the
    target read back from the outbox ledger says it was private, though the new process
    remembers nothing of the command, so it goes to the user's DM, or nowhere (logged)."""
    host = AnsweringHost(lambda envelope: None)  # the daemon dies before it answers
    channel = make_channel(fake, store)
    host.channel = channel
    async with running(channel, host):
        await invoke(fake, "usage", ALICE, THREAD)
        [envelope] = await host.wait_envelopes(1)
    recorded = target_to_json(envelope.reply_target)  # what the ledger keeps
    if not dm_open:
        fake.people.closed_dms.add(ALICE["id"])
    fake.failing[r"/webhooks/.*"] = 404  # the interaction is gone with the process
    channel = make_channel(fake, store)  # a new process: nothing remembered
    with capture_logs() as logs:
        async with running(channel, RecordingHost()):
            sent = await channel.send(target_from_json(recorded), "your usage")
    assert fake.calls_to("POST", f"/channels/({THREAD}|{GENERAL})/messages") == []
    dropped = [e for e in logs if e["event"] == "discord_private_reply_dropped"]
    by_dm = [e for e in logs if e["event"] == "discord_private_reply_sent_by_dm"]
    if dm_open:
        dm = fake.people.dm_of(ALICE["id"])
        assert dm is not None
        assert fake.posted(dm) == ["your usage"]
        assert [s.target.conversation_id for s in sent] == [dm]
        assert dropped == [] and [e["recovered"] for e in by_dm] == [True]
    else:
        assert sent == [] and by_dm == []
        assert [(e["code"], e["recovered"]) for e in dropped] == [(50007, True)]


async def test_a_command_answer_in_a_dm_is_not_marked_private() -> None:
    """A command used in a DM is answered there as a normal message after a restart too."""
    envelope = envelope_from_command(
        CommandFacts(interaction_id="1", channel_id=DM, user_id=ALICE["id"], text="/usage"),
        NormaliseOptions(channel=ChannelRef(kind="discord", alias="main"), bot_user_id=BOT_ID),
    )
    assert envelope.reply_target.private_to is None
