"""Agent profiles end to end: the daemon behind a Telegram channel (python-telegram-bot
against the loopback Bot API fake), two agents on two OpenAI-compatible fakes.

``telegram.main`` answers with ``ops`` unless a route says otherwise; a route sends its
direct messages to ``default``. Each agent's requests reach its own model server with its own
system prompt (``ops``'s from a file beside the config), its own tools, temperature and
max tokens. Switching the group to the other agent (a reload) starts a new session there:
the other agent's history is not in the request, and switching back finds ``ops``'s history
again; ``/new`` there starts a new session of ``ops``. A reload reads a changed prompt
file.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.channel import HealthState
from bot.config import load_settings
from bot.gateway.commands import NEW_SESSION
from bot.tools.spec import ToolContext, ToolSpec
from tests.fakes.channel_health import wait_for_health
from tests.fakes.openai_server import OpenAIFake, RecordedRequest
from tests.fakes.telegram_server import FakeTelegram, command, message, private_chat, user
from tests.fakes.telegram_setup import TOKEN

PERSON = 1001
LOOPBACK = "127.0.0.1,localhost"
GROUP = {"id": -100555, "type": "group", "title": "ops room"}
GENERAL_PROMPT = "You are the general assistant."
OPS_PROMPT = "You are the careful ops agent."


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(TOKEN) as fake:
        yield fake


@pytest.fixture(autouse=True)
def telegram_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv("NO_PROXY", LOOPBACK)


def _tool(name: str) -> ToolSpec:
    async def run(arguments: Mapping[str, object], context: ToolContext) -> str:
        return f"{name} ran"

    return ToolSpec(
        name=name,
        description=f"The {name} tool.",
        parameters={"type": "object", "properties": {}},
        handler=run,
        requires_approval=False,
    )


def write_config(
    config_dir: Path,
    *,
    tg: FakeTelegram,
    general: OpenAIFake,
    ops: OpenAIFake,
    group_agent: str = "ops",
) -> Path:
    path = config_dir / "hatchway.toml"
    path.write_text(
        f"""
state_dir = "{config_dir.parent / "state"}"

[agent]
system_prompt = "{GENERAL_PROMPT}"
provider = "general"
excluded_tools = ["deploy"]

[providers.general]
base_url = "{general.base_url}"
model = "gpt-4o-general"
max_retries = 0

[providers.ops]
base_url = "{ops.base_url}"
model = "gpt-4o-ops"
max_retries = 0

[agents.ops]
system_prompt_file = "prompts/ops.md"
provider = "ops"
temperature = 0.1
max_tokens = 256
allowed_tools = ["deploy", "lookup"]
excluded_tools = ["lookup"]

[[agents.ops.routes]]
conversation = "{GROUP["id"]}"
dm = false

[[agents.default.routes]]
channel = "telegram.main"
dm = true

