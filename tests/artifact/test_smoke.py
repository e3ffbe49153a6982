"""The smoke of the installed artifact: what a team runs first, run from the wheel (or the
image), never from the checkout.

From a temporary working folder with an environment built from nothing: ``bot`` is imported
from the venv's site-packages; ``hatchway doctor`` passes; ``hatchway run`` against the
Telegram fake and the fake LLM, on SQLite and on a PostgreSQL database with no tables
(every migration applied from the wheel), answers a message, asks for an approval, takes
the tap and runs the tool, and exits 0 on SIGTERM; ``hatchway chat`` answers a piped line
with the embedded model.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import asyncpg
import pytest

from bot.agent.loop import SHUTDOWN_MESSAGE
from tests.artifact.conftest import LLM_KEY, TOKEN
from tests.artifact.installed import Installed, Place
from tests.fakes.telegram_server import FakeTelegram, callback, message, private_chat, user
from tests.ops.daemon_process import WAIT_S, DaemonProcess
from tests.pg import PgServer, free_port
from tests.reliability.routed_llm import RoutedOpenAI
from tests.tools.workspace_files import files_named

pytestmark = pytest.mark.artifact

ROOT = Path(__file__).resolve().parents[2]
OWNER = 4004
SECRETS = {"SMOKE_TG_TOKEN": TOKEN, "SMOKE_LLM_KEY": LLM_KEY}


def write_config(
    place: Place,
    *,
    tg: FakeTelegram,
    llm: RoutedOpenAI,
    port: int,
    storage: str = "",
    auto_approve: tuple[str, ...] = (),
    owner: int = OWNER,
) -> None:
    place.config.write_text(
        f"""
[providers.default]
kind = "openai"
base_url = "{llm.base_url}"
model = "gpt-4o-mini"
api_key_env = "SMOKE_LLM_KEY"
max_retries = 0

[approval]
self_approval = true
auto_approve = {json.dumps(list(auto_approve))}

[channels.telegram.main]
token_env = "SMOKE_TG_TOKEN"
api_base_url = "{tg.base_url}"
file_base_url = "{tg.file_base_url}"
poll_timeout_s = 1
allowed_users = ["{owner}"]
approvers = ["{owner}"]

[server]
enabled = true
host = "127.0.0.1"
port = {port}

[web]
enabled = true
admins = ["telegram:{owner}"]

