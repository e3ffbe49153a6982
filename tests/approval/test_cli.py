"""The ops commands, run as real separate processes against the daemon's database file."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import sys
from pathlib import Path

import pytest

from bot.approval.gate import Verdict
from bot.approval.grants import new_grant
from bot.channel import CardState
from bot.config import load_settings
from bot.envelope import Sender
from bot.pairing import PairingBook
from bot.store import Store
from tests.approval.conftest import SLACK, make_request, service_for
from tests.approval.fake_channel import FakeBackchannel

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # each command is a fresh Python process


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "hatchway.toml"
    path.write_text(
        '[storage]\npath = "state/hatchway.db"\n\n[approval]\ntimeout_s = 600\n\n'
        '[channels.slack.team]\nallowed_users = ["*"]\napprovers = ["U_ADMIN"]\n',
        encoding="utf-8",
    )
    return path


async def hatchway(config: Path, *args: str) -> tuple[int, str]:
    env = {**os.environ, "USER": "ops", "PYTHONPATH": str(ROOT)}
    env.pop("HATCHWAY_CONFIG", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        *args,
        "--config",
        str(config),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, _err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_cli_approve_resolves_waiting_ask_in_daemon(config: Path) -> None:
    settings = load_settings(config, require_provider=False, environ={})
    channel = FakeBackchannel(SLACK)
    async with await Store.open(settings.database_path()) as store:
        service = service_for(settings, store, channel, poll_interval_s=0.05)
        async with asyncio.TaskGroup() as tg:
            task = tg.create_task(service.ask(make_request()))
            posted = await channel.next_card()
            approval_id = posted.card.approval_id
            code, listing = await hatchway(config, "approvals", "list")
            assert code == 0 and approval_id in listing and "command: ls -la" in listing
            code, out = await hatchway(config, "approvals", "approve", approval_id)
            assert (code, out.strip()) == (0, f"approved {approval_id}")
        decision = task.result()
        assert (decision.verdict, decision.decided_by) == (Verdict.APPROVED, "operator:ops")
        assert channel.edits[-1][1].state is CardState.APPROVED
        code, _ = await hatchway(config, "approvals", "deny", approval_id)
        assert code == 1


async def test_cli_grants_audit_and_pairing(config: Path) -> None:
    settings = load_settings(config, require_provider=False, environ={})
    async with await Store.open(settings.database_path()) as store:
        grant_id = await store.grants.create(
            new_grant(
                tool="shell",
                scope="channel",
                channel=SLACK,
                conversation_id="C1",
                granted_by="U_ADMIN",
                now=1.0,
                ttl_s=None,
            )
        )
        service = service_for(settings, store)
        await service.ask(make_request())  # auto-denied: no channel running
        pairing = await PairingBook(store, lambda: 4e9).issue(SLACK, Sender(id="U_EVE"))
        assert pairing is not None

    code, out = await hatchway(config, "grants", "list")
    assert code == 0 and f"{grant_id}  active" in out and "channel:slack.team" in out
    assert (await hatchway(config, "grants", "revoke", str(grant_id)))[0] == 0
    assert (await hatchway(config, "grants", "revoke", str(grant_id)))[0] == 1
    assert (await hatchway(config, "grants", "list"))[1].strip() == "no grants"

    code, out = await hatchway(config, "audit", "--since", "1h")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [(r["tool"], r["decision"], r["decided_by"]) for r in rows] == [
        ("shell", "auto_denied", "runtime")
    ]
    code, out = await hatchway(config, "audit", "--format", "csv", "--since", "2000-01-01")
    assert [r["decision"] for r in csv.DictReader(io.StringIO(out))] == ["auto_denied"]
    assert (await hatchway(config, "audit", "--since", "yesterday"))[0] == 2

    code, out = await hatchway(config, "pairing", "list")
    assert code == 0 and pairing.code in out and "pending" in out
    code, out = await hatchway(config, "pairing", "approve", pairing.code)
    assert code == 0 and "Paired" in out
    async with await Store.open(settings.database_path()) as store:
        assert await store.pairings.is_paired(str(SLACK), "U_EVE")
        (record,) = await store.pairings.for_user(str(SLACK), "U_EVE")
        assert record.approved_by == "operator:ops"
