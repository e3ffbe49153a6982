"""A stop's Socket Mode close, through the real slack-bolt / slack_sdk / aiohttp against the
loopback fake: an event Slack sends after the client's Close frame and before its own is
stored and handed over (not discarded by the close), its ack is withheld without an error,
Slack's resend of it is answered as a duplicate, and a Close Slack never answers does not hold
the stop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.app import App
from bot.channel import HealthState
from bot.store import Store
from channels.slack.journal import KEY_PREFIX
from tests.fakes.channel_health import wait_for_health
from tests.fakes.recording_host import RecordingHost
from tests.fakes.scripted_provider import ScriptedProvider, reply
from tests.fakes.slack_server import FakeSlack, event_callback, message_event, params_match
from tests.fakes.slack_setup import APP_TOKEN, BOT_TOKEN, REF, channel_for, daemon_settings

CHANNEL = str(REF)
#: What a stop's events may be: nothing above info (no failed step, no traceback).
QUIET_LEVELS = {"debug", "info"}


async def journal(store: Store) -> dict[str, dict[str, object]]:
    rows = await store.channel_state.items(CHANNEL, KEY_PREFIX)
    return {key: json.loads(value) for key, value in rows}


def loud(logs: list[Mapping[str, Any]], caplog: pytest.LogCaptureFixture) -> list[object]:
    """The structlog events above info, and the library log records at warning or above."""
    events = [e for e in logs if e.get("log_level") not in QUIET_LEVELS]
    records = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    return [*events, *records]


async def test_an_event_sent_after_the_close_frame_is_handed_over_unacknowledged(
    slack: FakeSlack, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Slack had an event on the wire as the stopping client sent its Close: the client reads
    on until Slack's Close, stores the event and hands it over after the one before it; the
    ack, which may not follow a Close frame, is withheld quietly (Slack sends it again)."""
    caplog.set_level(logging.WARNING)
    host = RecordingHost()
    channel = channel_for(slack, store)
    run = asyncio.create_task(channel.run(host))
    await wait_for_health(channel, HealthState.CONNECTED)
    before = event_callback(message_event("before", channel="D0001", ts="6.1"))
    await slack.wait_ack(await slack.push("events_api", before))
    await host.wait_envelopes(1)
    wire = event_callback(message_event("on the wire", channel="D0001", ts="6.2"), event_id="Ew")
    envelope_id = slack.send_after_client_close("events_api", wire)
    with capture_logs() as logs:
        run.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(run, 15)
    assert slack.sent_after_close == [envelope_id]
    assert [e.text for e in host.envelopes] == ["before", "on the wire"]
    assert envelope_id not in slack.acks
    assert await journal(store) == {}
    assert channel.health.state is HealthState.STOPPED
    names = [e["event"] for e in logs]
    assert "slack_ack_withheld_after_close" in names
    assert "slack_socket_close_unanswered" not in names
    assert loud(logs, caplog) == []


async def test_the_stopped_daemon_keeps_the_event_and_answers_it_once(
    slack: FakeSlack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process stopping (SQLite): the event that came after its Close frame stays stored
    for the next start, which answers it; Slack's resend (its ack never came) is a duplicate,
    and the next message is answered after it."""
    monkeypatch.setenv("HATCHWAY_SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("HATCHWAY_SLACK_APP_TOKEN", APP_TOKEN)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    wire = event_callback(message_event("on the wire", channel="D0001", ts="12.1"), event_id="Ew")
    provider = ScriptedProvider([reply("answer to the wire"), reply("answer to later")])
    app = App(daemon_settings(slack, tmp_path), provider=provider, tools=[])
    async with app:
        await wait_for_health(app.channels[CHANNEL], HealthState.CONNECTED)
        envelope_id = slack.send_after_client_close("events_api", wire)
    assert slack.sent_after_close == [envelope_id]
    assert envelope_id not in slack.acks
    async with await Store.open(tmp_path / "hatchway.db") as store:
        assert await journal(store) == {f"{KEY_PREFIX}Ew": wire}
    app = App(daemon_settings(slack, tmp_path), provider=provider, tools=[])
    async with app:
        await wait_for_health(app.channels[CHANNEL], HealthState.CONNECTED)
        await slack.wait_for("chat.postMessage", where=params_match({"channel": "D0001"}))
        await slack.wait_ack(await slack.push("events_api", wire, retry_attempt=1))
        later = event_callback(message_event("later", channel="D0001", ts="12.2"))
        await slack.push("events_api", later)
        await slack.wait_for("chat.postMessage", where=params_match({"text": "answer to later"}))
    texts = [c.params.get("text") for c in slack.calls_of("chat.postMessage")]
    assert texts == ["answer to the wire", "answer to later"]
    assert len(provider.requests) == 2


async def test_a_close_slack_never_answers_does_not_hold_the_stop(
    slack: FakeSlack, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Slack sends no Close back (nor pongs, while closing): the client drops the connection
    after its short wait, well before its heartbeat would, and the stop's bounded close step
    is not cut short."""
    caplog.set_level(logging.WARNING)
    slack.answer_close = False
    host = RecordingHost()
    channel = channel_for(slack, store, ping_interval_s=10.0)
    run = asyncio.create_task(channel.run(host))
    await wait_for_health(channel, HealthState.CONNECTED)
    with capture_logs() as logs:
        run.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(run, 15)
        await slack.wait_disconnected(1)
    names = [e["event"] for e in logs]
    assert "slack_socket_close_unanswered" in names
    assert "slack_socket_closed" in names
    assert loud(logs, caplog) == []
    assert channel.health.state is HealthState.STOPPED
