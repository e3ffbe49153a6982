"""A Slack message event is stored before it is acknowledged, through the real slack-bolt /
slack_sdk against the loopback fake: an acknowledged event is in the journal or with the
host, an event left stored by a crash is handed over when the adapter starts again on the
same SQLite file, and an event that cannot be stored is not acknowledged, so Slack's retry
of it is taken in."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import sys
from pathlib import Path

import aiohttp
import pytest
from structlog.testing import capture_logs

from bot.app import App
from bot.channel import HealthState
from bot.envelope import DeliveryTarget, IngressEnvelope
from bot.errors import StorageUnavailable
from bot.store import Store
from channels.slack.journal import KEY_PREFIX, Arrivals
from tests.fakes.channel_health import serving, wait_for_health
from tests.fakes.recording_host import HostCrash, RecordingHost
from tests.fakes.scripted_provider import ScriptedProvider, reply
from tests.fakes.slack_server import (
    BOT_USER,
    FakeSlack,
    event_callback,
    message_event,
    params_match,
    signed_headers,
)
from tests.fakes.slack_setup import (
    APP_TOKEN,
    BOT_TOKEN,
    REF,
    SECRET,
    channel_for,
    daemon_settings,
    http_channel,
)

CHANNEL = str(REF)
QUEUE_SIZE = 1000  # SlackInbound's default
ROOT = Path(__file__).resolve().parents[3]


async def journal(store: Store) -> dict[str, dict[str, object]]:
    rows = await store.channel_state.items(CHANNEL, KEY_PREFIX)
    return {key: json.loads(value) for key, value in rows}


async def until_empty(store: Store) -> None:
    """Wait until the journal is empty (the worker deletes a row after the host took it)."""
    async with asyncio.timeout(10):
        # the store offers no change notification: polled
        while await journal(store):  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def test_an_acknowledged_event_is_stored_until_the_host_has_it(
    slack: FakeSlack, store: Store
) -> None:
    release = asyncio.Event()
    host = RecordingHost(hold=release)
    async with serving(channel_for(slack, store), host):
        event = event_callback(message_event("hello", channel="D0001", ts="7.1"), event_id="Ev7")
        await slack.wait_ack(await slack.push("events_api", event))
        # acknowledged while the host still holds it: it is in the journal, as it came
        assert await journal(store) == {f"{KEY_PREFIX}Ev7": event}
        assert host.envelopes == []
        release.set()
        (envelope,) = await host.wait_envelopes(1)
        assert envelope.message_id == "D0001:7.1"
        await until_empty(store)


async def test_the_ack_waits_for_the_write(slack: FakeSlack, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    host = RecordingHost()
    async with await Store.open(path) as store, serving(channel_for(slack, store), host):
        event = event_callback(message_event("hello", channel="D0001", ts="6.1"), event_id="Ev6")
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")  # another writer holds the database
            held = await slack.push("events_api", event)
            # an event that needs no write is acknowledged meanwhile; the stored one is not
            own = event_callback(message_event("my answer", user=BOT_USER, ts="6.2"))
            await slack.wait_ack(await slack.push("events_api", own))
            assert held not in slack.acks
            other.execute("COMMIT")
        await slack.wait_ack(held)
        (envelope,) = await host.wait_envelopes(1)
        assert envelope.message_id == "D0001:6.1"


async def test_own_messages_and_housekeeping_are_acknowledged_unstored(
    slack: FakeSlack, store: Store
) -> None:
    release = asyncio.Event()
    host = RecordingHost(hold=release)
    async with serving(channel_for(slack, store), host):
        own = event_callback(message_event("my answer", user=BOT_USER, ts="8.1"))
        join = event_callback(message_event("joined", subtype="channel_join", ts="8.2"))
        for event in (own, join):
            await slack.wait_ack(await slack.push("events_api", event))
        assert await journal(store) == {}
        release.set()


async def test_a_stop_closes_the_socket_then_hands_over_what_it_received(
    slack: FakeSlack, store: Store
) -> None:
    """Events acknowledged and not yet handed over when a stop comes (the host is slow) are
    handed over, in order, once the socket is closed: not left in the journal for a later
    start, which other replicas' answers to newer messages would precede."""
    release = asyncio.Event()
    host = RecordingHost(hold=release)
    channel = channel_for(slack, store)
    run = asyncio.create_task(channel.run(host))
    await wait_for_health(channel, HealthState.CONNECTED)
    texts = ["first", "second", "third"]
    for n, text in enumerate(texts, start=1):
        event = event_callback(message_event(text, channel="D0001", ts=f"5.{n}"))
        await slack.wait_ack(await slack.push("events_api", event))
    assert len(await journal(store)) == len(texts)
    assert host.envelopes == []
    with capture_logs() as logs:
        run.cancel()
        # the socket closes first: Slack sends what comes next to the app's other sockets
        await slack.wait_disconnected(1)
        assert host.envelopes == []
        release.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(run, 15)
    assert [e.text for e in host.envelopes] == texts
    assert await journal(store) == {}
    assert channel.health.state is HealthState.STOPPED
    (handed,) = [e for e in logs if e["event"] == "slack_events_handed_over_at_stop"]
    assert handed["events"] == len(texts)


