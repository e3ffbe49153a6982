"""Workspace scopes through the daemon: an App on a real SQLite file, the scripted model and
the in-process channel; the calls go through the gateway, the agent loop and the tool
pipeline. Two conversations writing ``notes.txt`` get two files, neither sees the other's,
a scheduled run works in its job's conversation folder, ``shell`` runs in it, and the start
warns about what an install from before scopes left out of reach."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from bot.app import App
from bot.config import Settings, ShellToolConfig, parse_settings
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.providers.base import CompletionRequest
from bot.store import Store
from bot.tools.builtin.scopes import scope_folder
from tests.fakes.channel import FakeChannel
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.schedules.conftest import START, Clock
from tests.schedules.test_scheduled_turns import NINE_BERLIN_NEXT_DAY

TELEGRAM = ChannelRef(kind="telegram", alias="main")
USER = "4242"
ALPHA, BETA = "-100111", "-100222"


def settings(
    tmp_path: Path, *, excluded_in_telegram: list[str] | None = None, **tools: Any
) -> Settings:
    telegram: dict[str, Any] = {"allowed_users": [USER]}
    if excluded_in_telegram is not None:
        telegram["excluded_tools"] = excluded_in_telegram
    shell: dict[str, Any] = {}
    if "sandbox" in ShellToolConfig.model_fields:
        shell["sandbox"] = "none"  # the folder is chosen the same way in the sandbox
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": 30.0, "parallel_tools": False},
            "approval": {"auto_approve": ["file_write", "file_read", "shell", "schedule_add"]},
            "channels": {"telegram": {"main": telegram}},
            "schedules": {"tick_s": 3600.0},
            "tools": {"shell": shell, **tools},
        },
        environ={},
        require_provider=False,
    )


def message(conversation: str, text: str, message_id: str) -> IngressEnvelope:
    return IngressEnvelope(
        channel=TELEGRAM,
        message_id=message_id,
        conversation_id=conversation,
        sender=Sender(id=USER, display_name="Ana"),
        text=text,
        reply_target=DeliveryTarget(channel=TELEGRAM, conversation_id=conversation),
        is_group=True,
        addressed_to_bot=True,
        capabilities=Capabilities(inline_buttons=True),
    )


def folder(tmp_path: Path, conversation: str) -> Path:
    relative = scope_folder("conversation", channel=str(TELEGRAM), conversation_id=conversation)
    return tmp_path / "workspace" / relative


def tool_results(request: CompletionRequest) -> list[str]:
    return [str(m.content) for m in request.messages if m.role == "tool"]


@pytest.fixture
def provider() -> ScriptedProvider:
    return ScriptedProvider()


@pytest.fixture
def channel() -> FakeChannel:
    return FakeChannel(TELEGRAM)


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
async def app(
    tmp_path: Path, provider: ScriptedProvider, channel: FakeChannel, clock: Clock
) -> AsyncIterator[App]:
    started = App(
        settings(tmp_path), provider=provider, channels={"telegram.main": channel}, clock=clock
    )
    await started.start()
    yield started
    await started.stop(drain_timeout_s=5.0)


async def ask(
    app: App,
    provider: ScriptedProvider,
    channel: FakeChannel,
    conversation: str,
    n: int,
    *calls: Any,
) -> list[str]:
    """One message in ``conversation`` whose turn makes ``calls`` then answers; the results
    of those calls as the model was given them."""
    provider.add(reply("", *calls), reply(f"answer {n}"))
    await app.gateway.deliver(message(conversation, f"question {n}", str(n)))
    await channel.wait_for(f"answer {n}")
    return tool_results(provider.requests[-1])[-len(calls) :]


async def test_two_conversations_get_two_files_and_never_see_each_other(
    tmp_path: Path, app: App, provider: ScriptedProvider, channel: FakeChannel
) -> None:
    await ask(
        app,
        provider,
        channel,
        ALPHA,
        1,
        call("file_write", {"path": "notes.txt", "content": "alpha"}),
    )
    await ask(
        app,
        provider,
        channel,
        BETA,
        2,
        call("file_write", {"path": "notes.txt", "content": "beta"}),
    )
    assert (folder(tmp_path, ALPHA) / "notes.txt").read_text() == "alpha"
    assert (folder(tmp_path, BETA) / "notes.txt").read_text() == "beta"

    sibling = f"../{folder(tmp_path, ALPHA).name}/notes.txt"
    results = await ask(
        app,
        provider,
        channel,
        BETA,
        3,
        call("file_read", {"path": "notes.txt"}),
        call("file_read", {"path": sibling}),
        call("shell", {"command": "pwd"}),
    )
    assert "beta" in results[0] and "alpha" not in results[0]
    assert "outside the workspace" in results[1] and "alpha" not in results[1]
    assert str(folder(tmp_path, BETA).resolve()) in results[2]


async def test_a_scheduled_run_works_in_its_job_conversation_folder(
    tmp_path: Path, app: App, provider: ScriptedProvider, channel: FakeChannel, clock: Clock
) -> None:
    job = {"prompt": "Log the stretch.", "cron": "0 9 * * *", "timezone": "Europe/Berlin"}
    await ask(app, provider, channel, ALPHA, 1, call("schedule_add", job))
    assert len(await app.schedule_book.jobs()) == 1
    provider.add(
        reply("", call("file_write", {"path": "log.txt", "content": "stretched"})),
        reply("Logged the stretch."),
    )
    clock.set(NINE_BERLIN_NEXT_DAY)
    assert await app.scheduler.tick() == 1
    await channel.wait_for("Logged the stretch.")
    assert (folder(tmp_path, ALPHA) / "log.txt").read_text() == "stretched"
    assert not (folder(tmp_path, BETA)).exists()


async def test_start_warns_about_files_and_notes_left_by_an_older_install(
    tmp_path: Path, provider: ScriptedProvider, channel: FakeChannel
) -> None:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "report.md").write_text("from when the workspace was shared")
    async with await Store.open(tmp_path / "hatchway.db") as store:
        await store.memory.add(scope_key="channel:telegram.main", content="old note")
    for scope, warned in (("conversation", True), ("shared", False)):
        configured = settings(tmp_path, workspace={"scope": scope}, memory={"scope": "channel"})
        app = App(configured, provider=provider, channels={"telegram.main": channel})
        with structlog.testing.capture_logs() as logs:
            await app.start()
        await app.stop(drain_timeout_s=5.0)
        warnings = [e for e in logs if e["log_level"] == "warning" and "scope" in e["event"]]
        if not warned:
            assert warnings == []
            continue
        (warning,) = warnings
        assert warning["event"] == "workspace_scope_changed"
        assert warning["examples"] == ["report.md"]
        assert 'tools.workspace.scope = "shared"' in warning["fix"]

    app = App(settings(tmp_path), provider=provider, channels={"telegram.main": channel})
    with structlog.testing.capture_logs() as logs:
        await app.start()
    await app.stop(drain_timeout_s=5.0)
    memory = [e for e in logs if e["event"] == "memory_scope_changed"]
    assert len(memory) == 1 and memory[0]["unreachable_notes"] == 1
    assert 'tools.memory.scope = "channel"' in memory[0]["fix"]
    assert (tmp_path / "workspace" / "report.md").exists()  # nothing is moved


async def test_a_channels_excluded_tools_are_not_offered_in_it(
    tmp_path: Path, provider: ScriptedProvider, channel: FakeChannel, clock: Clock
) -> None:
    """``channels.<kind>.<alias>.excluded_tools`` hides tools in that channel's turns, on top
    of the agent's own exclusions, and a reload applies to the next turn."""
    configured = settings(tmp_path)
    hiding = settings(tmp_path, excluded_in_telegram=["shell", "file_write"])
    app = App(hiding, provider=provider, channels={"telegram.main": channel}, clock=clock)
    await app.start()
    try:
        provider.add(reply("answer 1"))
        await app.gateway.deliver(message(ALPHA, "question 1", "1"))
        await channel.wait_for("answer 1")
        offered = {tool.name for tool in provider.requests[-1].tools}
        assert "file_read" in offered
        assert not offered & {"shell", "file_write"}

        app.reload(configured)
        provider.add(reply("answer 2"))
        await app.gateway.deliver(message(ALPHA, "question 2", "2"))
        await channel.wait_for("answer 2")
        assert {"shell", "file_write"} <= {tool.name for tool in provider.requests[-1].tools}
    finally:
        await app.stop(drain_timeout_s=5.0)
