"""Where the ops commands look for the service's state, and what they do when it is not there.

The service's database is a real SQLite file with a pending approval in ``var/lib/hatchway``;
the config is ``etc/hatchway/hatchway.toml``, with no ``state_dir`` (the obvious invocation
next to a service that was never told about ``HATCHWAY_STATE_DIR``). Every command run
without being pointed at the state creates nothing anywhere under the test's folder, says
which file it looked for, the state folder and the rule that chose it, and exits 1; pointed
at it (``--state-dir``, ``HATCHWAY_STATE_DIR``, ``state_dir``) it answers. The commands run
through :func:`bot.cli.main` in process, and through the installed ``hatchway`` script as
separate processes.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from bot.cli import main
from bot.ops.state import StateSource, locate
from bot.store import Store
from tests.store.records import approval_row

pytestmark = pytest.mark.usefixtures("kept_logging")

APPROVAL = "ap-waiting"

READ_ONLY = [
    ("approvals", "list"),
    ("grants", "list"),
    ("audit",),
    ("usage",),
    ("receipts", "verify", "--turn", "t-1"),
    ("pairing", "list"),
    ("schedules", "list"),
]
WRITING = [
    ("approvals", "approve", APPROVAL),
    ("approvals", "deny", APPROVAL),
    ("grants", "revoke", "1"),
    ("forget", "--user", "1001"),
    ("pairing", "approve", "ABC123"),
    ("schedules", "remove", "job-1"),
    ("web", "login-link", "telegram:1001"),
]
HINT = "--state-dir DIR, HATCHWAY_STATE_DIR=DIR or state_dir in the config"


def set_state_dir(config: Path, folder: Path) -> None:
    config.write_text(f'state_dir = "{folder}"\n' + config.read_text(encoding="utf-8"))


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


async def service_state(folder: Path) -> None:
    """The service's database as its daemon left it: migrated, a request waiting, closed."""
    with capture_logs():
        async with await Store.open(folder / "hatchway.db") as store:
            await approval_row(
                store,
                APPROVAL,
                requester="1001",
                conversation="-100",
                status="pending",
                decided_by=None,
                created_at=time.time(),
            )


@pytest.fixture(scope="module")
def service_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The service's database file, made once for the module (copied into each test)."""
    folder = tmp_path_factory.mktemp("service")
    asyncio.run(service_state(folder))
    return folder / "hatchway.db"


@pytest.fixture
def etc(tmp_path: Path, service_database: Path) -> Path:
    """The config (no ``state_dir``), beside the service's state in ``var/lib/hatchway``."""
    state = tmp_path / "var/lib/hatchway"
    state.mkdir(parents=True)
    shutil.copyfile(service_database, state / "hatchway.db")
    config = tmp_path / "etc/hatchway/hatchway.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '[channels.telegram.main]\nallowed_users = ["1001"]\napprovers = ["2002"]\n',
        encoding="utf-8",
    )
    return config


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HATCHWAY_STATE_DIR", "HATCHWAY_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("USER", "ops")


