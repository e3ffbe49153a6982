"""``hatchway doctor`` names the config key to fix in every finding.

Each test writes a real config file and runs the real command (``bot.cli.main``, in a
thread of its own so its event loop is not the one serving the loopback fakes), then reads
what it printed.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from bot.cli import main
from bot.store import Store
from tests.fakes.slack_server import FakeSlack
from tests.fakes.telegram_server import FakeTelegram

BOT = "xoxb-doctor-bot"
APP = "xapp-doctor-app"
UNREACHABLE = "http://127.0.0.1:9"  # discard port: the connection is refused at once
# Secrets the tests set or unset; nothing else in the environment is read by these configs.
SECRETS = ("DR_SLACK_BOT", "DR_SLACK_APP", "DR_SLACK_SIGNING", "DR_TG", "DR_DISCORD", "DR_KEY")


@pytest.fixture(autouse=True)
def clean_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SECRETS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("HATCHWAY_STATE_DIR", raising=False)


def write_config(tmp_path: Path, channels: str, *, provider: str = "") -> Path:
    """A config whose provider (unless given) fails fast without a network: no key set."""
    provider = provider or (
        '[providers.default]\nmodel = "m"\napi_key_env = "DR_KEY"\n'
        'base_url = "https://llm.example.invalid/v1"\n'
    )
    path = tmp_path / "hatchway.toml"
    path.write_text(f'state_dir = "{tmp_path}"\n\n{provider}\n{channels}', encoding="utf-8")
    return path


async def doctor(config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = await asyncio.to_thread(main, ["doctor", "--config", str(config)])
    return code, capsys.readouterr().out


def finding(out: str, name: str) -> str:
    """The line of check ``name`` and its ``fix:`` line, as one string."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line[2:].startswith(f"{name}:"):
            rest = lines[i + 1] if i + 1 < len(lines) and lines[i + 1].startswith("    ") else ""
            return f"{line}\n{rest}"
    raise AssertionError(f"no line for {name!r} in:\n{out}")


def slack_channel(base_url: str, *, mode: str = "socket") -> str:
    return f"""
[channels.slack.main]
mode = "{mode}"
bot_token_env = "DR_SLACK_BOT"
app_token_env = "DR_SLACK_APP"
signing_secret_env = "DR_SLACK_SIGNING"
api_base_url = "{base_url}"
allowed_users = ["*"]
"""


