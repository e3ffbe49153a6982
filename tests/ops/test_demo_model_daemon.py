"""``hatchway run`` with a chat channel and no ``[providers]``: the embedded demo model answers,
and the daemon says so — a log line at start, ``/readyz``'s ``warnings`` (still ready), the
console's health page. A real subprocess against the Telegram fake."""

from __future__ import annotations

import asyncio
import json
import re
import signal
from pathlib import Path

import aiohttp
import pytest

from bot.cli import main
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.telegram_setup import TOKEN
from tests.ops.daemon_process import start_daemon

pytestmark = pytest.mark.long

ADMIN = "42"


def demo_config(path: Path, telegram: str) -> Path:
    path.write_text(
        f"""
[channels.telegram.main]
token_env = "HATCHWAY_TELEGRAM_TOKEN"
api_base_url = "{telegram}"
poll_timeout_s = 1
allowed_users = ["{ADMIN}"]
approvers = ["{ADMIN}"]

[server]
enabled = true
host = "127.0.0.1"
port = 0

[web]
enabled = true
admins = ["telegram:{ADMIN}"]
public_url = "http://ops.example.com"

[logging]
level = "info"
format = "json"
""",
        encoding="utf-8",
    )
    return path


async def test_the_demo_model_answering_a_team_is_a_warning_not_a_silence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kept_logging: None
) -> None:
    async with FakeTelegram(TOKEN) as tg:
        config = demo_config(tmp_path / "hatchway.toml", tg.base_url)
        env = {"HATCHWAY_TELEGRAM_TOKEN": TOKEN}
        async with start_daemon(config, env=env) as daemon:
            await daemon.wait_notify("READY", "1")
            ready = await daemon.wait_event("daemon_ready")
            warned = await daemon.wait_event("daemon_warning")
            assert daemon.events.index(warned) < daemon.events.index(ready)
            assert ready["provider_kind"] == "embedded"
            assert "demo model" in warned["warning"] and "telegram.main" in warned["warning"]

            code, body = await daemon.get("/readyz")
            readiness = json.loads(body)
            assert (code, readiness["ready"], readiness["problems"]) == (200, True, [])
            assert readiness["warnings"] == [warned["warning"]]

            origin = f"http://127.0.0.1:{await daemon.port()}"
            command = ["web", "login-link", f"telegram:{ADMIN}", "--config", str(config)]
            assert await asyncio.to_thread(main, command) == 0
            link = capsys.readouterr().out.strip().replace("http://ops.example.com", origin)
            jar = aiohttp.CookieJar(unsafe=True)
            async with aiohttp.ClientSession(cookie_jar=jar) as http:
                async with http.get(link) as answer:
                    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', await answer.text())
                assert found
                signed = {"csrf": found.group(1), "token": link.rsplit("=", 1)[1]}
                async with http.post(f"{origin}/console/sign-in/link", data=signed) as answer:
                    assert answer.status == 200
                async with http.get(f"{origin}/console/channels") as answer:
                    page = await answer.text()
            shown = re.search(r'<ul class="warnings" id="warnings">(.*?)</ul>', page, re.S)
            assert shown and "demo model" in shown.group(1) and "telegram.main" in shown.group(1)

            daemon.signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