[channels.telegram.main]
api_base_url = "{tg.base_url}"
file_base_url = "{tg.file_base_url}"
poll_timeout_s = 1
reconnect_initial_s = 0.01
reconnect_max_s = 0.05
allowed_users = ["*"]
require_mention = false
agent = "ops"
""",
        encoding="utf-8",
    )
    if group_agent != "ops":
        # the group's route now leads to the other agent
        text = path.read_text(encoding="utf-8")
        text = text.replace("[[agents.ops.routes]]", f"[[agents.{group_agent}.routes]]")
        path.write_text(text, encoding="utf-8")
    return path


def _system(request: RecordedRequest) -> str:
    first = request.body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def _tools(request: RecordedRequest) -> set[str]:
    return {tool["function"]["name"] for tool in request.body.get("tools", [])}


def _texts(request: RecordedRequest) -> list[str]:
    return [str(m["content"]) for m in request.body["messages"] if m["role"] != "system"]


async def _ask(tg: FakeTelegram, chat: dict[str, Any], text: str, message_id: int) -> None:
    await tg.push({"message": message(chat, user(PERSON, "Ann"), text, message_id=message_id)})


async def _answered(tg: FakeTelegram, chat_id: int, text: str) -> None:
    await tg.wait_for(
        "sendMessage",
        lambda c: c.params.get("chat_id") == chat_id and c.params.get("text") == text,
    )


async def test_two_rooms_two_agents_reload_and_history(tg: FakeTelegram, tmp_path: Path) -> None:
    config_dir = tmp_path / "conf"
    (config_dir / "prompts").mkdir(parents=True)
    prompt_file = config_dir / "prompts" / "ops.md"
    prompt_file.write_text(OPS_PROMPT + "\n", encoding="utf-8")
    async with OpenAIFake() as general, OpenAIFake() as ops:
        path = write_config(config_dir, tg=tg, general=general, ops=ops)
        app = App(load_settings(path, environ={}), tools=[_tool("lookup"), _tool("deploy")])
        async with app:
            await wait_for_health(app.channels["telegram.main"], HealthState.CONNECTED)
            dm = private_chat(PERSON)

            # the DM: the route to default beats the channel's agent (ops)
            general.queue_text("general here")
            await _ask(tg, dm, "hello from the DM", 1)
            await _answered(tg, PERSON, "general here")
            [asked] = general.requests
            assert _system(asked) == GENERAL_PROMPT
            assert _tools(asked) == {"lookup"}
            assert asked.body["model"] == "gpt-4o-general"
            assert "temperature" not in asked.body
            assert ops.requests == []

            # the group: the ops route (and the channel's default) leads to ops
            ops.queue_text("ops here")
            await _ask(tg, GROUP, "status of the cluster?", 2)
            await _answered(tg, GROUP["id"], "ops here")
            [asked] = ops.requests
            assert _system(asked) == OPS_PROMPT
            assert _tools(asked) == {"deploy"}
            assert asked.body["model"] == "gpt-4o-ops"
            assert asked.body["temperature"] == 0.1
            assert asked.body["max_tokens"] == 256
            assert _texts(asked) == ["status of the cluster?"]
            assert len(general.requests) == 1

            # the prompt file changes; a reload reads it again
            prompt_file.write_text("You are the ops agent, version two.", encoding="utf-8")
            app.reload(load_settings(path, environ={}))
            ops.queue_text("ops again")
            await _ask(tg, GROUP, "and now?", 3)
            await _answered(tg, GROUP["id"], "ops again")
            asked = ops.requests[-1]
            assert _system(asked) == "You are the ops agent, version two."
            assert _texts(asked) == ["status of the cluster?", "ops here", "and now?"]

            # the group is switched to default: a new session, without ops's history
            switched = write_config(
                config_dir, tg=tg, general=general, ops=ops, group_agent="default"
            )
            app.reload(load_settings(switched, environ={}))
            general.queue_text("general in the group")
            await _ask(tg, GROUP, "who are you?", 4)
            await _answered(tg, GROUP["id"], "general in the group")
            asked = general.requests[-1]
            assert _system(asked) == GENERAL_PROMPT
            assert _texts(asked) == ["who are you?"]
            assert len(ops.requests) == 2

            # and back to ops: its own history is still there
            app.reload(
                load_settings(write_config(config_dir, tg=tg, general=general, ops=ops), environ={})
            )
            ops.queue_text("ops is back")
            await _ask(tg, GROUP, "back?", 5)
            await _answered(tg, GROUP["id"], "ops is back")
            assert _texts(ops.requests[-1]) == [
                "status of the cluster?",
                "ops here",
                "and now?",
                "ops again",
                "back?",
            ]

            # /new in the group starts a new session of the group's agent
            new = message(
                GROUP, user(PERSON, "Ann"), "/new", message_id=6, entities=command("/new")
            )
            await tg.push({"message": new})
            await _answered(tg, GROUP["id"], NEW_SESSION)
            ops.queue_text("fresh start")
            await _ask(tg, GROUP, "again", 7)
            await _answered(tg, GROUP["id"], "fresh start")
            assert _texts(ops.requests[-1]) == ["again"]