@pytest.mark.parametrize("bot_token", [BOT, "xoxb-refused"])
async def test_missing_socket_mode_app_token_is_reported_without_asking_slack(
    bot_token: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DR_SLACK_BOT", bot_token)
    async with FakeSlack(BOT, APP) as slack:
        code, out = await doctor(write_config(tmp_path, slack_channel(slack.api_base_url)), capsys)
        assert slack.calls == []  # nothing is sent while a secret is missing
    assert code == 1
    line = finding(out, "channel slack.main")
    assert line.startswith(
        "✗ channel slack.main: Socket Mode app token: the environment variable DR_SLACK_APP "
        "is not set"
    )
    assert "channels.slack.main.app_token_env" in line
    assert bot_token not in out


async def test_refused_app_token_names_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DR_SLACK_BOT", BOT)
    monkeypatch.setenv("DR_SLACK_APP", "xapp-refused")
    async with FakeSlack(BOT, APP) as slack:
        code, out = await doctor(write_config(tmp_path, slack_channel(slack.api_base_url)), capsys)
        methods = [call.method for call in slack.calls]
    assert code == 1
    assert methods == ["auth.test", "apps.connections.open"]
    line = finding(out, "channel slack.main")
    assert "✗ channel slack.main: Socket Mode app token: refused (invalid_auth)" in line
    assert "DR_SLACK_APP (channels.slack.main.app_token_env)" in line


async def test_slack_http_mode_needs_the_signing_secret_not_the_app_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DR_SLACK_BOT", BOT)
    async with FakeSlack(BOT, APP) as slack:
        channel = slack_channel(slack.api_base_url, mode="http")
        code, out = await doctor(write_config(tmp_path, channel), capsys)
    line = finding(out, "channel slack.main")
    assert code == 1
    assert "signing secret: the environment variable DR_SLACK_SIGNING is not set" in line
    assert "channels.slack.main.signing_secret_env" in line
    assert "app_token_env" not in line


async def test_refused_and_missing_tokens_name_their_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DR_TG", "999:refused")
    async with FakeTelegram("12345:good") as tg:
        channels = f"""
[channels.telegram.main]
token_env = "DR_TG"
api_base_url = "{tg.base_url}"
allowed_users = ["1"]

[channels.discord.main]
token_env = "DR_DISCORD"
allowed_users = ["1"]
"""
        code, out = await doctor(write_config(tmp_path, channels), capsys)
    assert code == 1
    telegram = finding(out, "channel telegram.main")
    assert "getMe refused the token (HTTP 401)" in telegram
    assert "DR_TG (channels.telegram.main.token_env)" in telegram
    discord = finding(out, "channel discord.main")
    assert "bot token: the environment variable DR_DISCORD is not set" in discord
    assert "channels.discord.main.token_env" in discord
    provider = finding(out, "provider default")
    assert "DR_KEY" in provider and "providers.default.api_key_env" in provider


async def test_unreachable_endpoints_name_their_base_url_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DR_TG", "12345:good")
    monkeypatch.setenv("DR_KEY", "sk-doctor")
    provider = (
        f'[providers.default]\nmodel = "m"\napi_key_env = "DR_KEY"\nbase_url = "{UNREACHABLE}/v1"\n'
    )
    channels = f"""
[channels.telegram.main]
token_env = "DR_TG"
api_base_url = "{UNREACHABLE}/bot"
allowed_users = ["1"]
"""
    code, out = await doctor(write_config(tmp_path, channels, provider=provider), capsys)
    assert code == 1
    telegram = finding(out, "channel telegram.main")
    assert "cannot reach the endpoint" in telegram
    assert "check channels.telegram.main.api_base_url" in telegram
    provider_line = finding(out, "provider default")
    assert "check providers.default.base_url" in provider_line
    assert "sk-doctor" not in out and "12345:good" not in out


@pytest.mark.parametrize(
    ("table", "warned", "wording"),
    [
        ("", True, "nobody can talk to the bot here"),
        ('dm_policy = "disabled"', True, "nobody can talk to the bot here"),
        ('dm_policy = "open"', True, "anyone is answered in direct messages"),
        ('dm_policy = "open"\ngroup_policy = "disabled"', False, ""),
        ('dm_policy = "pairing"', False, ""),
        ('allowed_users = ["*"]', False, ""),
        ('allowed_users = ["42"]', False, ""),
        ("enabled = false", False, ""),
    ],
)
async def test_empty_allowed_users_is_a_warning_naming_the_key(
    table: str,
    warned: bool,
    wording: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    channels = f'[channels.discord.team]\ntoken_env = "DR_DISCORD"\n{table}\n'
    _, out = await doctor(write_config(tmp_path, channels), capsys)
    if not warned:
        assert "access discord.team" not in out
        return
    line = finding(out, "access discord.team")
    assert line.startswith(f"⚠ access discord.team: allowed_users is empty: {wording}")
    assert "channels.discord.team.allowed_users" in line
    assert '["*"]' in line


async def test_pending_migrations_are_reported_and_not_applied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "hatchway.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x)")  # user_version 0: every migration is pending
    _, out = await doctor(write_config(tmp_path, ""), capsys)
    line = finding(out, "database")
    assert line.startswith("⚠ database:")
    assert "migrations pending, applied at the next start" in line
    assert "back it up first" in line and "storage.path" in line
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert tables == {"t"}


async def test_a_schema_newer_than_this_version_fails_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "hatchway.db"
    store = await Store.open(db)
    latest = await store.schema_version()
    await store.aclose()
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version={latest + 1}")
    code, out = await doctor(write_config(tmp_path, ""), capsys)
    assert code == 1
    line = finding(out, "database")
    assert line.startswith(
        f"✗ database: {db} has schema {latest + 1}, newer than this version knows ({latest})"
    )
    assert "storage.path" in line and "Roll back" in line


async def test_a_migrated_database_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await (await Store.open(tmp_path / "hatchway.db")).aclose()
    _, out = await doctor(write_config(tmp_path, ""), capsys)
    assert finding(out, "database").startswith("✓ database:")


async def test_unwritable_workspace_names_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "workspace").write_text("a file where the directory should be")
    _, out = await doctor(write_config(tmp_path, ""), capsys)
    line = finding(out, "workspace")
    assert line.startswith("✗ workspace:")
    assert "tools.workspace.path" in line


