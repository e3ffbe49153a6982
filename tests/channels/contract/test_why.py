"""``/why`` on Telegram, Slack and Discord: registered with the other commands, typed or
invoked as each platform delivers it (the real client library against the loopback fake),
answered by the whole daemon. An approver gets the policy's verdict on the call privately —
an ephemeral answer where the platform has one (Slack's slash command, Discord's application
command), else their direct message with only a pointer in the group (Telegram) — and a
member who is not an approver is told that only approvers may ask, and nothing is explained.
A question that cannot be answered (an unknown tool, arguments that are not JSON) says why."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.channel import HealthState
from bot.config import parse_settings
from bot.gateway.why_command import ONLY_APPROVERS, SENT_PRIVATELY
from tests.fakes import discord_setup, slack_setup, telegram_setup
from tests.fakes.channel_health import wait_for_health
from tests.fakes.discord_commands import invoke
from tests.fakes.discord_interactions import EPHEMERAL
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.recording_tool import deploy_tool
from tests.fakes.scripted_provider import ScriptedProvider
from tests.fakes.slack_server import FakeSlack
from tests.fakes.telegram_server import FakeTelegram, command, message, user

PLATFORMS = ("telegram", "slack", "discord")
GROUP = {"id": -100700800, "type": "supergroup", "title": "team"}
DEPLOY = 'deploy {"version": "v2"}'


@dataclass(frozen=True, slots=True)
class Said:
    """What one person was told: ``private`` only they see, ``public`` the conversation."""

    private: tuple[str, ...]
    public: tuple[str, ...]


Ask = Callable[[bool, str], Any]  # (as an approver?, text after /why) -> Said


def _settings(tmp_path: Path, channels: dict[str, Any]) -> Any:
    return parse_settings(
        {"state_dir": str(tmp_path), "approval": {"timeout_s": 30}, "channels": channels},
        environ={},
        require_provider=False,
    )


@asynccontextmanager
async def telegram(tmp_path: Path) -> AsyncIterator[Ask]:
    async with FakeTelegram(telegram_setup.TOKEN) as tg:
        cfg = telegram_setup.settings_for(tg, tmp_path, allowed_users=["*"])
        async with App(cfg, provider=ScriptedProvider([]), tools=[deploy_tool([])]) as app:
            await telegram_setup.started(app)
            [menu] = await tg.wait_for("setMyCommands")
            assert "why" in [c["command"] for c in menu.params["commands"]]
            sent = 0

            def in_group() -> list[str]:
                calls = tg.calls_of("sendMessage")
                return [str(c.params["text"]) for c in calls if c.params["chat_id"] == GROUP["id"]]

            async def ask(approver: bool, text: str) -> Said:
                nonlocal sent
                who = telegram_setup.APPROVER if approver else telegram_setup.REQUESTER
                typed = f"/why {text}"
                before, seen = len(in_group()), len(tg.calls_of("sendMessage"))
                sent += 1
                payload = message(
                    GROUP, user(who), typed, message_id=100 + sent, entities=command(typed)
                )
                await tg.push({"message": payload})
                # one line in the group each time: the pointer, or the refusal
                await tg.wait_for(
                    "sendMessage", lambda c: c.params["chat_id"] == GROUP["id"], count=before + 1
                )
                calls = tg.calls_of("sendMessage")[seen:]
                return Said(
                    private=tuple(
                        str(c.params["text"]) for c in calls if c.params["chat_id"] == who
                    ),
                    public=tuple(in_group()[before:]),
                )

            yield ask


@asynccontextmanager
async def slack(tmp_path: Path) -> AsyncIterator[Ask]:
    async with FakeSlack(slack_setup.BOT_TOKEN, slack_setup.APP_TOKEN) as fake:
        values = {**slack_setup.channel_values(fake), "allowed_users": ["*"]}
        cfg = _settings(tmp_path, {"slack": {"main": values}})
        channel = slack_setup.slack_channel(fake)
        async with App(
            cfg,
            provider=ScriptedProvider([]),
            channels={str(slack_setup.REF): channel},
            tools=[deploy_tool([])],
        ):
            await wait_for_health(channel, HealthState.CONNECTED)

            async def ask(approver: bool, text: str) -> Said:
                who = slack_setup.APPROVER if approver else slack_setup.REQUESTER
                payload = fake.slash(f"why {text}", user=who, channel="C0001")
                await fake.wait_ack(await fake.push("slash_commands", payload))
                answers = await fake.wait_responses(payload["response_url"])
                assert {a["response_type"] for a in answers} == {"ephemeral"}
                public = [c for c in fake.calls_of("chat.postMessage")]
                return Said(
                    private=tuple(str(a["text"]) for a in answers),
                    public=tuple(str(c.params.get("text", "")) for c in public),
                )

            yield ask


@asynccontextmanager
async def discord(tmp_path: Path) -> AsyncIterator[Ask]:
    async with FakeDiscord(bot_id=discord_setup.BOT_ID) as fake:
        fake.add_guild(channels={discord_setup.GENERAL: "general"})
        values = {
            "api_base_url": fake.base_url,
            "gateway_url": fake.gateway_url,
            "guild_ready_timeout_s": 0.05,
            "allowed_users": ["*"],
            "approvers": [discord_setup.BOB["id"]],
        }
        cfg = _settings(tmp_path, {"discord": {"main": values}})
        async with App(cfg, provider=ScriptedProvider([]), tools=[deploy_tool([])]) as app:
            await wait_for_health(app.channels["discord.main"], HealthState.CONNECTED)
            [why] = [c for c in fake.commands[None] if c["name"] == "why"]
            assert [o["name"] for o in why["options"]] == ["text"]

            async def ask(approver: bool, text: str) -> Said:
                who = discord_setup.BOB if approver else discord_setup.ALICE
                interaction, _deferral = await invoke(
                    fake, "why", who, discord_setup.GENERAL, options={"text": text}
                )
                await fake.wait_until(lambda: interaction in fake.follow_ups)
                answers = fake.follow_ups[interaction]
                assert {a.get("flags") for a in answers} == {EPHEMERAL}
                return Said(
                    private=tuple(str(a["content"]) for a in answers),
                    public=tuple(fake.posted(discord_setup.GENERAL)),
                )

            yield ask


RIGS = {"telegram": telegram, "slack": slack, "discord": discord}


@pytest.fixture(params=PLATFORMS)
async def why(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Ask]:
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", telegram_setup.TOKEN)
    request.getfixturevalue("discord_env")
    async with RIGS[request.param](tmp_path) as ask:
        yield ask


async def test_an_approver_is_told_why_privately(why: Ask) -> None:
    said: Said = await why(True, DEPLOY)
    [answer] = [t for t in said.private if t.startswith("decision:")]
    lines = answer.splitlines()
    assert lines[0] == "decision:  ask"
    assert lines[1].startswith("rule:      side-effecting tool: no deny, always_ask, grant")
    assert "  version: v2" in lines
    # nothing of the answer in the conversation (Telegram: only the pointer)
    assert all("decision:" not in text for text in said.public)
    assert all(text.startswith(SENT_PRIVATELY[:20]) for text in said.public)


async def test_only_approvers_may_ask(why: Ask) -> None:
    said: Said = await why(False, DEPLOY)
    told = [*said.private, *said.public]
    only = ONLY_APPROVERS.partition("{prefix}")[0]  # Slack's prefix is "/hatchway "
    assert any(text.startswith(only) for text in told), told
    assert all("decision:" not in text for text in told)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("nope {}", "there is no tool named 'nope'"),
        ('deploy {"version": ', "the arguments are not JSON"),
        (f"deploy {json.dumps([1])}", "the arguments must be a JSON object"),
    ],
)
async def test_a_bad_question_says_why(why: Ask, text: str, error: str) -> None:
    said: Said = await why(True, text)
    assert any(t.startswith("Cannot answer: ") and error in t for t in said.private), said
