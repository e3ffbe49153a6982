"""A scheduled run cut off by ``kill -9``, with real daemon processes.

The daemon runs as a subprocess (``python -m bot.cli run``) with a Telegram channel that
long-polls the loopback Bot API fake, and an OpenAI-compatible fake that answers by a marker
in the request (the job's task carries its own). The job is stored due before the first
start; the fake holds the run's model request, and once the request has arrived the daemon
is killed mid-turn. After a restart on the same state directory:

* the run is done again once and its answer reaches the job's conversation exactly once,
  with no "ask again" line there, while a person's direct message cut off by the same kill
  is still told to ask again;
* a re-run cut off by a second kill ends ``failed`` with a log line at the third start, and
  is not run a third time;
* a run cut off by a stop (SIGTERM past the drain budget) says nothing in the job's
  conversation either, and is run again once at the next start.
"""

from __future__ import annotations

import signal
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.gateway import SHUTDOWN_MESSAGE
from bot.gateway.recovery import RERUN_CUT_OFF, RERUN_QUEUED, RERUN_SUFFIX
from bot.schedules.book import ScheduleBook
from bot.schedules.job import JobSpec, StoredTarget
from bot.store import Store
from tests.fakes.openai_server import Hang, Reply
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.ops.daemon_process import WAIT_S, DaemonProcess, start_daemon
from tests.reliability.routed_llm import RoutedOpenAI

# up to three daemon processes per test, killed and started again: .ci/run's second stage
pytestmark = [pytest.mark.slow, pytest.mark.long]

TOKEN = "717171:AAschedule-crash-token-for-the-fake-bot-api"
LLM_KEY = "schedule-crash-model-key-4f1e"
JOB_CHAT = 1001  # the job was created in this DM, and announces back to it
PERSON_CHAT = 1002