async def test_missing_config_file_names_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = await doctor(tmp_path / "nowhere.toml", capsys)
    assert code == 1
    assert out.startswith("✗ config: config file ")
    assert "--config" in finding(out, "config")


async def test_the_access_fix_names_the_id_command_of_the_platform(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    channels = (
        '[channels.slack.ops]\nslash_command = "/opsbot"\n\n'
        '[channels.telegram.main]\ntoken_env = "DR_TG"\n'
    )
    _, out = await doctor(write_config(tmp_path, channels), capsys)
    assert "by sending the bot /opsbot id" in finding(out, "access slack.ops")
    assert "channels.slack.ops.allowed_users" in finding(out, "access slack.ops")
    assert "by sending the bot /id" in finding(out, "access telegram.main")


EMBEDDED = '[providers.default]\nkind = "embedded"\n'
#: ``hatchway doctor`` in a child process where ``xllamacpp`` cannot be found, as when the
#: ``local`` extra is not installed (a finder placed first refuses it).
WITHOUT_RUNTIME = """
import sys

class _Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "xllamacpp":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Hidden())
from bot.cli import main
sys.exit(main(sys.argv[1:]))
"""


async def test_the_packaged_demo_model_passes_with_a_warning_and_no_endpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = await doctor(write_config(tmp_path, "", provider=EMBEDDED), capsys)
    line = finding(out, "provider default")
    assert line.startswith("⚠ provider default: smollm2-135m-instruct runs in this process from ")
    assert ".gguf: a small offline demo model, without tools" in line
    assert "configure a provider with an endpoint in providers.default" in line


async def test_a_missing_embedded_model_file_names_model_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    provider = EMBEDDED + 'model_path = "models/none.gguf"\n'
    code, out = await doctor(write_config(tmp_path, "", provider=provider), capsys)
    assert code == 1
    line = finding(out, "provider default")
    assert line.startswith("✗ provider default: providers.default.model_path is ")
    assert "set providers.default.model_path to a GGUF file" in line


async def test_a_missing_embedded_runtime_says_what_to_install(tmp_path: Path) -> None:
    config = write_config(tmp_path, "", provider=EMBEDDED)
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        WITHOUT_RUNTIME,
        "doctor",
        "--config",
        str(config),
        stdout=asyncio.subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not k.startswith("HATCHWAY_")},
    )
    stdout, _ = await child.communicate()
    out = stdout.decode()
    assert child.returncode == 1, out
    line = finding(out, "provider default")
    assert line.startswith("✗ provider default: the llama.cpp runtime (xllamacpp")
    assert "requirements.lock" in line and "providers.default.kind" in line


async def test_an_own_gguf_file_passes_without_the_demo_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "team.gguf").write_bytes(b"GGUF")  # found, never loaded
    provider = EMBEDDED + 'model_path = "models/team.gguf"\n'
    _, out = await doctor(write_config(tmp_path, "", provider=provider), capsys)
    line = finding(out, "provider default")
    assert line.startswith("✓ provider default: team runs in this process from models/team.gguf")
