"""Rate limits through the whole daemon and python-telegram-bot against the loopback Bot API
fake: a burst from one user gets one polite reply and nothing lost for anyone else, a
restart keeps the buckets, a platform's redelivery takes no token, approvers may be exempt,
and scheduled runs are never limited (the in-process channel)."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path
from typing import Any

from bot.app import App
from bot.config import Settings, parse_settings
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.gateway.ratelimit import RATE_LIMITED
from bot.store import InboxKey, InboxStatus
from tests.fakes.channel import FakeChannel
from tests.fakes.scripted_provider import ScriptedProvider
from tests.fakes.telegram_server import ApiCall, FakeTelegram, message, user
from tests.fakes.telegram_setup import APPROVER, REQUESTER, started
from tests.gateway.conftest import echo

ANN, BOB = REQUESTER, 4004
GROUP: dict[str, Any] = {"id": -100500600, "type": "supergroup", "title": "team"}
NOTICE_START = "You're sending messages faster than I can take them"
#: One message per ten minutes: nothing refills while a test runs.
SLOW = {"messages_per_minute": 0.1, "burst": 3}
WAIT_S = 60.0


def settings(tg: FakeTelegram, tmp_path: Path, **limits: Any) -> Settings:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "rate_limits": limits or {"per_user": SLOW},
            "channels": {
                "telegram": {
                    "main": {
                        "api_base_url": tg.base_url,
                        "file_base_url": tg.file_base_url,
                        "poll_timeout_s": 1,
                        "reconnect_initial_s": 0.01,
                        "reconnect_max_s": 0.05,
                        "allowed_users": ["*"],
                        "approvers": [str(APPROVER)],
                        "require_mention": False,
                    }
                }
            },
        },
        environ={},
        require_provider=False,
    )


def texts(tg: FakeTelegram) -> list[str]:
    return [str(c.params["text"]) for c in tg.calls_of("sendMessage")]


def is_notice(call: ApiCall) -> bool:
    return str(call.params["text"]).startswith(NOTICE_START)


async def settled(app: App, count: int) -> dict[str, int]:
    """The inbox once ``count`` messages are in it and none waits for or runs its turn."""
    async with asyncio.timeout(WAIT_S):
        while True:
            counts = await app.store.inbox.counts()
            unfinished = counts.get("received", 0) + counts.get("processing", 0)
            if sum(counts.values()) >= count and not unfinished:
                return counts
            await asyncio.sleep(0.02)


def key(message_id: int) -> InboxKey:
    """The inbox entry of a message of the group (the adapter names it chat:message)."""
    return InboxKey(channel="telegram.main", message_id=f"{GROUP['id']}:{message_id}")


def refill_wait(notice: str) -> int:
    """The seconds a notice names, rounded to the minute the tests' slow bucket refills in:
    the bucket refills while the burst is handled, so a busy machine may say 599 s."""
    found = re.fullmatch(r".*; I'll answer again in (\d+) s\.", notice)
    assert found is not None, notice
    return round(int(found[1]) / 60) * 60


async def say(tg: FakeTelegram, sender: int, text: str, message_id: int) -> None:
    await tg.push({"message": message(GROUP, user(sender), text, message_id=message_id)})


async def test_a_burst_gets_one_reply_and_loses_nobody_elses_message(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    limits = {"per_user": SLOW, "per_conversation": {"messages_per_minute": 60, "burst": 30}}
    provider = ScriptedProvider([echo] * 40)
    async with App(settings(tg, tmp_path, **limits), provider=provider, tools=[]) as app:
        await started(app)
        for n in range(1, 21):
            await say(tg, ANN, f"ann {n}", n)
        for n in range(1, 4):
            await say(tg, BOB, f"bob {n}", 100 + n)
        counts = await settled(app, 23)
        await tg.wait_for("sendMessage", lambda c: "echo: bob 3" in str(c.params["text"]))
        await tg.wait_for("sendMessage", is_notice)
        sent = texts(tg)

        assert counts == {"done": 6, "failed": 17}
        assert app.gateway.rate_limited == 17
        notices = [t for t in sent if t.startswith(NOTICE_START)]
        assert [refill_wait(t) for t in notices] == [600]
        assert sorted(t for t in sent if t.startswith("echo: bob")) == [
            "echo: bob 1",
            "echo: bob 2",
            "echo: bob 3",
        ]
        assert len([t for t in sent if t.startswith("echo: ann")]) == 3
        refused = [await app.store.inbox.get(key(n)) for n in range(1, 21)]
        failed = [e for e in refused if e is not None and e.status is InboxStatus.FAILED]
        assert len(failed) == 17 and all(e.error == RATE_LIMITED for e in failed)
        assert len(provider.requests) == 6


async def test_a_busy_conversation_is_told_once(tg: FakeTelegram, tmp_path: Path) -> None:
    limits = {"per_conversation": SLOW}
    provider = ScriptedProvider([echo] * 10)
    async with App(settings(tg, tmp_path, **limits), provider=provider, tools=[]) as app:
        await started(app)
        for n in range(1, 4):
            await say(tg, ANN, f"ann {n}", n)
            await say(tg, BOB, f"bob {n}", 10 + n)
        assert await settled(app, 6) == {"done": 3, "failed": 3}
        await tg.wait_for("sendMessage", lambda c: "echo: " in str(c.params["text"]), count=3)
        await tg.wait_for("sendMessage", lambda c: "faster than I" in str(c.params["text"]))
        notices = [t for t in texts(tg) if "faster than I can take them" in t]
        assert len(notices) == 1
        assert notices[0].startswith("This conversation is sending messages faster than I")
        assert refill_wait(notices[0]) == 600


async def test_a_restart_keeps_the_buckets(tg: FakeTelegram, tmp_path: Path) -> None:
    provider = ScriptedProvider([echo] * 10)
    async with App(settings(tg, tmp_path), provider=provider, tools=[]) as app:
        await started(app)
        for n in range(1, 5):
            await say(tg, ANN, f"ann {n}", n)
        assert await settled(app, 4) == {"done": 3, "failed": 1}
        await tg.wait_for("sendMessage", is_notice)
    with sqlite3.connect(tmp_path / "hatchway.db") as conn:
        saved = conn.execute("SELECT bucket, tokens, noticed_at FROM rate_limit_buckets").fetchall()
    [(bucket, tokens, noticed_at)] = saved
    assert (bucket, noticed_at > 0) == (f"user:telegram.main:{ANN}", True)
    assert tokens < 1

    async with App(settings(tg, tmp_path), provider=provider, tools=[]) as app:
        await started(app)
        await say(tg, ANN, "ann after the restart", 5)
        await say(tg, BOB, "bob after the restart", 6)
        assert await settled(app, 6) == {"done": 4, "failed": 2}
        after = await app.store.inbox.get(key(5))
        assert after is not None and after.error == RATE_LIMITED
        await tg.wait_for("sendMessage", lambda c: "echo: bob after" in str(c.params["text"]))
    assert not any(t.startswith("echo: ann after") for t in texts(tg))


async def test_a_redelivery_takes_no_token(tg: FakeTelegram, tmp_path: Path) -> None:
    limits = {"per_user": {"messages_per_minute": 0.1, "burst": 2}}
    provider = ScriptedProvider([echo] * 5)
    async with App(settings(tg, tmp_path, **limits), provider=provider, tools=[]) as app:
        await started(app)
        first = message(GROUP, user(ANN), "ann 1", message_id=1)
        await tg.push({"message": first})
        await tg.push({"message": first})  # the same message again, as a new update
        await settled(app, 1)
        await say(tg, ANN, "ann 2", 2)
        assert await settled(app, 2) == {"done": 2}
        await tg.wait_for("sendMessage", lambda c: "echo: ann 2" in str(c.params["text"]))
    assert texts(tg).count("echo: ann 1") == 1
    assert app.gateway.rate_limited == 0


async def test_approvers_may_be_exempt(tg: FakeTelegram, tmp_path: Path) -> None:
    limits = {"per_user": {"messages_per_minute": 0.1, "burst": 1}, "exempt_approvers": True}
    provider = ScriptedProvider([echo] * 10)
    async with App(settings(tg, tmp_path, **limits), provider=provider, tools=[]) as app:
        await started(app)
        for n in range(1, 4):
            await say(tg, APPROVER, f"boss {n}", n)
        await say(tg, ANN, "ann 1", 10)
        await say(tg, ANN, "ann 2", 11)
        assert await settled(app, 5) == {"done": 4, "failed": 1}
        assert app.gateway.rate_limited == 1


REF = ChannelRef(kind="console", alias="main")


def scheduled(n: int) -> IngressEnvelope:
    return IngressEnvelope(
        channel=REF,
        message_id=f"job-1:{n}",
        conversation_id="c1",
        sender=Sender(id="u1"),
        text=f"run {n}",
        reply_target=DeliveryTarget(channel=REF, conversation_id="c1"),
        is_direct=True,
        addressed_to_bot=True,
        background=True,
    )


async def test_scheduled_runs_are_never_limited(tmp_path: Path) -> None:
    limits = {"per_user": {"messages_per_minute": 0.1, "burst": 1}}
    config = parse_settings(
        {"state_dir": str(tmp_path), "rate_limits": limits, "channels": {"console": {"main": {}}}},
        environ={},
        require_provider=False,
    )
    channel = FakeChannel(REF)
    provider = ScriptedProvider([echo] * 5)
    async with App(config, provider=provider, channels={"console.main": channel}, tools=[]) as app:
        await channel.running.wait()
        for n in range(3):
            await app.gateway.deliver(scheduled(n))
        assert await settled(app, 3) == {"done": 3}
        assert app.gateway.rate_limited == 0
