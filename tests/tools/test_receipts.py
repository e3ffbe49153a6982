"""Receipts verify against the stored ``tool_calls`` row: a call runs through the real
pipeline into a real SQLite file, then ``hatchway receipts verify`` (the real parser and
handler, in-process and once as a separate process) checks it, after each stored field is
tampered with by a raw ``UPDATE``."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from bot.approval.gate import Assessment
from bot.cli import main
from bot.config import AgentConfig, Settings, load_settings
from bot.store import Store, ToolCallRecord
from bot.tools.receipt import (
    SIGNED_FIELDS,
    ReceiptSigner,
    ReceiptVerdict,
    arguments_digest,
)
from bot.tools.spec import ToolContext, ToolResult
from tests.fakes.scripted_provider import call
from tests.tools.gates import PolicyGate
from tests.tools.harness import Harness, spec

ROOT = Path(__file__).resolve().parents[2]
KEY = "receipt-key-for-tests-0123456789"
SECRET = "sk-abcdefghijklmnopqrstuvwxyz123456"
LIMIT = 300
PROCESS_WAIT_S = 60.0

# A value for each signed column that differs from what the call stored.
TAMPERED: Mapping[str, object] = {
    "turn_id": "turn-forged",
    "call_id": "call-forged",
    "session_key": "slack.team:C9",
    "channel": "slack.team",
    "tool": "read_file",
    "arguments": '{"target":"staging"}',
    "arguments_sha256": "0" * 64,
    "observation": "deployed nothing",
    "result_sha256": "0" * 64,
    "status": "not_executed",
    "synthetic": 1,
    "approved_by": "mallory",
    "duration_ms": 1.5,
    "created_at": 0.0,
}


def test_every_signed_field_has_a_tampering_case() -> None:
    assert set(TAMPERED) == set(SIGNED_FIELDS)


def long_result(arguments: Mapping[str, object]) -> str:
    return f"deployed {arguments['target']} with {SECRET}\n" + "log line\n" * 200


async def deploy(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
    return long_result(arguments)


async def fails(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
    raise RuntimeError("nope")


ARGUMENTS: Mapping[str, object] = {"target": "prod", "token": SECRET}


async def run_signed_call(store: Store, signer: ReceiptSigner) -> Harness:
    """One approved ``deploy`` (signed) and one failing call (unsigned) through the real
    pipeline, their rows in ``store``."""
    gate = PolicyGate(policy={"deploy": Assessment.ASK})  # asked, approved by alice
    harness = Harness(
        store,
        [spec("deploy", deploy, requires_approval=True), spec("fails", fails)],
        gate=gate,
        signer=signer,
        settings=AgentConfig(max_tool_result_chars=LIMIT),
    )
    await harness.run(call("deploy", dict(ARGUMENTS), id="c-deploy"), call("fails", id="c-fail"))
    return harness


# -- the signer over the stored row ------------------------------------------------------


async def test_a_stored_row_verifies_and_carries_the_full_digests(store: Store) -> None:
    signer = ReceiptSigner(KEY.encode())
    harness = await run_signed_call(store, signer)
    signed, failed = await store.tool_calls.for_turn(harness.turn_id)
    # what the row keeps is masked and cut ...
    assert SECRET not in signed.arguments and SECRET not in signed.observation
    assert len(signed.observation) <= LIMIT < len(long_result(ARGUMENTS))
    # ... and the digests bind what ran
    full = json.dumps(ARGUMENTS, sort_keys=True, separators=(",", ":"))
    assert signed.arguments_sha256 == hashlib.sha256(full.encode()).hexdigest()
    assert signed.arguments_sha256 == arguments_digest(ARGUMENTS)
    result = long_result(ARGUMENTS).encode()
    assert signed.result_sha256 == hashlib.sha256(result).hexdigest()
    assert (signed.approved_by, signed.status) == ("alice", "executed")
    assert signer.check(signed).verdict is ReceiptVerdict.VERIFIED
    # a failed call is not signed, but its row has its digests too
    assert failed.receipt is None and failed.result_sha256 is not None
    assert signer.check(failed).verdict is ReceiptVerdict.UNSIGNED
    # the receipt stays compact: version, one tag per field, one MAC
    assert signed.receipt is not None and len(signed.receipt) < 220


async def test_a_receipt_from_another_key_or_altered_is_invalid(store: Store) -> None:
    harness = await run_signed_call(store, ReceiptSigner(KEY.encode()))
    signed, _ = await store.tool_calls.for_turn(harness.turn_id)
    other = ReceiptSigner(b"another-receipt-key-0123456789ab")
    assert other.check(signed).verdict is ReceiptVerdict.RECEIPT_INVALID
    assert signed.receipt is not None
    version, tags, mac = signed.receipt.split(".")
    flipped = tags[:5] + ("A" if tags[5] != "A" else "B") + tags[6:]
    for receipt in (f"{version}.{flipped}.{mac}", "v2.garbage", "v9.x.y", "", "v2..."):
        check = ReceiptSigner(KEY.encode()).check(_with_receipt(signed, receipt))
        assert check.verdict is ReceiptVerdict.RECEIPT_INVALID, receipt


def _with_receipt(record: ToolCallRecord, receipt: str) -> ToolCallRecord:
    return replace(record, receipt=receipt)


# -- hatchway receipts verify ------------------------------------------------------------


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "hatchway.toml"
    path.write_text(
        '[storage]\npath = "state/hatchway.db"\n\n[agent]\nreceipts = true\n\n'
        '[channels.console.main]\nallowed_users = ["*"]\n',
        encoding="utf-8",
    )
    return path


@pytest.fixture
def settings(config: Path) -> Settings:
    return load_settings(config, require_provider=False, environ={})


Verify = Callable[..., Awaitable[tuple[int, str]]]


@pytest.fixture
def verify(
    config: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    kept_logging: None,
) -> Verify:
    """``hatchway receipts verify ARGS --config CONFIG`` in-process, with the receipt key
    set: its exit code and its output (stdout, then stderr)."""
    monkeypatch.setenv("HATCHWAY_RECEIPT_KEY", KEY)
    monkeypatch.delenv("HATCHWAY_CONFIG", raising=False)

    async def run(*args: str) -> tuple[int, str]:
        capsys.readouterr()  # only this command's output
        argv = ["receipts", "verify", *args, "--config", str(config)]
        code = await asyncio.to_thread(main, argv)
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    return run


async def signed_turn(settings: Settings) -> str:
    async with await Store.open(settings.database_path()) as store:
        harness = await run_signed_call(store, ReceiptSigner(KEY.encode()))
    return harness.turn_id


def tamper(settings: Settings, field: str, value: object) -> None:
    with sqlite3.connect(settings.database_path()) as conn:
        changed = conn.execute(
            f"UPDATE tool_calls SET {field} = ? WHERE call_id = 'c-deploy'", (value,)
        ).rowcount
    assert changed == 1


async def test_verify_says_ok_for_an_untouched_call_and_turn(
    settings: Settings, verify: Verify
) -> None:
    turn_id = await signed_turn(settings)
    code, out = await verify("c-deploy")
    assert code == 0, out
    assert out.startswith(f"c-deploy  deploy  turn {turn_id}  recorded ") and out.endswith("OK\n")
    code, out = await verify("--turn", turn_id)
    lines = out.splitlines()
    assert code == 0, out
    assert lines[0].endswith("  OK") and "c-fail  fails" in lines[1]
    assert lines[1].endswith(
        "no receipt (only successful calls are signed, with agent.receipts on)"
    )


@pytest.mark.parametrize("field", SIGNED_FIELDS)
async def test_verify_names_the_stored_field_that_changed(
    settings: Settings, verify: Verify, field: str
) -> None:
    turn_id = await signed_turn(settings)
    tamper(settings, field, TAMPERED[field])
    # look the call up by what was not changed
    lookup = ("c-deploy",) if field == "turn_id" else ("--turn", turn_id)
    code, out = await verify(*lookup)
    assert code == 1, out
    assert f"CHANGED since signed: {field}\n" in out


async def test_verify_names_every_field_changed_together(
    settings: Settings, verify: Verify
) -> None:
    await signed_turn(settings)
    tamper(settings, "observation", "all good")
    tamper(settings, "approved_by", "bob")
    code, out = await verify("c-deploy")
    assert code == 1 and "CHANGED since signed: observation, approved_by\n" in out


async def test_verify_reports_an_altered_receipt(settings: Settings, verify: Verify) -> None:
    await signed_turn(settings)
    with sqlite3.connect(settings.database_path()) as conn:
        conn.execute("UPDATE tool_calls SET receipt = receipt || 'x' WHERE call_id = 'c-deploy'")
    code, out = await verify("c-deploy")
    assert code == 1 and "INVALID receipt" in out


async def test_verify_reports_a_legacy_receipt_honestly(settings: Settings, verify: Verify) -> None:
    # a row as written before migration 0005: a v1 receipt over the full values, no digests
    async with await Store.open(settings.database_path()) as store:
        await store.tool_calls.record(
            ToolCallRecord(
                turn_id="turn-old",
                call_id="c-old",
                session_key="console.main:c1",
                channel="console.main",
                tool="echo",
                arguments='{"a":1}',
                status="executed",
                synthetic=False,
                observation="ok",
                duration_ms=3.0,
                receipt="v1.2025-01-01T00:00:00.000001+00:00." + "ab" * 32,
            )
        )
    code, out = await verify("c-old")
    assert code == 1
    assert out.rstrip().endswith(
        "legacy receipt, cannot be verified (it predates signing the stored row)"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("c-nope",), "no tool call recorded for call c-nope"),
        (("--turn", "turn-nope"), "no tool call recorded for turn turn-nope"),
    ],
)
async def test_verify_of_an_unknown_id_exits_2(
    settings: Settings, verify: Verify, args: tuple[str, ...], message: str
) -> None:
    await signed_turn(settings)
    code, out = await verify(*args)
    assert code == 2 and message in out


@pytest.mark.parametrize("args", [(), ("c-deploy", "--turn", "t")])
async def test_verify_usage_errors_exit_2(verify: Verify, args: tuple[str, ...]) -> None:
    with pytest.raises(SystemExit) as raised:
        await verify(*args)
    assert raised.value.code == 2


async def test_verify_without_the_key_exits_2(
    settings: Settings, verify: Verify, monkeypatch: pytest.MonkeyPatch
) -> None:
    await signed_turn(settings)
    monkeypatch.delenv("HATCHWAY_RECEIPT_KEY")
    code, out = await verify("c-deploy")
    assert code == 2 and "HATCHWAY_RECEIPT_KEY is not set" in out


@pytest.mark.slow
async def test_verify_as_a_separate_process(settings: Settings, config: Path) -> None:
    turn_id = await signed_turn(settings)
    tamper(settings, "arguments", TAMPERED["arguments"])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HATCHWAY_RECEIPT_KEY": KEY}
    env.pop("HATCHWAY_CONFIG", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "receipts",
        "verify",
        "--turn",
        turn_id,
        "--config",
        str(config),
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
    assert proc.returncode == 1, err.decode()
    first, second = out.decode().splitlines()
    assert first.startswith("c-deploy  deploy") and first.endswith(
        "CHANGED since signed: arguments"
    )
    assert second.endswith("no receipt (only successful calls are signed, with agent.receipts on)")
