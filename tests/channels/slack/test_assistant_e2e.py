"""Slack's assistant surface end to end: the daemon (gateway, agent loop, progress) behind the
Slack channel, over slack-bolt and slack_sdk to the loopback Slack. A person opens an
assistant thread (suggested prompts), asks (the thread is titled), the status line reads
"is thinking…" and then the running tool's name (never its arguments), and the answer is
posted once in the thread."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bot.app import App
from bot.channel import HealthState
from bot.config import parse_settings
from bot.tools.spec import ToolContext, ToolSpec
from channels.slack.adapter import SlackChannel, SlackCredentials
from channels.slack.config import SlackChannelConfig
from tests.fakes.channel_health import wait_for_health
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.fakes.slack_server import FakeSlack, event_callback, message_event, params_match
from tests.fakes.slack_setup import APP_TOKEN, BOT_TOKEN, REF, REQUESTER, channel_values

DM = "D0ASSIST"
THREAD = "1700000100.000100"
SECRET_QUERY = "xoxb-9999999999-8888888888-secretsecretsecret"
WAIT_S = 60.0  # bounds a failure only


def lookup_tool(slack: FakeSlack) -> ToolSpec:
    """``lookup(query)``, which answers once Slack shows it running in the status line (so
    the test sees that status whatever the machine's load)."""

    async def lookup(arguments: Mapping[str, object], context: ToolContext) -> str:
        await slack.wait_for(
            "assistant.threads.setStatus",
            where=params_match({"status": "is running lookup…"}),
            wait_s=WAIT_S,
        )
        return "the key rotates on Mondays"

    return ToolSpec(
        name="lookup",
        description="Look something up.",
        parameters={
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
        handler=lookup,
        requires_approval=False,
    )


async def test_an_assistant_thread_end_to_end(slack: FakeSlack, tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [reply("", call("lookup", {"query": SECRET_QUERY})), reply("It rotates on **Mondays**.")]
    )
    values = {
        **channel_values(slack),
        "assistant": {
            "enabled": True,
            "prompts": {"default": [{"title": "Keys", "message": "When do keys rotate?"}]},
        },
    }
    settings = parse_settings(
        {"state_dir": str(tmp_path), "channels": {"slack": {"main": values}}},
        environ={},
        require_provider=False,
    )
    channel = SlackChannel(
        ref=REF,
        config=SlackChannelConfig.model_validate(values),
        credentials=SlackCredentials(bot_token=BOT_TOKEN, app_token=APP_TOKEN),
    )
    app = App(settings, provider=provider, channels={str(REF): channel}, tools=[lookup_tool(slack)])
    async with app:
        await wait_for_health(channel, HealthState.CONNECTED)
        started = slack.assistant.start(user=REQUESTER, dm_channel=DM, thread_ts=THREAD)
        await slack.wait_ack(await slack.push("events_api", started))
        await slack.wait_for("assistant.threads.setSuggestedPrompts", wait_s=WAIT_S)
        question = message_event(
            "When does the deploy key rotate?",
            user=REQUESTER,
            channel=DM,
            ts="1700000101.000100",
            thread_ts=THREAD,
        )
        await slack.push("events_api", event_callback(question))
        await slack.wait_for(
            "chat.postMessage",
            where=params_match({"text": "It rotates on *Mondays*.", "thread_ts": THREAD}),
            wait_s=WAIT_S,
        )
        await slack.wait_for("assistant.threads.setTitle", wait_s=WAIT_S)
    statuses = slack.assistant.status_of(DM, THREAD)
    assert statuses[0] == "is thinking…"
    assert "is running lookup…" in statuses
    assert not any(SECRET_QUERY[:12] in status for status in statuses)
    assert slack.assistant.titles == {(DM, THREAD): "When does the deploy key rotate?"}
    answers = [c for c in slack.calls_of("chat.postMessage") if "Mondays" in c.params["text"]]
    assert len(answers) == 1