def write_config(path: Path, *, tg: FakeTelegram, llm: RoutedOpenAI) -> Path:
    path.write_text(
        f"""
[agent]
system_prompt = "test"
turn_timeout_s = 600

[providers.default]
kind = "openai"
base_url = "{llm.base_url}"
model = "gpt-4o-mini"
api_key_env = "SCHEDULE_CRASH_LLM_KEY"
max_retries = 0
timeout_s = 600

[channels.telegram.main]
token_env = "SCHEDULE_CRASH_TG_TOKEN"
api_base_url = "{tg.base_url}"
file_base_url = "{tg.file_base_url}"
poll_timeout_s = 1
reconnect_initial_s = 0.05
reconnect_max_s = 0.5
allowed_users = ["{JOB_CHAT}", "{PERSON_CHAT}"]

[schedules]
tick_s = 0.2

[logging]
level = "info"
format = "json"
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(TOKEN) as fake:
        yield fake


@pytest.fixture
async def llm() -> AsyncIterator[RoutedOpenAI]:
    fake = RoutedOpenAI()
    async with fake:
        yield fake


@pytest.fixture
def config(
    tmp_path: Path, tg: FakeTelegram, llm: RoutedOpenAI, monkeypatch: pytest.MonkeyPatch
) -> Path:
    monkeypatch.setenv("SCHEDULE_CRASH_TG_TOKEN", TOKEN)
    monkeypatch.setenv("SCHEDULE_CRASH_LLM_KEY", LLM_KEY)
    return write_config(tmp_path / "hatchway.toml", tg=tg, llm=llm)


async def store_due_job(db: Path, task: str) -> str:
    """A yearly job created in the job chat, stored so that an occurrence is due now (as
    ``schedule_add`` stores it; only its next run is moved). Returns the occurrence's
    message id."""
    chat = StoredTarget(channel="telegram.main", conversation_id=str(JOB_CHAT))
    spec = JobSpec(
        prompt=task,
        cron="0 0 1 1 *",
        origin=chat,
        target=chat,
        creator_id=str(JOB_CHAT),
        creator_name="Ann",
        origin_is_direct=True,
    )
    due = int(time.time()) - 1
    async with await Store.open(db) as store:
        job = await ScheduleBook(store.schedules).add(spec, now=time.time())
        assert job.next_run_at is not None
        await store.schedules.mark_run(
            job.id, run_at=job.next_run_at, last_run_at=None, next_run_at=due
        )
    return f"schedule:{job.id}:{due}"


def texts_to(tg: FakeTelegram, chat: int) -> list[str]:
    return [
        str(c.params.get("text")) for c in tg.calls_of("sendMessage") if c.params["chat_id"] == chat
    ]


def inbox(db: Path) -> dict[str, tuple[str, str | None]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT message_id, status, error FROM inbox").fetchall()
    return {message_id: (status, error) for message_id, status, error in rows}


async def kill(daemon: DaemonProcess) -> None:
    daemon.proc.kill()  # SIGKILL: no drain, no cleanup
    assert await daemon.wait_exit() == -signal.SIGKILL


async def stop(daemon: DaemonProcess) -> None:
    daemon.signal(signal.SIGTERM)
    assert await daemon.wait_exit() == 0


def events_named(daemon: DaemonProcess, name: str) -> list[dict[str, object]]:
    return [e for e in daemon.events if e.get("event") == name]


async def test_a_run_cut_off_by_kill_9_is_answered_once_after_restart(
    tmp_path: Path, config: Path, tg: FakeTelegram, llm: RoutedOpenAI
) -> None:
    db = tmp_path / "hatchway.db"
    occurrence = await store_due_job(db, "job-alpha: remind the team to stretch")
    llm.answer("job-alpha", Hang(), Reply(text="A-job: time to stretch"))
    llm.route_hang("q-person")

    async with start_daemon(config) as first:
        await first.wait_notify("READY", "1")
        await tg.push(
            {
                "message": message(
                    private_chat(PERSON_CHAT), user(PERSON_CHAT), "q-person", message_id=1
                )
            }
        )
        await llm.wait_arrival("job-alpha")
        await llm.wait_arrival("q-person")
        await kill(first)

    async with start_daemon(config) as second:
        await second.wait_notify("READY", "1")
        await tg.wait_for(
            "sendMessage", lambda c: c.params.get("text") == "A-job: time to stretch", wait_s=WAIT_S
        )
        await tg.wait_for(
            "sendMessage",
            lambda c: (
                c.params["chat_id"] == PERSON_CHAT and c.params.get("text") == SHUTDOWN_MESSAGE
            ),
            wait_s=WAIT_S,
        )
        await stop(second)
        [rerun] = events_named(second, "background_run_rerun")

    assert texts_to(tg, JOB_CHAT) == ["A-job: time to stretch"]  # once, and no "ask again"
    assert texts_to(tg, PERSON_CHAT) == [SHUTDOWN_MESSAGE]
    assert llm.arrivals["job-alpha"] == 2
    assert rerun["message_id"] == occurrence
    rows = inbox(db)
    assert rows[occurrence] == ("failed", RERUN_QUEUED)
    assert rows[occurrence + RERUN_SUFFIX] == ("done", None)
    assert sorted(status for status, _ in rows.values()) == ["done", "failed", "failed"]


async def test_a_rerun_cut_off_again_ends_failed_and_is_not_run_again(
    tmp_path: Path, config: Path, tg: FakeTelegram, llm: RoutedOpenAI
) -> None:
    db = tmp_path / "hatchway.db"
    occurrence = await store_due_job(db, "job-beta: post the on-call summary")
    llm.answer("job-beta", Hang(), Hang(), Reply(text="A-beta: never sent"))
    llm.route_text("q-after", "A-after")

    async with start_daemon(config) as first:
        await first.wait_notify("READY", "1")
        await llm.wait_arrival("job-beta")
        await kill(first)

    async with start_daemon(config) as second:
        await second.wait_notify("READY", "1")
        await llm.wait_arrival("job-beta", count=2)
        await kill(second)

    async with start_daemon(config) as third:
        await third.wait_notify("READY", "1")
        await third.wait_event("background_run_failed")
        # the daemon goes on: a person's message is answered
        await tg.push(
            {
                "message": message(
                    private_chat(PERSON_CHAT), user(PERSON_CHAT), "q-after", message_id=1
                )
            }
        )
        await tg.wait_for("sendMessage", lambda c: c.params.get("text") == "A-after", wait_s=WAIT_S)
        await stop(third)
        [failed] = events_named(third, "background_run_failed")

    assert llm.arrivals["job-beta"] == 2
    assert texts_to(tg, JOB_CHAT) == []  # nobody asked there: no "ask again", no answer
    assert failed["level"] == "error" and failed["message_id"] == occurrence + RERUN_SUFFIX
    rows = inbox(db)
    assert rows[occurrence] == ("failed", RERUN_QUEUED)
    assert rows[occurrence + RERUN_SUFFIX] == ("failed", RERUN_CUT_OFF)


async def test_a_run_cut_off_by_a_stop_says_nothing_and_is_run_again(
    tmp_path: Path, config: Path, tg: FakeTelegram, llm: RoutedOpenAI
) -> None:
    db = tmp_path / "hatchway.db"
    occurrence = await store_due_job(db, "job-gamma: water the plants")
    llm.answer("job-gamma", Hang(), Reply(text="A-gamma: plants watered"))

    async with start_daemon(config, "--drain-timeout", "0.2") as first:
        await first.wait_notify("READY", "1")
        await llm.wait_arrival("job-gamma")
        await stop(first)  # the drain budget runs out: the run is cancelled
        [interrupted] = events_named(first, "background_run_interrupted")

    assert texts_to(tg, JOB_CHAT) == []  # no "shutting down… ask again" where nobody asked
    assert inbox(db)[occurrence][0] == "processing"  # left for recovery

    async with start_daemon(config) as second:
        await second.wait_notify("READY", "1")
        await tg.wait_for(
            "sendMessage",
            lambda c: c.params.get("text") == "A-gamma: plants watered",
            wait_s=WAIT_S,
        )
        await stop(second)

    assert interrupted["reason"] == "shutdown"
    assert texts_to(tg, JOB_CHAT) == ["A-gamma: plants watered"]
    assert llm.arrivals["job-gamma"] == 2
    rows = inbox(db)
    assert rows[occurrence] == ("failed", RERUN_QUEUED)
    assert rows[occurrence + RERUN_SUFFIX] == ("done", None)
