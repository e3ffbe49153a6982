"""Chat commands on Telegram, through python-telegram-bot against the loopback Bot API fake.

The menu: ``setMyCommands`` at start with the four chat commands; a refused or failing call
does not stop the start and is made again at the next one. Reading: ``/stop``, ``/STOP`` and
``/stop@hatchbot`` in a group become ``/stop`` addressed to the bot (in a forum topic, with the
topic); ``/stop@otherbot`` stays as typed and is not addressed; only an entity at the start of
the text is a command. End to end, through the whole daemon: ``/id`` is answered with the
sender's id and the chat's id, and a plain ``/stop`` in a group cancels a running turn while
``/stop@otherbot`` does not.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.app import App
from bot.chat_commands import CHAT_COMMANDS
from bot.providers.base import CompletionRequest, ProviderReply
from bot.store import Store
from tests.fakes.channel_health import serving as running
from tests.fakes.recording_host import RecordingHost
from tests.fakes.scripted_provider import ScriptedProvider
from tests.fakes.telegram_server import (
    JSON,
    ApiCall,
    FakeTelegram,
    command,
    forum_chat,
    mention,
    message,
    private_chat,
    user,
)
from tests.fakes.telegram_setup import REQUESTER, STRANGER, channel_for, settings_for, started

GROUP = forum_chat()
TOPIC = 55
EXPECTED_MENU = [{"command": s.name, "description": s.summary} for s in CHAT_COMMANDS]

# -- the menu -----------------------------------------------------------------------------------


async def test_commands_are_offered_at_start(tg: FakeTelegram, store: Store) -> None:
    async with running(channel_for(tg, store), RecordingHost()):
        [call] = await tg.wait_for("setMyCommands")
    assert call.params["commands"] == EXPECTED_MENU
    assert {c["command"] for c in call.params["commands"]} == {
        "new",
        "stop",
        "forget",
        "usage",
        "status",
        "grants",
        "why",
        "help",
        "id",
    }
    assert call.params["scope"] == {"type": "default"}
    assert tg.menus == {"default": EXPECTED_MENU}


@pytest.mark.parametrize(
    ("status", "description", "parameters", "times"),
    [
        (400, "Bad Request: BOT_COMMANDS_TOO_MUCH", None, 1),
        (500, "Internal Server Error", None, 2),
        (429, "Too Many Requests: retry after 30", {"retry_after": 30}, 1),
    ],
    ids=["refused", "server-error-twice", "flood-wait-too-long"],
)
async def test_a_failed_menu_does_not_stop_the_start(
    tg: FakeTelegram,
    store: Store,
    status: int,
    description: str,
    parameters: JSON | None,
    times: int,
) -> None:
    tg.fail_next("setMyCommands", status, description, parameters=parameters, times=times)
    host = RecordingHost()
    with capture_logs() as logs:
        async with running(channel_for(tg, store), host):
            chat = private_chat(REQUESTER)
            await tg.push({"message": message(chat, user(REQUESTER), "/help", message_id=1)})
            [env] = await host.wait_envelopes(1)
    assert env.text == "/help"
    assert tg.menus == {}
    [warning] = [e for e in logs if e["event"] == "telegram_commands_not_registered"]
    assert warning["log_level"] == "warning"
    assert warning["channel"] == "telegram.main"

    # the next start offers them again
    async with running(channel_for(tg, store), RecordingHost()):
        await tg.wait_for("setMyCommands", count=times + 1)
    assert tg.menus == {"default": EXPECTED_MENU}


# -- reading commands ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "entities", "expected_text", "addressed"),
    [
        ("/stop@hatchbot", command("/stop@hatchbot"), "/stop", True),
        ("/stop", command("/stop"), "/stop", True),
        ("/STOP", command("/STOP"), "/stop", True),
        ("/Stop@HatchBot now please", command("/Stop@HatchBot"), "/stop now please", True),
        ("/id", command("/id"), "/id", True),
        ("/help@hatchbot", command("/help@hatchbot"), "/help", True),
        ("/new", command("/new"), "/new", True),
        ("/stop@otherbot", command("/stop@otherbot"), "/stop@otherbot", False),
        ("/stop@hatchbot_two", command("/stop@hatchbot_two"), "/stop@hatchbot_two", False),
        # another bot's plain command in a group with several bots
        ("/deploy now", command("/deploy"), "/deploy now", False),
        ("/Deploy@hatchbot now", command("/Deploy@hatchbot"), "/deploy now", True),
        # not at the start of the text: not a command
        (
            "please /stop",
            [{"type": "bot_command", "offset": 7, "length": 5}],
            "please /stop",
            False,
        ),
        # "/stop" shown as code: Telegram marks no command, so there is none
        ("/stop", [{"type": "code", "offset": 0, "length": 5}], "/stop", False),
    ],
)
async def test_group_commands(
    tg: FakeTelegram,
    store: Store,
    text: str,
    entities: list[JSON],
    expected_text: str,
    addressed: bool,
) -> None:
    host = RecordingHost()
    async with running(channel_for(tg, store), host):
        payload = message(
            GROUP, user(REQUESTER), text, message_id=41, thread_id=TOPIC, entities=entities
        )
        await tg.push({"message": payload})
        [env] = await host.wait_envelopes(1)
    assert (env.text, env.addressed_to_bot) == (expected_text, addressed)
    assert env.is_group and not env.is_direct
    assert env.conversation_id == str(GROUP["id"])
    assert env.thread_id == str(TOPIC)  # the command acts on the topic's session
    assert env.command_scope == "session"


async def test_a_reply_to_the_bot_with_another_bots_command_is_not_ours(
    tg: FakeTelegram, store: Store
) -> None:
    host = RecordingHost()
    ours = message(GROUP, user(7000001, "Hatch", is_bot=True), "an answer", message_id=40)
    async with running(channel_for(tg, store), host):
        payload = message(
            GROUP,
            user(REQUESTER),
            "/stop@otherbot",
            message_id=42,
            reply_to=ours,
            entities=command("/stop@otherbot"),
        )
        await tg.push({"message": payload})
        [env] = await host.wait_envelopes(1)
    assert (env.text, env.addressed_to_bot) == ("/stop@otherbot", False)


async def test_dm_commands(tg: FakeTelegram, store: Store) -> None:
    host = RecordingHost()
    chat = private_chat(REQUESTER)
    async with running(channel_for(tg, store), host):
        for n, text in enumerate(["/ID", "/new@hatchbot", "/stop@otherbot"]):
            payload = message(chat, user(REQUESTER), text, message_id=n, entities=command(text))
            await tg.push({"message": payload})
        envelopes = await host.wait_envelopes(3)
    assert [e.text for e in envelopes] == ["/id", "/new", "/stop@otherbot"]
    assert all(e.is_direct and e.addressed_to_bot and e.thread_id is None for e in envelopes)


# -- end to end ---------------------------------------------------------------------------------


def text_of(call: ApiCall) -> str:
    return str(call.params.get("text", ""))


@pytest.mark.usefixtures("telegram_env")
@pytest.mark.parametrize(
    ("chat", "text", "thread_id"),
    [(GROUP, "/id", TOPIC), (GROUP, "/id@hatchbot", None), (private_chat(STRANGER), "/ID", None)],
    ids=["group-topic-plain", "group-named", "dm"],
)
async def test_id_is_answered_with_the_ids(
    tg: FakeTelegram, tmp_path: Path, chat: JSON, text: str, thread_id: int | None
) -> None:
    """A stranger (not in allowed_users) learns the ids an admin needs; no model turn."""
    provider = ScriptedProvider([])
    app = App(settings_for(tg, tmp_path), provider=provider, tools=[])
    async with app:
        await started(app)
        payload = message(
            chat, user(STRANGER), text, message_id=60, thread_id=thread_id, entities=command(text)
        )
        await tg.push({"message": payload})
        [answer] = await tg.wait_for("sendMessage", lambda c: str(STRANGER) in text_of(c))
    assert answer.params["chat_id"] == chat["id"]
    assert str(chat["id"]) in text_of(answer)
    assert ("thread" in text_of(answer)) is (thread_id is not None)
    if thread_id is not None:
        assert answer.params["message_thread_id"] == thread_id
        assert str(thread_id) in text_of(answer)
    assert provider.requests == []


@pytest.mark.usefixtures("telegram_env")
async def test_plain_stop_in_a_group_cancels_the_running_turn(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    thinking = asyncio.Event()

    async def slow(_request: CompletionRequest) -> ProviderReply:
        thinking.set()
        await asyncio.Event().wait()  # until /stop cancels the call
        raise AssertionError("never answered")

    provider = ScriptedProvider([slow])
    app = App(settings_for(tg, tmp_path), provider=provider, tools=[])
    asker = user(REQUESTER)

    async def say(text: str, message_id: int, entities: list[Any]) -> None:
        payload = message(
            GROUP, asker, text, message_id=message_id, thread_id=TOPIC, entities=entities
        )
        await tg.push({"message": payload})

    async with app:
        await started(app)
        await say("@hatchbot think hard", 70, mention("@hatchbot think hard"))
        async with asyncio.timeout(10):
            await thinking.wait()

        # another bot's /stop leaves the turn running; the /id after it shows it was read
        await say("/stop@otherbot", 71, command("/stop@otherbot"))
        await say("/id", 72, command("/id"))
        await tg.wait_for("sendMessage", lambda c: "Your user id" in text_of(c))
        assert not any("Stopped" in text_of(c) for c in tg.calls)

        await say("/stop", 73, command("/stop"))
        [stopped] = await tg.wait_for("sendMessage", lambda c: "Stopped" in text_of(c))
    assert stopped.params["chat_id"] == GROUP["id"]
    assert stopped.params["message_thread_id"] == TOPIC
    assert not any("Nothing is running" in text_of(c) for c in tg.calls)
    assert len(provider.requests) == 1
