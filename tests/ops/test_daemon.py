"""``hatchway run`` as a subprocess: sd_notify, health endpoints, reload, drain.

The console channel is the practical channel for a subprocess: the test writes lines to the
daemon's stdin and reads the replies from its stdout. Its ``allowed_users`` starts without the
local user (``USER=tester``), so a message is refused until a SIGHUP reload adds ``tester``.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.gateway.access import STRANGER_REPLY
from tests.ops.conftest import HeldOpenAI, write_config
from tests.ops.daemon_process import USER, WAIT_S, DaemonProcess, start_daemon

pytestmark = pytest.mark.slow


def metric_samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text page, keyed by (name, sorted labels)."""
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


async def wait_ready_status(daemon: DaemonProcess, status: int) -> dict[str, Any]:
    """Poll /readyz until it answers ``status``; fail after about a minute of other answers."""
    seen: list[int] = []
    for _ in range(300):
        code, body = await daemon.get("/readyz")
        if code == status:
            result: dict[str, Any] = json.loads(body)
            return result
        seen.append(code)
        await asyncio.sleep(0.2)
    raise AssertionError(f"/readyz never answered {status}; last answers {seen[-5:]}")


def db_rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return list(conn.execute(sql))


async def test_no_http_listener_unless_the_server_or_a_webhook_asks_for_one(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    config = write_config(
        tmp_path / "hatchway.toml", llm_url=llm.base_url, allowed_users=[USER], server=False
    )
    async with start_daemon(config) as daemon:
        await daemon.wait_notify("READY", "1")
        daemon.signal(signal.SIGTERM)
        assert await daemon.wait_exit() == 0
    assert "daemon_ready" in [e.get("event") for e in daemon.events]
    assert "http_listening" not in [e.get("event") for e in daemon.events]


async def test_ready_watchdog_reload_and_readiness(tmp_path: Path, llm: HeldOpenAI) -> None:
    config = write_config(
        tmp_path / "hatchway.toml", llm_url=llm.base_url, allowed_users=["someone-else"]
    )
    async with start_daemon(config, watchdog_usec=400_000) as daemon:
        ready = await daemon.wait_notify("READY", "1")
        assert daemon.notify.messages[0] == {"STATUS": "starting"}
        assert ready["STATUS"] == "ready: 1 channel"
        await daemon.wait_notify("WATCHDOG", "1", count=2)

        assert (await daemon.get("/healthz"))[0] == 200
        code, body = await daemon.get("/readyz")
        assert code == 200, body
        assert json.loads(body)["channels"] == {"console.main": "connected"}

        # Refused: the local user is not in allowed_users yet.
        await daemon.send_line("hello")
        await daemon.wait_stdout(STRANGER_REPLY)
        assert llm.requests == []

        # SIGHUP with the user added: the next message reaches the model.
        write_config(config, llm_url=llm.base_url, allowed_users=[USER])
        mark = len(daemon.events)
        daemon.signal(signal.SIGHUP)
        reloaded = await daemon.wait_event("config_reloaded", mark)
        assert reloaded["needs_restart"] == []
        llm.queue_text("pong-after-reload")
        await daemon.send_line("second")
        await daemon.wait_stdout("pong-after-reload")

        # An invalid file keeps the old configuration (which allows the user).
        write_config(config, llm_url=llm.base_url, allowed_users=[], extra="[agent2]\nx = 1\n")
        mark = len(daemon.events)
        daemon.signal(signal.SIGHUP)
        failed = await daemon.wait_event("config_reload_failed", mark)
        assert "agent2" in failed["error"]
        llm.queue_text("pong-old-config")
        await daemon.send_line("third")
        await daemon.wait_stdout("pong-old-config")

        code, text = await daemon.get("/metrics")
        assert code == 200
        samples = metric_samples(text)
        assert samples[("hatchway_config_reloads_total", (("result", "applied"),))] == 1
        assert samples[("hatchway_config_reloads_total", (("result", "failed"),))] == 1
        assert samples[("hatchway_turns_total", (("status", "completed"),))] == 2
        assert samples[("hatchway_channel_up", (("channel", "console.main"),))] == 1
        assert samples[("hatchway_inbox_entries", (("status", "done"),))] == 2
        count_key = ("hatchway_provider_request_seconds_count", (("provider", "default"),))
        assert samples[count_key] == 2

        # End of input stops the console channel: not ready any more, and /readyz says why.
        assert daemon.proc.stdin is not None
        daemon.proc.stdin.close()
        down = await wait_ready_status(daemon, 503)
        assert down["channels"] == {"console.main": "stopped"}
        assert any("console.main" in p for p in down["problems"])

        daemon.signal(signal.SIGTERM)
        await daemon.wait_notify("STOPPING", "1")
        assert await daemon.wait_exit() == 0


async def test_sigterm_drains_running_turn(tmp_path: Path, llm: HeldOpenAI) -> None:
    config = write_config(tmp_path / "hatchway.toml", llm_url=llm.base_url, allowed_users=[USER])
    async with start_daemon(config, notify_path=tmp_path / "notify.sock") as daemon:
        await daemon.wait_notify("READY", "1")
        llm.hold_next()
        llm.queue_text("the drained answer")
        await daemon.send_line("a question")
        async with asyncio.timeout(WAIT_S):
            await llm.arrived.wait()

        daemon.signal(signal.SIGTERM)
        stopping = await daemon.wait_notify("STOPPING", "1")
        assert stopping["STATUS"].startswith("draining")
        code, body = await daemon.get("/readyz")
        assert code == 503
        assert any("draining" in p for p in json.loads(body)["problems"])

        llm.release()
        assert await daemon.wait_exit() == 0
        await daemon.wait_stdout("the drained answer")
        finished = await daemon.wait_event("drain_finished")
        assert finished["all_turns_finished"] is True

    db = tmp_path / "hatchway.db"
    assert db_rows(db, "SELECT status FROM inbox") == [("done",)]
    bodies = [json.loads(str(b)) for (b,) in db_rows(db, "SELECT body FROM messages ORDER BY id")]
    assert [(b["role"], b["content"]) for b in bodies] == [
        ("user", "a question"),
        ("assistant", "the drained answer"),
    ]
    assert db_rows(db, "PRAGMA integrity_check") == [("ok",)]


async def test_second_sigterm_cuts_the_drain_short(tmp_path: Path, llm: HeldOpenAI) -> None:
    config = write_config(tmp_path / "hatchway.toml", llm_url=llm.base_url, allowed_users=[USER])
    async with start_daemon(config, "--drain-timeout", "3600") as daemon:
        await daemon.wait_notify("READY", "1")
        llm.hold_next()
        llm.queue_text("never sent")
        await daemon.send_line("a slow question")
        async with asyncio.timeout(WAIT_S):
            await llm.arrived.wait()

        daemon.signal(signal.SIGTERM)
        await daemon.wait_notify("STOPPING", "1")
        await daemon.wait_event("drain_started")
        daemon.signal(signal.SIGTERM)
        # With a one-hour drain timeout, exiting at all proves the drain was cut short.
        assert await daemon.wait_exit() == 0
        await daemon.wait_event("drain_shortened")
        assert not any("never sent" in line for line in daemon.stdout)

    db = tmp_path / "hatchway.db"
    assert db_rows(db, "PRAGMA integrity_check") == [("ok",)]
    # The interrupted turn ended (cancelled), so the row is settled, not left "processing".
    assert db_rows(db, "SELECT status FROM inbox") in ([("done",)], [("failed",)])
    history = " ".join(str(b) for (b,) in db_rows(db, "SELECT body FROM messages"))
    assert "never sent" not in history
