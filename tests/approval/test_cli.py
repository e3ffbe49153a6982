"""The ops commands against the daemon's database file.

Each command runs through :func:`bot.cli.main` — the real parser, handlers and SQLite file —
on a thread of its own with its own event loop and its own connection, as a separate process
would, and its stdout is read with ``capsys``. The tests marked slow run the entry point
itself (``python -m bot.cli``) as a separate process next to a waiting daemon.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import pwd
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from bot.approval.grants import new_grant
from bot.channel import CardState
from bot.cli import main
from bot.commands.operator import UNVERIFIED, operator_name
from bot.config import Settings, load_settings
from bot.envelope import Sender
from bot.gateway.pairing import PairingBook
from bot.store import Store
from bot.store.audit import Decision
from tests.approval.conftest import SLACK, make_request, service_for
from tests.fakes.channel import FakeChannel

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = pwd.getpwuid(os.geteuid()).pw_name  # the account the tests run as
WAIT_S = 15.0  # a decision is noticed within one 50 ms poll; this only bounds a failure
PROCESS_WAIT_S = 60.0  # a fresh interpreter importing the CLI, on a loaded machine

T = TypeVar("T")
Hatchway = Callable[..., Awaitable[tuple[int, str]]]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "hatchway.toml"
    path.write_text(
        '[storage]\npath = "state/hatchway.db"\n\n[approval]\ntimeout_s = 600\n\n'
        '[channels.slack.team]\nallowed_users = ["*"]\napprovers = ["U_ADMIN"]\n',
        encoding="utf-8",
    )
    return path


@pytest.fixture
def settings(config: Path) -> Settings:
    return load_settings(config, require_provider=False, environ={})


def where(settings: Settings) -> str:
    """The database as the commands name it: the file, its state folder and where that came
    from (the config's folder, by default)."""
    return (
        f"{settings.database_path()} (state folder {settings.state_dir}, from the default: the "
        f"folder of {Path(settings.state_dir) / 'hatchway.toml'})"
    )


def command(config: Path, args: tuple[str, ...]) -> list[str]:
    """``ARGS`` with ``--config CONFIG`` added at the end."""
    return [*args, "--config", str(config)]


@pytest.fixture
def hatchway(
    config: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    kept_logging: None,
) -> Hatchway:
    """``hatchway ARGS --config CONFIG`` as operator ``ops``: its exit code and stdout."""
    monkeypatch.setenv("USER", "ops")
    monkeypatch.delenv("SUDO_USER", raising=False)
    monkeypatch.delenv("HATCHWAY_CONFIG", raising=False)

    async def run(*args: str) -> tuple[int, str]:
        capsys.readouterr()  # only this command's output
        code = await asyncio.to_thread(main, command(config, args))
        return code, capsys.readouterr().out

    return run


async def entry_point(config: Path, *args: str) -> tuple[int, str]:
    """``python -m bot.cli ARGS --config CONFIG`` in a separate process, as ``ops``."""
    env = {**os.environ, "USER": "ops", "PYTHONPATH": str(ROOT)}
    env.pop("HATCHWAY_CONFIG", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        *command(config, args),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        async with asyncio.timeout(PROCESS_WAIT_S):
            out, err = await proc.communicate()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None, err.decode()
    return proc.returncode, out.decode()


async def within(awaitable: Awaitable[T], seconds: float = WAIT_S) -> T:
    async with asyncio.timeout(seconds):
        return await awaitable


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    async with await Store.open(settings.database_path()) as opened:
        yield opened


# -- approvals ---------------------------------------------------------------------------


async def test_approvals_list_and_approve_resolve_a_waiting_ask(
    settings: Settings, store: Store, hatchway: Hatchway
) -> None:
    channel = FakeChannel(SLACK)
    service = service_for(settings, store, channel, poll_interval_s=0.05)
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(within(service.ask(make_request())))
        approval_id = (await within(channel.next_card())).card.approval_id
        code, listing = await hatchway("approvals", "list")
        assert code == 0 and approval_id in listing and "command: ls -la" in listing
        code, out = await hatchway("approvals", "approve", approval_id)
        assert (code, out.strip()) == (0, f"approved {approval_id}")
    decision = task.result()
    # USER says "ops", which the account running the tests is not: a claim, so marked
    assert (decision.verdict, decision.decided_by) == (
        Decision.APPROVED,
        f"operator:ops{'' if ACCOUNT == 'ops' else UNVERIFIED}",
    )
    assert channel.edits[-1][1].state is CardState.APPROVED
    code, out = await hatchway("approvals", "list")
    # the empty answer says where it looked
    assert (code, out) == (0, f"no pending approval requests in {where(settings)}\n")
    code, out = await hatchway("approvals", "deny", approval_id)
    assert (code, out.strip()) == (1, f"{approval_id} was already decided")


async def test_approvals_list_shows_waiting_reminders_and_escalation(
    store: Store, hatchway: Hatchway
) -> None:
    import time

    from bot.approval import audit
    from bot.store.approvals import ApprovalRecord

    now = time.time()
    record = ApprovalRecord(
        id="ab" * 12,
        channel="slack.main",
        conversation_id="C1",
        thread_id=None,
        session_key="slack.main:C1",
        requester="U1",
        requester_name="Ann",
        tool="shell",
        fingerprint="f" * 64,
        summary=("command: ls",),
        ask_reason="it has side effects",
        created_at=now - 3700,
        expires_at=now + 600,
    )
    await store.approvals.create(record)
    code, out = await hatchway("approvals", "list")
    assert code == 0 and "reminders sent 0  escalated to nobody" in out
    row = audit.entry_for_record(
        record, at=now, decision=Decision.REMINDED, decided_by="runtime", reason="reminder 1 of 3"
    )
    assert await store.approvals.claim_reminder(record.id, sent=0, at=now, audit=row)
    assert not await store.approvals.claim_reminder(record.id, sent=0, at=now, audit=row)
    escalated = audit.entry_for_record(
        record, at=now, decision=Decision.ESCALATED, decided_by="runtime", reason="escalated"
    )
    assert await store.approvals.claim_escalation(
        record.id, ["U9"], at=now, audit=escalated, roles=["sre"]
    )
    assert not await store.approvals.claim_escalation(record.id, ["U8"], at=now, audit=escalated)
    code, out = await hatchway("approvals", "list")
    assert code == 0 and "waiting 1h 01m  reminders sent 1  escalated to U9, role sre" in out
    decisions = [e.decision for e in await store.audit.since()]
    assert decisions == [Decision.REMINDED, Decision.ESCALATED]


async def test_approvals_deny_of_an_unknown_id_fails(hatchway: Hatchway, store: Store) -> None:
    code, out = await hatchway("approvals", "deny", "nope")
    assert code == 1 and "no pending request with that id" in out


# -- grants ------------------------------------------------------------------------------


async def test_grants_list_and_revoke(settings: Settings, store: Store, hatchway: Hatchway) -> None:
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
    code, out = await hatchway("grants", "list")
    assert code == 0 and f"{grant_id}  active" in out and "channel:slack.team" in out
    assert await hatchway("grants", "revoke", str(grant_id)) == (0, f"revoked grant {grant_id}\n")
    assert (await hatchway("grants", "revoke", str(grant_id)))[0] == 1
    assert await hatchway("grants", "list") == (0, f"no grants in {where(settings)}\n")


# -- audit -------------------------------------------------------------------------------


async def test_audit_exports_decisions(
    settings: Settings, store: Store, hatchway: Hatchway
) -> None:
    await service_for(settings, store).ask(make_request())  # auto-denied: no channel running

    code, out = await hatchway("audit", "--since", "1h")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [(r["tool"], r["decision"], r["decided_by"]) for r in rows] == [
        ("shell", "auto_denied", "runtime")
    ]
    code, out = await hatchway("audit", "--format", "csv", "--since", "2000-01-01")
    assert code == 0
    assert [r["decision"] for r in csv.DictReader(io.StringIO(out))] == ["auto_denied"]
    assert await hatchway("audit", "--since", "yesterday") == (2, "")


@pytest.mark.parametrize(
    "args",
    [
        ("audit", "list", "--since", "1h"),
        ("audit", "--since", "1h", "list"),  # options before the action are kept
        ("audit", "--since", "1h"),  # the bare noun stays an alias of "audit list"
    ],
)
async def test_audit_list_is_the_action_like_every_other_noun(
    settings: Settings, store: Store, hatchway: Hatchway, args: tuple[str, ...]
) -> None:
    await service_for(settings, store).ask(make_request())
    code, out = await hatchway(*args)
    assert code == 0
    assert [json.loads(line)["decision"] for line in out.splitlines()] == ["auto_denied"]


async def test_audit_list_takes_its_own_options(
    settings: Settings, store: Store, hatchway: Hatchway
) -> None:
    await service_for(settings, store).ask(make_request())
    code, out = await hatchway("audit", "list", "--format", "csv", "--since", "2000-01-01")
    assert code == 0
    assert [r["decision"] for r in csv.DictReader(io.StringIO(out))] == ["auto_denied"]
    assert await hatchway("audit", "list", "--since", "yesterday") == (2, "")


async def test_a_cli_decision_records_the_name_given_with_as(
    settings: Settings, store: Store, hatchway: Hatchway
) -> None:
    channel = FakeChannel(SLACK)
    service = service_for(settings, store, channel, poll_interval_s=0.05)
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(within(service.ask(make_request())))
        approval_id = (await within(channel.next_card())).card.approval_id
        code, _out = await hatchway("approvals", "deny", approval_id, "--as", "Ana\u200b Lee")
        assert code == 0
    assert task.result().decided_by == "operator:Ana\\u200b Lee (unverified)"


@pytest.mark.parametrize(
    ("claimed", "environ", "name"),
    [
        (None, {"SUDO_USER": "bob", "USER": "root"}, "bob"),  # sudo: who typed it
        (None, {"USER": "ops"}, "ops"),
        ("ana", {"SUDO_USER": "bob", "USER": "ops"}, "ana"),  # --as first
        ("   ", {"USER": "ops"}, "ops"),  # a blank --as is no name
        (None, {}, ACCOUNT),  # nothing said: the account's own name
        ("a\nb", {}, "a ⏎ b"),  # never a line of its own in a listing
    ],
)
def test_the_operator_name_and_when_it_is_only_a_claim(
    monkeypatch: pytest.MonkeyPatch, claimed: str | None, environ: dict[str, str], name: str
) -> None:
    for key in ("SUDO_USER", "USER", "LOGNAME"):
        monkeypatch.delenv(key, raising=False)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    vouched = name == ACCOUNT and ACCOUNT not in ("root", "hatchway")
    assert operator_name(claimed) == f"operator:{name}" + ("" if vouched else UNVERIFIED)


# -- pairing -----------------------------------------------------------------------------


async def test_pairing_list_and_approve(store: Store, hatchway: Hatchway) -> None:
    pairing = await PairingBook(store, lambda: 4e9).issue(SLACK, Sender(id="U_EVE"))
    assert pairing is not None

    code, out = await hatchway("pairing", "list")
    assert code == 0 and pairing.code in out and "pending" in out
    code, out = await hatchway("pairing", "approve", pairing.code)
    assert code == 0 and "Paired" in out
    assert await store.pairings.is_paired(str(SLACK), "U_EVE")
    (record,) = await store.pairings.for_user(str(SLACK), "U_EVE")
    assert record.approved_by == f"operator:ops{'' if ACCOUNT == 'ops' else UNVERIFIED}"


# -- the entry point, as a separate process ----------------------------------------------


@pytest.mark.slow
async def test_entry_point_decides_for_a_daemon_from_another_process(
    config: Path, settings: Settings, store: Store
) -> None:
    channel = FakeChannel(SLACK)
    service = service_for(settings, store, channel, poll_interval_s=0.05)
    async with asyncio.TaskGroup() as tg:
        asking = tg.create_task(within(service.ask(make_request()), PROCESS_WAIT_S))
        approval_id = (await within(channel.next_card())).card.approval_id
        # two independent processes at once: one decides, one fails (its status must reach
        # the shell through ``sys.exit``)
        (code, out), (failed, _) = await asyncio.gather(
            entry_point(config, "approvals", "approve", approval_id),
            entry_point(config, "approvals", "deny", "no-such-id"),
        )
        assert (code, out.strip()) == (0, f"approved {approval_id}")
        assert failed == 1
    decision = asking.result()
    # USER says "ops", which the account running the tests is not: a claim, so marked
    assert (decision.verdict, decision.decided_by) == (
        Decision.APPROVED,
        f"operator:ops{'' if ACCOUNT == 'ops' else UNVERIFIED}",
    )
    assert channel.edits[-1][1].state is CardState.APPROVED