[logging]
format = "json"
{storage}""",
        encoding="utf-8",
    )


def test_bot_is_imported_from_the_installed_package(installed: Installed, place: Place) -> None:
    place.config.write_text("", encoding="utf-8")
    done = installed.run(
        place,
        ["-c", "import bot, channels; print(bot.__file__); print(channels.__file__)"],
        entrypoint=installed.python(),
    )
    assert done.returncode == 0, done.stderr
    paths = done.stdout.split()
    assert len(paths) == 2
    for path in paths:
        assert path.startswith(installed.site_packages_root()), path
        assert "/site-packages/" in path, path
        assert not path.startswith(str(ROOT)), path


def test_version_is_the_distributions(installed: Installed, place: Place) -> None:
    """``hatchway --version`` (``bot.__version__``) and the wheel's metadata (pyproject's
    ``version``) are written in two places: the installed package must agree with itself."""
    place.config.write_text("", encoding="utf-8")
    said = installed.run(place, ["--version"])
    metadata = installed.run(
        place,
        ["-c", "from importlib.metadata import version; print(version('hatchway'))"],
        entrypoint=installed.python(),
    )
    assert said.returncode == 0 and metadata.returncode == 0, said.stderr + metadata.stderr
    assert said.stdout.split() == ["hatchway", metadata.stdout.strip()]


async def test_doctor_passes(
    installed: Installed, place: Place, tg: FakeTelegram, llm: RoutedOpenAI
) -> None:
    write_config(place, tg=tg, llm=llm, port=free_port())
    llm.route_text("ping", "pong")  # the doctor's 1-token completion
    done = await installed.arun(place, ["doctor"], extra=SECRETS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "✗" not in done.stdout, done.stdout
    assert "config" in done.stdout and "database" in done.stdout
    assert TOKEN not in done.stdout + done.stderr
    assert LLM_KEY not in done.stdout + done.stderr


async def answer_and_approve(daemon: DaemonProcess, tg: FakeTelegram, llm: RoutedOpenAI) -> None:
    """A message answered; a tool call asked for, approved on its card, run, answered."""
    await daemon.wait_event("daemon_ready")
    status, body = await daemon.get("/healthz")
    assert status == 200, body
    chat = private_chat(OWNER)
    owner = user(OWNER, "Owner")
    llm.route_text("q-hello", "A-hello from the wheel")
    await tg.push({"message": message(chat, owner, "q-hello", message_id=1)})
    await tg.wait_for(
        "sendMessage", lambda c: c.params.get("text") == "A-hello from the wheel", wait_s=WAIT_S
    )

    llm.route_tools("q-write", [("file_write", {"path": "smoke.txt", "content": "written"})])
    llm.route_text("q-write", "A-written")
    await tg.push({"message": message(chat, owner, "q-write", message_id=2)})
    [card] = await tg.wait_for(
        "sendMessage",
        lambda c: c.params.get("chat_id") == OWNER and "reply_markup" in c.params,
        wait_s=WAIT_S,
    )
    buttons = card.params["reply_markup"]["inline_keyboard"][0]
    approve = next(b for b in buttons if "Approve" in b["text"])
    card_message = tg.bot_messages(OWNER)[-1]
    await tg.push(callback("tap-1", owner, approve["callback_data"], card_message))
    await tg.wait_for("sendMessage", lambda c: c.params.get("text") == "A-written", wait_s=WAIT_S)


async def stop(daemon: DaemonProcess) -> None:
    daemon.signal(signal.SIGTERM)
    assert await daemon.wait_exit() == 0
    await daemon.wait_event("drain_finished")


def check_no_secret(daemon: DaemonProcess) -> None:
    said = json.dumps(daemon.events) + "\n".join(daemon.stdout)
    assert TOKEN not in said and LLM_KEY not in said


async def test_run_on_sqlite_answers_approves_and_stops(
    installed: Installed, place: Place, tg: FakeTelegram, llm: RoutedOpenAI
) -> None:
    write_config(place, tg=tg, llm=llm, port=free_port())
    async with installed.daemon(place, extra=SECRETS) as daemon:
        await answer_and_approve(daemon, tg, llm)
        # the console's templates and static files are package data of the wheel
        status, page = await daemon.get("/console/")
        assert status == 200 and "<form" in page, page[:500]
        status, css = await daemon.get("/console/static/console.css")
        assert status == 200 and css.strip(), css[:200]
        await stop(daemon)
    check_no_secret(daemon)
    [written] = files_named(place.state / "workspace", "smoke.txt")
    assert written.read_text(encoding="utf-8") == "written"
    assert (place.state / "hatchway.db").is_file()


async def test_run_on_postgres_migrates_from_the_wheel(
    installed: Installed,
    place: Place,
    tg: FakeTelegram,
    llm: RoutedOpenAI,
    pg_server: PgServer,
    pg_empty_url: str,
) -> None:
    write_config(
        place, tg=tg, llm=llm, port=free_port(), storage=f'\n[storage]\nurl = "{pg_empty_url}"\n'
    )
    async with installed.daemon(place, extra=SECRETS) as daemon:
        await answer_and_approve(daemon, tg, llm)
        await stop(daemon)
    check_no_secret(daemon)
    shipped = sorted(p.name for p in (ROOT / "bot/store/postgres/migrations").glob("*.sql"))
    applied = [e["migration"] for e in daemon.events if e.get("event") == "db_migration_applying"]
    assert applied == shipped
    assert not (place.state / "hatchway.db").exists()
    conn = await asyncpg.connect(pg_empty_url)
    try:
        rows = await conn.fetch("SELECT status FROM approvals")
        audit = await conn.fetch("SELECT decision FROM audit")
    finally:
        await conn.close()
    assert [r["status"] for r in rows] == ["approved"]
    assert [r["decision"] for r in audit] == ["approved"]


def test_chat_answers_a_piped_line_with_the_embedded_model(
    installed: Installed, place: Place
) -> None:
    place.config.write_text("", encoding="utf-8")
    done = installed.run(place, ["chat"], stdin="Say hello\n")
    assert done.returncode == 0, done.stdout + done.stderr
    # piped input: the banner goes to stderr, the answers alone to stdout
    assert "embedded" in done.stderr and "Ctrl-D quits" in done.stderr, done.stderr
    assert "Ctrl-D quits" not in done.stdout, done.stdout
    assert done.stdout.strip(), done.stderr  # an answer
    assert (place.state / "hatchway.db").is_file()


async def test_sigterm_drains_a_running_turn_then_exits_0(
    installed: Installed, place: Place, tg: FakeTelegram, llm: RoutedOpenAI
) -> None:
    """As under systemd: the running turn gets the drain, is cancelled when it ends, its
    sender is told to ask again, and the process exits 0 (in the image: as PID 1)."""
    write_config(place, tg=tg, llm=llm, port=free_port())
    llm.route_hang("q-hold")
    async with installed.daemon(place, "--drain-timeout", "1", extra=SECRETS) as daemon:
        await daemon.wait_event("daemon_ready")
        await tg.push(
            {"message": message(private_chat(OWNER), user(OWNER, "Owner"), "q-hold", message_id=1)}
        )
        await llm.wait_arrival("q-hold", wait_s=WAIT_S)
        daemon.signal(signal.SIGTERM)
        assert await daemon.wait_exit() == 0
    names = [e.get("event") for e in daemon.events]
    assert names.index("drain_started") < names.index("drain_finished")
    await tg.wait_for(
        "sendMessage", lambda c: c.params.get("text") == SHUTDOWN_MESSAGE, wait_s=WAIT_S
    )
