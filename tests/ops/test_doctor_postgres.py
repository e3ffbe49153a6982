"""``hatchway doctor`` with ``[storage] url``: a real PostgreSQL server (``tests/pg.py``) reached,
signed in to with the password from the environment, its version, writability and pending
migrations reported; an unreachable server and a wrong password fail naming the keys, and
the password is never printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import build_parser
from bot.config import parse_settings
from bot.errors import ConfigError
from bot.store import Store
from bot.store.postgres import migrations
from tests.pg import PASSWORD, PgServer, refused_port

LATEST = max(number for number, _, _ in migrations())


def config(tmp_path: Path, url: str, *, password_env: str = "DOCTOR_PG_PASSWORD") -> Path:
    path = tmp_path / "hatchway.toml"
    path.write_text(
        f"""
state_dir = "{tmp_path / "state"}"

[providers.default]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "m"
api_key_env = "DOCTOR_TEST_KEY"

[storage]
url = "{url}"
password_env = "{password_env}"
""",
        encoding="utf-8",
    )
    return path


async def database_line(config: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The doctor's database line and, when it has one, its fix line."""
    args = build_parser().parse_args(["doctor", "--config", str(config)])
    await args.handler(args)
    out = capsys.readouterr().out
    assert PASSWORD not in out
    lines = out.splitlines()
    (at,) = [i for i, line in enumerate(lines) if line[2:].startswith("database:")]
    following = lines[at + 1 : at + 2]
    return [lines[at], *[line for line in following if line.startswith("    ")]]


@pytest.fixture
def owned_database(pg_server: PgServer) -> str:
    """An empty database owned by the role ``hatchway`` (which needs a password)."""
    name = pg_server.create_database()
    pg_server.admin(f'ALTER DATABASE "{name}" OWNER TO hatchway')
    return pg_server.url(name, user="hatchway")


async def test_a_migrated_database_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pg_url: str
) -> None:
    (line,) = await database_line(config(tmp_path, pg_url), capsys)
    assert line.startswith("✓ database: postgresql://postgres@127.0.0.1:")
    assert "(PostgreSQL 1" in line and f"schema {LATEST}, writable)" in line


async def test_the_password_comes_from_the_variable_password_env_names(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    owned_database: str,
) -> None:
    path = config(tmp_path, owned_database)
    line, fix = await database_line(path, capsys)  # the variable is not set
    assert line.startswith("✗ database: cannot open database postgresql://hatchway@")
    assert "storage.password_env" in fix and "DOCTOR_PG_PASSWORD is not set" in fix

    monkeypatch.setenv("DOCTOR_PG_PASSWORD", "wrong")
    line, fix = await database_line(path, capsys)
    assert "password authentication failed" in line
    assert "storage.password_env" in fix and "is not set" not in fix

    monkeypatch.setenv("DOCTOR_PG_PASSWORD", PASSWORD)
    line, fix = await database_line(path, capsys)  # signed in: nothing migrated yet
    assert line.startswith("⚠ database:")
    assert f"schema 0, writable); {LATEST} migrations pending" in line
    assert "pg_dump" in fix

    async with await Store.open_postgres(owned_database, password=PASSWORD):
        pass  # what the daemon does at its start
    (line,) = await database_line(path, capsys)
    assert line.startswith("✓ database:") and f"schema {LATEST}, writable)" in line


async def test_an_unreachable_server_names_the_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with refused_port() as port:
        url = f"postgresql://hatchway@127.0.0.1:{port}/hatchway"
        line, fix = await database_line(config(tmp_path, url), capsys)
    assert line.startswith(f"✗ database: cannot open database {url}")
    assert "storage.url" in fix


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("postgresql://u:secret@db/hatchway", "must not hold the password"),
        ("postgresql://u@db/hatchway?password=secret", "must not hold the password"),
        ("mysql://u@db/hatchway", "must be a PostgreSQL URL"),
        ("postgresql:///hatchway", "must be a PostgreSQL URL"),
        ("postgresql://u@db:abc/hatchway", "storage.url has no valid port"),
        ("postgresql://u@db:99999/hatchway", "storage.url has no valid port"),
    ],
)
def test_a_bad_url_is_a_config_error(url: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as err:
        parse_settings({"storage": {"url": url}}, environ={})
    assert "secret" not in str(err.value)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://hatchway@db.internal:5432/hatchway",
        "postgres://hatchway@db.internal/hatchway?sslmode=require",
        "postgresql:///hatchway?host=/var/run/postgresql",
    ],
)
def test_a_postgresql_url_is_taken(url: str) -> None:
    settings = parse_settings({"storage": {"url": url}}, environ={})
    assert settings.storage.url == url
    assert settings.storage.password_env == "HATCHWAY_DB_PASSWORD"