async def hatchway(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", READ_ONLY + WRITING, ids=" ".join)
async def test_a_command_not_pointed_at_the_state_creates_nothing_and_says_where_it_looked(
    tmp_path: Path, etc: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    before = tree(tmp_path)
    code, out, err = await hatchway(capsys, *command, "--config", str(etc))
    assert (code, out) == (1, "")
    folder = etc.parent
    assert err.startswith(
        f"hatchway: no database at {folder}/hatchway.db (state folder {folder}, from the "
        f"default: the folder of {etc}): point the command at the service's state with "
    )
    assert HINT in err and "nothing was created" in err
    assert tree(tmp_path) == before


@pytest.mark.parametrize("command", READ_ONLY, ids=" ".join)
async def test_pointed_at_the_state_a_read_only_command_answers(
    tmp_path: Path, etc: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    state = tmp_path / "var/lib/hatchway"
    code, out, err = await hatchway(
        capsys, *command, "--config", str(etc), "--state-dir", str(state)
    )
    # receipts verify of an unknown turn is status 2 (its own rule), not "no database"
    assert code == (2 if command[0] == "receipts" else 0), err
    assert "no database" not in err
    if command == ("approvals", "list"):
        assert APPROVAL in out


async def test_the_command_line_wins_over_the_environment_which_wins_over_the_file(
    tmp_path: Path, etc: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "var/lib/hatchway"
    empty = tmp_path / "empty"
    set_state_dir(etc, empty)

    code, _, err = await hatchway(capsys, "approvals", "list", "--config", str(etc))
    assert code == 1 and f"(state folder {empty}, from state_dir in {etc})" in err

    monkeypatch.setenv("HATCHWAY_STATE_DIR", str(empty))
    code, _, err = await hatchway(capsys, "grants", "list", "--config", str(etc))
    assert code == 1 and f"(state folder {empty}, from HATCHWAY_STATE_DIR)" in err

    monkeypatch.setenv("HATCHWAY_STATE_DIR", str(state))
    code, out, _ = await hatchway(capsys, "approvals", "list", "--config", str(etc))
    assert code == 0 and APPROVAL in out

    code, _, err = await hatchway(
        capsys, "approvals", "list", "--config", str(etc), "--state-dir", str(empty)
    )
    assert code == 1 and f"(state folder {empty}, from --state-dir)" in err
    assert not empty.exists()


@pytest.mark.parametrize(
    ("file_sets", "env", "flag", "source"),
    [
        (False, False, False, StateSource.CONFIG_FOLDER),
        (True, False, False, StateSource.CONFIG),
        (True, True, False, StateSource.ENVIRONMENT),
        (True, True, True, StateSource.COMMAND_LINE),
        (False, False, True, StateSource.COMMAND_LINE),
    ],
)
def test_locate_names_the_rule_that_chose_the_folder(
    tmp_path: Path, file_sets: bool, env: bool, flag: bool, source: StateSource
) -> None:
    config = tmp_path / "conf/hatchway.toml"
    config.parent.mkdir()
    config.write_text('state_dir = "/from/file"\n' if file_sets else "", encoding="utf-8")
    environ = {"HATCHWAY_STATE_DIR": "/from/env"} if env else {}
    settings, location = locate(
        config, "/from/flag" if flag else None, require_provider=False, environ=environ
    )
    expected = {
        StateSource.CONFIG_FOLDER: config.parent,
        StateSource.CONFIG: Path("/from/file"),
        StateSource.ENVIRONMENT: Path("/from/env"),
        StateSource.COMMAND_LINE: Path("/from/flag"),
    }[source]
    assert (location.source, location.folder) == (source, expected)
    assert Path(settings.state_dir) == expected


def test_with_no_config_file_the_folder_is_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _, location = locate(None, require_provider=False, environ={})
    assert (location.source, location.folder) == (StateSource.WORKING_DIRECTORY, tmp_path)
    assert (
        location.describe()
        == f"{tmp_path} (from the default: the working directory (no config file))"
    )


async def test_a_database_behind_this_version_is_not_migrated_by_a_command(
    tmp_path: Path, etc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "var/lib/hatchway/hatchway.db"
    with sqlite3.connect(database) as raw:
        raw.execute("PRAGMA user_version = 12")
    state = ("--config", str(etc), "--state-dir", str(database.parent))
    code, _, err = await hatchway(capsys, "approvals", "list", *state)
    assert code == 1
    assert "has schema 12, behind this version's" in err and "next start" in err
    # a reader that copes with an older schema still reads it
    assert (await hatchway(capsys, "usage", *state))[0] == 0
    with sqlite3.connect(database) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 12


async def test_the_doctor_warns_where_there_is_no_database_yet_and_creates_nothing(
    tmp_path: Path, etc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tree(tmp_path)
    code, out, _ = await hatchway(capsys, "doctor", "--config", str(etc))
    folder = etc.parent
    assert f"✓ state: folder {folder} (from the default: the folder of {etc})" in out
    assert (
        f"⚠ database: no database yet at {folder}/hatchway.db (state folder {folder}, from the "
        f"default: the folder of {etc}); the daemon creates it at its first start"
    ) in out
    assert "--state-dir, HATCHWAY_STATE_DIR or state_dir" in out
    assert f"✓ workspace: {folder}/workspace does not exist yet" in out
    assert "✗ database" not in out and "✗ workspace" not in out
    assert tree(tmp_path) == before, code


async def test_the_doctor_pointed_at_the_state_checks_its_database(
    tmp_path: Path, etc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "var/lib/hatchway"
    _, out, _ = await hatchway(capsys, "doctor", "--config", str(etc), "--state-dir", str(state))
    assert f"✓ database: {state}/hatchway.db ok (schema " in out
    assert not (state / "workspace").exists()


# -- PostgreSQL: the same commands from any host with the URL --------------------------------


async def test_with_postgresql_the_commands_need_no_local_state(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with capture_logs():
        async with await Store.open_postgres(pg_url) as store:
            await approval_row(
                store,
                APPROVAL,
                requester="1001",
                conversation="-100",
                status="pending",
                decided_by=None,
                created_at=time.time(),
            )
    config = tmp_path / "hatchway.toml"
    # another host: the state folder the file names does not exist here
    config.write_text(
        f'state_dir = "{tmp_path / "absent"}"\n[storage]\nurl = "{pg_url}"\n', encoding="utf-8"
    )
    before = tree(tmp_path)
    code, out, err = await hatchway(capsys, "approvals", "list", "--config", str(config))
    assert code == 0 and APPROVAL in out, err
    code, out, _ = await hatchway(capsys, "approvals", "deny", APPROVAL, "--config", str(config))
    assert (code, out.strip()) == (0, f"denied {APPROVAL}")
    assert tree(tmp_path) == before


async def test_a_postgresql_database_without_the_schema_is_left_alone(
    tmp_path: Path, pg_empty_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "hatchway.toml"
    config.write_text(f'[storage]\nurl = "{pg_empty_url}"\n', encoding="utf-8")
    code, _, err = await hatchway(capsys, "approvals", "approve", APPROVAL, "--config", str(config))
    assert code == 1
    assert "holds no hatchway schema (the daemon creates it at its first start)" in err
    assert f"(storage.url in {config})" in err
    async with await Store.open_postgres(pg_empty_url, migrate=False) as store:
        assert await store.schema_version() == 0


# -- the installed entry point, as an operator runs it ---------------------------------------


@pytest.mark.long  # nine interpreters starting
async def test_the_hatchway_script_creates_nothing_in_the_working_directory(
    tmp_path: Path,
) -> None:
    """Every read-only command at once, from a folder with no config: the state folder is
    the working directory, and nothing appears in it; with ``HATCHWAY_STATE_DIR`` set to the
    service's state, and a ``--state-dir`` that wins over a wrong one, they answer."""
    script = Path(sys.executable).with_name("hatchway")
    state = tmp_path / "var/lib/hatchway"
    await service_state(state)
    here = tmp_path / "here"
    here.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HATCHWAY_")}

    async def run(*args: str, **extra: str) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            str(script),
            *args,
            cwd=here,
            env={**env, **extra},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode()

    missing = await asyncio.gather(*(run(*command) for command in READ_ONLY))
    for command, (code, out, err) in zip(READ_ONLY, missing, strict=True):
        assert (code, out) == (1, ""), command
        assert err.startswith(
            f"hatchway: no database at {here}/hatchway.db (state folder {here}, from the "
            "default: the working directory (no config file))"
        ), err
    assert tree(here) == []

    listed = await run("approvals", "list", HATCHWAY_STATE_DIR=str(state))
    wins = await run("approvals", "list", "--state-dir", str(state), HATCHWAY_STATE_DIR=str(here))
    for code, out, err in (listed, wins):
        assert code == 0 and APPROVAL in out, err
    assert tree(here) == []
