"""``hatchway web login-link USER`` on a real database: the printed link is stored as a digest
and signs in once as USER; names from ``web.names`` work; an identity that may not use the
console, a malformed one, and a server port only known at start are refused."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from bot.cli import main
from bot.store import Store
from bot.webconsole import tokens

pytestmark = pytest.mark.usefixtures("kept_logging")


def _config(
    tmp_path: Path, *, public_url: str = "https://ops.example.com", port: int = 8787
) -> Path:
    """The config, and the database the daemon's first start made (the command needs one)."""
    asyncio.run(_first_start(tmp_path / "hatchway.db"))
    path = tmp_path / "hatchway.toml"
    path.write_text(
        f"""
state_dir = "{tmp_path}"

[channels.telegram.main]
allowed_users = ["1001"]
approvers = ["2002"]

[server]
port = {port}

[web]
enabled = true
public_url = "{public_url}"
admins = ["slack:U0ADMIN"]
names = {{ boss = "telegram:2002" }}
""",
        encoding="utf-8",
    )
    return path


async def _first_start(database: Path) -> None:
    with capture_logs():  # the migrations' lines, not the command's output
        await (await Store.open(database)).aclose()


def _claim(tmp_path: Path, token: str) -> list[str | None]:
    async def claim() -> list[str | None]:
        async with await Store.open(tmp_path / "hatchway.db") as store:
            digest = tokens.digest(token)
            return [await store.web.claim_link(digest, time.time()) for _ in range(2)]

    return asyncio.run(claim())


@pytest.mark.parametrize("user", ["telegram:2002", "boss", "slack:U0ADMIN"])
def test_the_printed_link_signs_in_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], user: str
) -> None:
    assert main(["web", "login-link", user, "--config", str(_config(tmp_path))]) == 0
    out = capsys.readouterr()
    link = out.out.strip()
    assert link.startswith("https://ops.example.com/console/sign-in/link?token=")
    token = link.rsplit("=", 1)[1]
    assert token not in (tmp_path / "hatchway.db").read_bytes().decode("latin-1")
    expected = "slack:U0ADMIN" if user.startswith("slack") else "telegram:2002"
    assert f"signs in once as {expected}" in out.err
    assert _claim(tmp_path, token) == [expected, None]


@pytest.mark.parametrize(
    ("user", "status", "says"),
    [
        ("telegram:1001", 1, "may not use the console"),
        ("telegram:9999", 1, "may not use the console"),
        ("12345", 2, "is not an identity"),
        ("console:main", 2, "is not an identity"),
        ("telegram:<b>", 2, "the user id must be"),
    ],
)
def test_refused_users(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], user: str, status: int, says: str
) -> None:
    assert main(["web", "login-link", user, "--config", str(_config(tmp_path))]) == status
    out = capsys.readouterr()
    assert out.out == ""
    assert says in out.err


def test_a_port_chosen_at_start_needs_a_public_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, public_url="", port=0)
    assert main(["web", "login-link", "telegram:2002", "--config", str(config)]) == 1
    assert "set web.public_url" in capsys.readouterr().err
    config = _config(tmp_path, public_url="", port=8899)
    assert main(["web", "login-link", "telegram:2002", "--config", str(config)]) == 0
    assert capsys.readouterr().out.startswith("http://127.0.0.1:8899/console/sign-in/link?token=")
