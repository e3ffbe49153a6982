"""``hatchway doctor`` against loopback fakes of Telegram and an OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import build_parser
from bot.store import Store
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.telegram_server import BOT_ID, BOT_USERNAME, FakeTelegram

TOKEN = "12345:good-token"


def doctor_config(tmp_path: Path, *, telegram: str, llm: str, state_dir: Path) -> Path:
    path = tmp_path / "hatchway.toml"
    path.write_text(
        f"""
state_dir = "{state_dir}"

[providers.default]
kind = "openai"
base_url = "{llm}"
model = "gpt-4o-mini"
api_key_env = "DOCTOR_TEST_KEY"

[channels.telegram.main]
token_env = "DOCTOR_TELEGRAM_TOKEN"
api_base_url = "{telegram}"
allowed_users = ["1"]
""",
        encoding="utf-8",
    )
    return path


async def run_doctor(config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    args = build_parser().parse_args(["doctor", "--config", str(config)])
    code = await args.handler(args)
    return code, capsys.readouterr().out


async def test_good_configuration_passes_every_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCTOR_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv("DOCTOR_TEST_KEY", "sk-test")
    state = tmp_path / "state"
    await (await Store.open(state / "hatchway.db")).aclose()  # a database at the latest schema
    capsys.readouterr()  # the migrations' log lines
    async with FakeTelegram(TOKEN) as tg, OpenAIFake(model="gpt-4o-mini") as llm:
        llm.queue_text("p")  # the endpoint has no model list: a 1-token completion is asked
        config = doctor_config(tmp_path, telegram=tg.base_url, llm=llm.base_url, state_dir=state)
        code, out = await run_doctor(config, capsys)
        assert llm.requests[0].body["max_tokens"] == 1
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("✓ config:")
    assert f"✓ channel telegram.main: token accepted for @{BOT_USERNAME}" in lines
    assert any(line.startswith("✓ provider default:") for line in lines)
    assert any(line.startswith("✓ database:") and "integrity ok" in line for line in lines)
    assert any(line.startswith("✓ workspace:") for line in lines)
    assert lines[-1] == "all checks passed"
    assert "sk-test" not in out and TOKEN not in out


async def test_bad_credentials_fail_with_what_to_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCTOR_TELEGRAM_TOKEN", "999:wrong-token")
    monkeypatch.setenv("DOCTOR_TEST_KEY", "sk-wrong")
    state = tmp_path / "state"
    async with FakeTelegram(TOKEN) as tg, OpenAIFake() as llm:
        llm.queue_error(401, message="invalid api key")
        config = doctor_config(tmp_path, telegram=tg.base_url, llm=llm.base_url, state_dir=state)
        code, out = await run_doctor(config, capsys)
    assert code == 1
    assert "✗ channel telegram.main: getMe refused the token (HTTP 401)" in out
    assert (
        "fix: put a valid token from @BotFather into DOCTOR_TELEGRAM_TOKEN "
        "(channels.telegram.main.token_env)"
    ) in out
    assert "✗ provider default: 1-token completion failed (HTTP 401: invalid api key)" in out
    # no database yet: a warning naming where it looked and why there, nothing created
    assert (
        f"⚠ database: no database yet at {state}/hatchway.db (state folder {state}, from "
        f"state_dir in {config}); the daemon creates it at its first start"
    ) in out
    assert not state.exists()
    assert "sk-wrong" not in out and "wrong-token" not in out


async def test_missing_secret_and_unreachable_endpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCTOR_TELEGRAM_TOKEN", raising=False)
    monkeypatch.setenv("DOCTOR_TEST_KEY", "sk-test")
    config = doctor_config(
        tmp_path,
        telegram="http://127.0.0.1:9/bot",
        llm="http://127.0.0.1:9/v1",
        state_dir=tmp_path,
    )
    code, out = await run_doctor(config, capsys)
    assert code == 1
    assert "✗ channel telegram.main: bot token: the environment variable " in out
    assert "✗ provider default: cannot reach the endpoint" in out


async def test_invalid_config_fails_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "hatchway.toml"
    config.write_text("[agent]\nmax_tool_iterations = 0\n", encoding="utf-8")
    code, out = await run_doctor(config, capsys)
    assert code == 1
    assert out.startswith("✗ config:")
    assert "agent.max_tool_iterations" in out


@pytest.mark.parametrize(
    ("reads_all", "admin", "expected"),
    [
        (True, False, "✓ group context telegram.main: privacy mode is off"),
        (False, True, "✓ group context telegram.main: the bot is an administrator"),
        (False, False, "⚠ group context telegram.main: privacy mode is on and the bot is not"),
    ],
)
async def test_group_context_needs_the_bot_to_see_group_messages(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    reads_all: bool,
    admin: bool,
    expected: str,
) -> None:
    monkeypatch.setenv("DOCTOR_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv("DOCTOR_TEST_KEY", "sk-test")
    group = -100200300
    async with FakeTelegram(TOKEN) as tg, OpenAIFake(model="gpt-4o-mini") as llm:
        tg.reads_all_group_messages = reads_all
        tg.roster.statuses[group] = {BOT_ID: "administrator" if admin else "member"}
        llm.queue_text("p")
        config = doctor_config(tmp_path, telegram=tg.base_url, llm=llm.base_url, state_dir=tmp_path)
        with config.open("a", encoding="utf-8") as toml:
            toml.write(
                f'group_policy = "allowlist"\nallowed_conversations = ["{group}"]\n'
                "context.group_messages = 20\n"
            )
        _, out = await run_doctor(config, capsys)
    [line] = [line for line in out.splitlines() if line.startswith(expected[:2] + "group")]
    assert line.startswith(expected), out
    if not reads_all and not admin:
        assert "/setprivacy" in out and "channels.telegram.main.context.group_messages" in out
    assert TOKEN not in out
