"""The console in ``hatchway run`` itself (a real subprocess): ``[web] enabled`` makes the
daemon listen with ``server.enabled`` false, the pages and static files come from the
installed package, and a link printed by ``hatchway web login-link`` signs an admin in."""

from __future__ import annotations

import asyncio
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.cli import main
from tests.ops.conftest import HeldOpenAI, write_config
from tests.ops.daemon_process import USER, start_daemon

WEB = """
[web]
enabled = true
admins = ["telegram:42"]
public_url = "http://ops.example.com"
"""


@pytest.fixture
async def llm() -> AsyncIterator[HeldOpenAI]:
    fake = HeldOpenAI()
    async with fake:
        yield fake


async def test_the_daemon_serves_the_console_and_an_ops_link_signs_in(
    tmp_path: Path, llm: HeldOpenAI, capsys: pytest.CaptureFixture[str], kept_logging: None
) -> None:
    config = write_config(
        tmp_path / "hatchway.toml",
        llm_url=llm.base_url,
        allowed_users=[USER],
        server=False,
        extra=WEB,
    )
    async with start_daemon(config) as daemon:
        await daemon.wait_notify("READY", "1")
        port = await daemon.port()
        origin = f"http://127.0.0.1:{port}"
        status, page = await daemon.get("/console/static/console.css")
        assert status == 200 and "--accent" in page

        # the command runs its own event loop, as at the host's shell
        command = ["web", "login-link", "telegram:42", "--config", str(config)]
        assert await asyncio.to_thread(main, command) == 0
        link = capsys.readouterr().out.strip().replace("http://ops.example.com", origin)
        token = link.rsplit("=", 1)[1]
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as http:
            async with http.get(link) as answer:
                assert answer.status == 200
                assert answer.headers["Content-Security-Policy"].startswith("default-src 'self'")
                found = re.search(r'name="csrf" value="([0-9a-f]{64})"', await answer.text())
            assert found
            async with http.post(
                f"{origin}/console/sign-in/link", data={"csrf": found.group(1), "token": token}
            ) as answer:
                assert answer.status == 200
                assert str(answer.url) == f"{origin}/console/approvals"
                text = await answer.text()
        assert "telegram:42 · admin" in text
        assert "Nothing is waiting for a decision." in text

        daemon.signal(signal.SIGTERM)
        assert await daemon.wait_exit() == 0