class RefusingHost(RecordingHost):
    """Refuses every message while ``refusing`` is set, as the gateway does while this
    process drains for a stop or has lost its database."""

    def __init__(self) -> None:
        super().__init__()
        self.refusing = True
        self.refusals = 0
        self._refused = asyncio.Condition()

    async def deliver(self, envelope: IngressEnvelope) -> None:
        if self.refusing:
            async with self._refused:
                self.refusals += 1
                self._refused.notify_all()
            raise StorageUnavailable("this process is stopping: the message is left for later")
        await super().deliver(envelope)

    async def wait_refusals(self, count: int) -> None:
        async with asyncio.timeout(10), self._refused:
            await self._refused.wait_for(lambda: self.refusals >= count)


async def test_a_refused_event_stays_stored_and_the_channel_keeps_running(
    slack: FakeSlack, store: Store
) -> None:
    """A refusal by the host leaves the event in the journal, handed over again later, in
    order; it does not end the channel, whose socket and HTTP session the turns still
    running (a drain waits for them) need to post their replies."""
    host = RefusingHost()
    channel = channel_for(slack, store, reconnect_initial_s=0.01, reconnect_max_s=0.05)
    async with serving(channel, host):
        late = event_callback(message_event("late", channel="D0001", ts="4.1"), event_id="Ev41")
        await slack.wait_ack(await slack.push("events_api", late))
        await host.wait_refusals(2)  # refused, and tried again after a pause
        assert list(await journal(store)) == [f"{KEY_PREFIX}Ev41"]
        assert (slack.connections, slack.disconnections) == (1, 0)
        assert channel.health.state is HealthState.CONNECTED
        target = DeliveryTarget(channel=REF, conversation_id="D0001")
        (sent,) = await channel.send(target, "the running turn's answer")
        assert sent.message_id
        after = event_callback(message_event("after", channel="D0001", ts="4.2"))
        await slack.wait_ack(await slack.push("events_api", after))
        host.refusing = False
        await host.wait_envelopes(2)
        assert [e.text for e in host.envelopes] == ["late", "after"]
        await until_empty(store)


async def test_an_event_stored_before_a_crash_is_handed_over_after_a_restart(
    slack: FakeSlack, tmp_path: Path
) -> None:
    path = tmp_path / "state.db"
    lost = event_callback(message_event("lost?", channel="D0001", ts="9.1"), event_id="Ev9")
    async with await Store.open(path) as store:
        # the daemon dies while the gateway handles the message (after the ack)
        crashing = RecordingHost(crash_on="lost?")
        channel = channel_for(slack, store)
        run = asyncio.create_task(channel.run(crashing))
        await wait_for_health(channel, HealthState.CONNECTED)
        await slack.wait_ack(await slack.push("events_api", lost))
        with pytest.raises(ExceptionGroup) as failed:
            await asyncio.wait_for(run, 10)
        assert failed.group_contains(HostCrash)
        assert crashing.envelopes == []
        assert list(await journal(store)) == [f"{KEY_PREFIX}Ev9"]

    async with await Store.open(path) as store:
        host = RecordingHost()
        # Slack sends nothing again: the event was acknowledged
        async with serving(channel_for(slack, store), host):
            (envelope,) = await host.wait_envelopes(1)
            assert (envelope.message_id, envelope.text) == ("D0001:9.1", "lost?")
            await until_empty(store)
            later = event_callback(message_event("next", channel="D0001", ts="9.2"))
            await slack.push("events_api", later)
            await host.wait_envelopes(2)
        assert [e.text for e in host.envelopes] == ["lost?", "next"]


async def test_killed_between_the_write_and_the_ack(slack: FakeSlack, tmp_path: Path) -> None:
    """The process dies by SIGKILL right after the write (``after_persist``): Slack got no
    ack, and the adapter started again on the same file hands the event over."""
    path = tmp_path / "state.db"
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.channels.slack.adapter_process",
        slack.api_base_url,
        str(path),
        cwd=ROOT,
        env={**os.environ, "HATCHWAY_CRASH_AT": "after_persist", "NO_PROXY": "127.0.0.1"},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        await slack.wait_connected(1, wait_s=60)
        event = event_callback(message_event("kept", channel="D0001", ts="3.1"), event_id="Ev3")
        pushed = await slack.push("events_api", event)
        assert await asyncio.wait_for(child.wait(), 60) == -signal.SIGKILL
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    assert pushed not in slack.acks
    async with await Store.open(path) as store:
        assert list(await journal(store)) == [f"{KEY_PREFIX}Ev3"]
        host = RecordingHost()
        async with serving(channel_for(slack, store), host):
            (envelope,) = await host.wait_envelopes(1)
            assert (envelope.message_id, envelope.text) == ("D0001:3.1", "kept")
            await until_empty(store)


