"""The Telegram channel driven through the real python-telegram-bot against a loopback fake.

Inbound and lifecycle: normalisation of DMs, groups, topics, mentions; the persisted polling
offset across restarts; webhook secret checking; invalid token; 409 Conflict; approval taps.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.channel import (
    ApprovalCard,
    ApprovalChoice,
    ClickVerdict,
    HealthState,
)
from bot.envelope import Attachment, DeliveryTarget
from bot.errors import ChannelAuthError
from bot.store import Store
from tests.fakes.channel_health import serving as running
from tests.fakes.channel_health import wait_for_health
from tests.fakes.recording_host import ApprovalClick, HostCrash, RecordingHost
from tests.fakes.telegram_server import (
    FakeTelegram,
    bot_message,
    callback,
    forum_chat,
    mention,
    message,
    private_chat,
    reaction,
    user,
)
from tests.fakes.telegram_setup import APPROVER, REF, REQUESTER, STRANGER, TOKEN, channel_for

# -- normalisation ------------------------------------------------------------------------------


async def test_dm_becomes_a_complete_envelope(tg: FakeTelegram, store: Store) -> None:
    host = RecordingHost()
    async with running(channel_for(tg, store), host):
        chat = private_chat(REQUESTER)
        await tg.push({"message": message(chat, user(REQUESTER, "Ann"), "hello", message_id=7)})
        [env] = await host.wait_envelopes(1)
    assert env.message_id == f"{REQUESTER}:7"
    assert env.conversation_id == str(REQUESTER)
    assert env.thread_id is None
    assert (env.sender.id, env.sender.display_name, env.sender.is_bot) == ("1001", "Ann", False)
    assert env.text == "hello"
    assert env.is_direct and not env.is_group and env.addressed_to_bot
    assert env.conversation_title == ""  # a private chat has no title
    assert env.reply_target.conversation_id == str(REQUESTER)
    assert env.reply_target.reply_to_message_id is None
    caps = env.capabilities
    assert caps.can_edit and caps.can_react and caps.inline_buttons and caps.typing
    assert caps.max_message_chars == 4096
    assert caps.approval_backchannel and not caps.terminal_prompt


async def test_no_backchannel_without_approvers(tg: FakeTelegram, store: Store) -> None:
    host = RecordingHost()
    async with running(channel_for(tg, store, approvers=[]), host):
        chat = private_chat(REQUESTER)
        await tg.push({"message": message(chat, user(REQUESTER), "hi", message_id=1)})
        [env] = await host.wait_envelopes(1)
    assert not env.capabilities.approval_backchannel


GROUP = forum_chat()
TOPIC = 55


def _bot_reply() -> dict[str, Any]:
    return bot_message(GROUP, 40, "an earlier answer")


@pytest.mark.parametrize(
    ("text", "extra", "addressed", "expected_text"),
    [
        ("just chatting", {}, False, "just chatting"),
        (
            "@hatchbot deploy please",
            {"entities": mention("@hatchbot deploy please")},
            True,
            "deploy please",
        ),
        ("@HatchBot hi", {"entities": mention("@HatchBot hi", "HatchBot")}, True, "hi"),
        ("@otherbot hi", {"entities": mention("@otherbot hi", "otherbot")}, False, "@otherbot hi"),
        ("what about this?", {"reply_to": "bot"}, True, "what about this?"),
        (
            "/deploy@hatchbot now",
            {"entities": [{"type": "bot_command", "offset": 0, "length": 16}]},
            True,
            "/deploy now",
        ),
        (
            "hey Hatch",
            {
                "entities": [
                    {
                        "type": "text_mention",
                        "offset": 4,
                        "length": 5,
                        "user": {"id": 7000001, "is_bot": True, "first_name": "Hatch"},
                    }
                ]
            },
            True,
            "hey Hatch",
        ),
    ],
)
async def test_group_addressing_and_topic(
    tg: FakeTelegram,
    store: Store,
    text: str,
    extra: dict[str, Any],
    addressed: bool,
    expected_text: str,
) -> None:
    host = RecordingHost()
    if extra.get("reply_to") == "bot":
        extra = {"reply_to": _bot_reply()}
    channel = channel_for(tg, store)
    async with running(channel, host):
        payload = message(GROUP, user(REQUESTER), text, message_id=41, thread_id=TOPIC, **extra)
        await tg.push({"message": payload})
        [env] = await host.wait_envelopes(1)
        assert env.addressed_to_bot is addressed
        assert env.is_group and not env.is_direct
        assert env.conversation_title == GROUP["title"]  # from the update, for the console
        assert env.text == expected_text
        assert env.message_id == f"{GROUP['id']}:41"
        assert env.thread_id == str(TOPIC)
        assert env.reply_target.thread_id == str(TOPIC)
        await channel.send(env.reply_target, "on it")
        [sent] = await tg.wait_for("sendMessage")
    assert sent.params["chat_id"] == GROUP["id"]
    assert sent.params["message_thread_id"] == TOPIC
    assert sent.params["reply_parameters"]["message_id"] == 41


async def test_ignored_updates_still_advance(tg: FakeTelegram, store: Store) -> None:
    """Own messages and empty service messages are not delivered, an edit is reported as an
    edit (tests/channels/telegram/test_edits.py); others' bots are delivered flagged; the
    next real message still comes through."""
    host = RecordingHost()
    chat = private_chat(REQUESTER)
    async with running(channel_for(tg, store), host):
        await tg.push({"message": bot_message(chat, 90, "my own words")})
        edited = message(chat, user(REQUESTER), "edited text", message_id=3, edit_date=1)
        await tg.push({"edited_message": edited})
        await tg.push({"message": message(chat, user(REQUESTER), "", message_id=4)})
        other_bot = user(555, "Bender", is_bot=True)
        await tg.push({"message": message(chat, other_bot, "beep", message_id=5)})
        await tg.push({"message": message(chat, user(REQUESTER), "real", message_id=6)})
        envelopes = await host.wait_envelopes(2)
    assert [(e.text, e.sender.is_bot) for e in envelopes] == [("beep", True), ("real", False)]
    assert [e.text for e in host.edits] == ["edited text"]


async def test_media_is_attachment_metadata_and_downloads(tg: FakeTelegram, store: Store) -> None:
    host = RecordingHost()
    tg.file_store.add("DOC1", b"report body")
    document = {
        "file_id": "DOC1",
        "file_unique_id": "u1",
        "file_name": "r.txt",
        "mime_type": "text/plain",
        "file_size": 11,
    }
    channel = channel_for(tg, store)
    async with running(channel, host):
        chat = private_chat(REQUESTER)
        payload = message(
            chat, user(REQUESTER), "", message_id=8, caption="see attached", document=document
        )
        await tg.push({"message": payload})
        [env] = await host.wait_envelopes(1)
        assert env.text == "see attached"
        assert env.attachments == (
            Attachment(kind="file", name="r.txt", mime_type="text/plain", size=11, ref="DOC1"),
        )
        chunks = [
            chunk async for chunk in channel.downloads.download_attachment(env.attachments[0])
        ]
        assert b"".join(chunks) == b"report body"


# -- offset persistence ---------------------------------------------------------------------------


async def test_restart_neither_repeats_nor_drops(tmp_path: Path) -> None:
    # The fake keeps confirmed updates, as if the confirming getUpdates never reached
    # Telegram: only the persisted offset keeps the second run from repeating them.
    chat = private_chat(REQUESTER)
    async with FakeTelegram(TOKEN, forget_confirmed=False) as tg:
        async with await Store.open(tmp_path / "state.db") as store:
            first = RecordingHost()
            async with running(channel_for(tg, store), first):
                for n in (1, 2):
                    await tg.push(
                        {"message": message(chat, user(REQUESTER), f"m{n}", message_id=n)}
                    )
                await first.wait_envelopes(2)
            await tg.push({"message": message(chat, user(REQUESTER), "m3", message_id=3)})
        async with await Store.open(tmp_path / "state.db") as store:
            second = RecordingHost()
            async with running(channel_for(tg, store), second):
                await tg.push({"message": message(chat, user(REQUESTER), "m4", message_id=4)})
                got = await second.wait_envelopes(2)
    assert [e.text for e in first.envelopes] == ["m1", "m2"]
    assert [e.text for e in got] == ["m3", "m4"]


async def test_crash_while_handling_redelivers_that_update(tmp_path: Path) -> None:
    chat = private_chat(REQUESTER)
    async with FakeTelegram(TOKEN, forget_confirmed=False) as tg:
        async with await Store.open(tmp_path / "state.db") as store:
            crashing = RecordingHost(crash_on="m2")
            task = asyncio.create_task(channel_for(tg, store).run(crashing))
            for n in (1, 2, 3):
                await tg.push({"message": message(chat, user(REQUESTER), f"m{n}", message_id=n)})
            with pytest.raises(HostCrash):
                async with asyncio.timeout(10):
                    await task
            assert [e.text for e in crashing.envelopes] == ["m1"]
        async with await Store.open(tmp_path / "state.db") as store:
            second = RecordingHost()
            async with running(channel_for(tg, store), second):
                got = await second.wait_envelopes(2)
    assert [e.text for e in got] == ["m2", "m3"]


# -- lifecycle and health ---------------------------------------------------------------------


async def test_invalid_token_fails_clearly(tg: FakeTelegram, store: Store) -> None:
    wrong = "999999:wrong-token-wrong-token-wrong-token-xx"
    channel = channel_for(tg, store, token=wrong)
    with pytest.raises(ChannelAuthError) as raised:
        await channel.run(RecordingHost())
    assert channel.health.state is HealthState.FAILED
    assert "HATCHWAY_TELEGRAM_TOKEN" in channel.health.detail
    assert wrong not in str(raised.value) and wrong not in channel.health.detail
    assert tg.calls_of("getMe") and not tg.calls_of("getUpdates")


async def test_conflict_is_reported_then_recovers(tg: FakeTelegram, store: Store) -> None:
    tg.fail_next("getUpdates", 409, "Conflict: terminated by other getUpdates request", times=3)
    channel = channel_for(tg, store)
    task = asyncio.create_task(channel.run(RecordingHost()))
    try:
        await wait_for_health(channel, HealthState.RECONNECTING)
        assert "another process is polling" in channel.health.detail
        await wait_for_health(channel, HealthState.CONNECTED)
        assert len(tg.calls_of("getUpdates")) >= 4
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task


async def test_network_errors_reconnect(tg: FakeTelegram, store: Store) -> None:
    tg.fail_next("getUpdates", 502, "Bad Gateway", times=2)
    channel = channel_for(tg, store)
    task = asyncio.create_task(channel.run(RecordingHost()))
    try:
        await wait_for_health(channel, HealthState.RECONNECTING)
        assert "Bad Gateway" in channel.health.detail
        await wait_for_health(channel, HealthState.CONNECTED)
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task


async def test_polling_honours_retry_after(tg: FakeTelegram, store: Store) -> None:
    tg.fail_next(
        "getUpdates", 429, "Too Many Requests: retry after 1", parameters={"retry_after": 1}
    )
    host = RecordingHost()
    async with running(channel_for(tg, store), host):
        chat = private_chat(REQUESTER)
        await tg.push({"message": message(chat, user(REQUESTER), "hi", message_id=1)})
        await host.wait_envelopes(1)
    first, second = tg.calls_of("getUpdates")[:2]
    assert second.at - first.at >= 0.9


# -- webhook ------------------------------------------------------------------------------------

SECRET = "webhook-secret_123"


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 403),
        ({"X-Telegram-Bot-Api-Secret-Token": "guess"}, 403),
        ({"X-Telegram-Bot-Api-Secret-Token": SECRET}, 200),
    ],
)
async def test_webhook_checks_the_secret(
    tg: FakeTelegram, store: Store, headers: dict[str, str], status: int
) -> None:
    host = RecordingHost()
    channel = channel_for(
        tg,
        store,
        secret=SECRET,
        mode="webhook",
        webhook_port=0,
        webhook_url="https://bot.example.test/telegram",
    )
    chat = private_chat(REQUESTER)
    update = {"update_id": 1, "message": message(chat, user(REQUESTER), "hook", message_id=9)}
    async with running(channel, host):
        [hook] = tg.calls_of("setWebhook")
        assert hook.params["secret_token"] == SECRET
        assert hook.params["url"] == "https://bot.example.test/telegram"
        url = f"http://127.0.0.1:{channel.webhook_port}/telegram"
        async with (
            aiohttp.ClientSession() as http,
            http.post(url, json=update, headers=headers) as response,
        ):
            assert response.status == status
        delivered = [e.text for e in host.envelopes]
    assert delivered == (["hook"] if status == 200 else [])
    assert not tg.calls_of("getUpdates")


# -- approval taps --------------------------------------------------------------------------------


def _verdict_by_role(click: ApprovalClick) -> ClickVerdict:
    """What the approvals manager answers: only the configured approver may decide."""
    return (
        ClickVerdict.ACCEPTED if click.user_id == str(APPROVER) else (ClickVerdict.NOT_AUTHORISED)
    )


CARD = ApprovalCard(
    approval_id="apr-1",
    tool="shell",
    lines=("command: ls /tmp",),
    reason="shell is not auto-approved",
    requested_by="Ann",
)


async def test_callback_taps_reach_the_host_and_get_answers(tg: FakeTelegram, store: Store) -> None:
    host = RecordingHost(_verdict_by_role)
    channel = channel_for(tg, store)
    chat = private_chat(REQUESTER)
    async with running(channel, host):
        await tg.push({"message": message(chat, user(REQUESTER), "clean up", message_id=2)})
        [env] = await host.wait_envelopes(1)
        sent = await channel.cards.post_approval_card(env.reply_target, CARD)
        [card_call] = await tg.wait_for("sendMessage")
        rows = card_call.params["reply_markup"]["inline_keyboard"]
        data = {b["text"]: b["callback_data"] for b in rows[0]}
        assert data == {
            "✅ Approve": "ap:apr-1:a",
            "❌ Deny": "ap:apr-1:d",
            "♾️ Always": "ap:apr-1:w",
        }
        card_msg = bot_message(chat, int(sent.message_id.split(":")[1]))
        await tg.push(callback("q1", user(STRANGER, "Eve"), "ap:apr-1:a", card_msg))
        await tg.push(callback("q2", user(APPROVER, "Boss"), "ap:apr-1:w", card_msg))
        clicks = await host.wait_clicks(2)
        answers = await tg.wait_for("answerCallbackQuery", count=2)
    assert [(c.user_id, c.choice, c.approval_id) for c in clicks] == [
        (str(STRANGER), ApprovalChoice.APPROVE, "apr-1"),
        (str(APPROVER), ApprovalChoice.ALWAYS, "apr-1"),
    ]
    refused = next(a for a in answers if a.params["callback_query_id"] == "q1")
    accepted = next(a for a in answers if a.params["callback_query_id"] == "q2")
    assert refused.params["show_alert"] is True
    assert refused.params["text"] == ClickVerdict.NOT_AUTHORISED.message
    assert accepted.params.get("show_alert") in (None, False)


async def test_reaction_from_an_approver_is_a_click(tg: FakeTelegram, store: Store) -> None:
    host = RecordingHost()
    channel = channel_for(tg, store, reactions_for_approval=True)
    async with running(channel, host):
        assert "message_reaction" in tg.calls_of("getUpdates")[-1].params["allowed_updates"]
        target_chat = forum_chat()
        target = DeliveryTarget(channel=REF, conversation_id=str(target_chat["id"]))
        await tg.push({"message": message(target_chat, user(REQUESTER), "x", message_id=1)})
        await host.wait_envelopes(1)
        sent = await channel.cards.post_approval_card(target, CARD)
        await tg.push(
            reaction(target_chat, int(sent.message_id.split(":")[1]), user(APPROVER, "Boss"), "👍")
        )
        [click] = await host.wait_clicks(1)
    assert (click.approval_id, click.choice, click.user_id) == (
        "apr-1",
        ApprovalChoice.APPROVE,
        str(APPROVER),
    )