async def test_an_event_that_cannot_be_stored_is_not_acknowledged(
    slack: FakeSlack, tmp_path: Path
) -> None:
    path = tmp_path / "state.db"
    host = RecordingHost()
    async with (
        await Store.open(path) as store,
        http_channel(slack, store, host) as (_, url),
        aiohttp.ClientSession() as http,
    ):
        body = json.dumps(
            event_callback(message_event("store me", channel="D0001", ts="4.1"), event_id="Ev4")
        )

        async def post(retry: int | None = None) -> int:
            headers = signed_headers(SECRET, body, retry=retry)
            async with http.post(url, data=body, headers=headers) as response:
                return response.status

        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
            db.execute(
                "CREATE TRIGGER refuse_journal BEFORE INSERT ON channel_state "
                "WHEN NEW.key LIKE 'journal:%' BEGIN SELECT RAISE(ABORT, 'disk full'); END"
            )
        assert await post() == 500  # no ack: Slack will send it again
        assert host.envelopes == []
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
            db.execute("DROP TRIGGER refuse_journal")
        assert await post(retry=1) == 200  # the retry is taken in, not dropped as a copy
        (envelope,) = await host.wait_envelopes(1)
        assert envelope.message_id == "D0001:4.1"
        assert await post(retry=2) == 200
        await until_empty(store)
    assert len(host.envelopes) == 1


async def test_a_copy_waits_for_the_first_to_be_stored() -> None:
    arrivals = Arrivals()
    assert arrivals.claim(["Ev1", "C1:1.1"]) is None
    # the app_mention of the same message, while the message event is being stored
    pending = arrivals.claim(["Ev2", "C1:1.1"])
    assert pending is not None and not pending.done()
    arrivals.settle(["Ev1", "C1:1.1"], stored=True)
    assert await pending is True
    retry = arrivals.claim(["Ev2"])
    assert retry is not None and await retry is True


async def test_a_copy_of_an_event_that_could_not_be_stored_is_taken_in() -> None:
    arrivals = Arrivals()
    assert arrivals.claim(["Ev1", "C1:1.1"]) is None
    pending = arrivals.claim(["Ev2", "C1:1.1"])
    assert pending is not None
    arrivals.settle(["Ev1", "C1:1.1"], stored=False)
    assert await pending is False
    assert arrivals.claim(["Ev2", "C1:1.1"]) is None  # this copy is stored itself
    assert arrivals.claim(["Ev1"]) is None  # and Slack's retry of the first is new too


async def test_events_that_find_the_queue_full_are_read_back_once_it_drains(
    slack: FakeSlack, store: Store
) -> None:
    release = asyncio.Event()
    host = RecordingHost(hold=release)
    count = QUEUE_SIZE + 5  # the worker holds one, the queue the next QUEUE_SIZE
    with capture_logs() as logs:
        async with serving(channel_for(slack, store), host):
            pushed = [
                await slack.push(
                    "events_api",
                    event_callback(message_event(f"m{i}", channel="D0001", ts=f"10.{i:06d}")),
                )
                for i in range(count)
            ]
            for envelope_id in pushed:
                await slack.wait_ack(envelope_id)
            assert len(await journal(store)) == count
            release.set()
            envelopes = await host.wait_envelopes(count, wait_s=30)
            await until_empty(store)
    assert sorted(e.text for e in envelopes) == sorted(f"m{i}" for i in range(count))
    assert len(envelopes) == count
    # 4, or 5 if every listener ran before the worker took the first event
    assert [e["event"] for e in logs].count("slack_inbound_deferred") in (4, 5)


async def test_the_daemon_answers_a_stored_event_once_even_when_slack_sends_it_again(
    slack: FakeSlack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon died after storing an event (before or after its ack): started again, it
    answers it once, and Slack's retry of it (sent when the ack never came) is dropped by
    the gateway's inbox as a redelivery."""
    monkeypatch.setenv("HATCHWAY_SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("HATCHWAY_SLACK_APP_TOKEN", APP_TOKEN)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    event = event_callback(message_event("left over", channel="D0001", ts="11.1"), event_id="Ev11")
    async with await Store.open(tmp_path / "hatchway.db") as store:
        await store.channel_state.set(CHANNEL, f"{KEY_PREFIX}Ev11", json.dumps(event))
    provider = ScriptedProvider([reply("answer to the left over"), reply("answer to later")])
    app = App(daemon_settings(slack, tmp_path), provider=provider, tools=[])
    async with app:
        await wait_for_health(app.channels[CHANNEL], HealthState.CONNECTED)
        await slack.wait_for("chat.postMessage", where=params_match({"channel": "D0001"}))
        await slack.wait_ack(await slack.push("events_api", event, retry_attempt=1))
        later = event_callback(message_event("later", channel="D0001", ts="11.2"))
        await slack.push("events_api", later)
        await slack.wait_for(
            "chat.postMessage", where=params_match({"text": "answer to later"}), count=1
        )
        await until_empty(app.store)
    texts = [c.params.get("text") for c in slack.calls_of("chat.postMessage")]
    assert texts == ["answer to the left over", "answer to later"]
    assert len(provider.requests) == 2
