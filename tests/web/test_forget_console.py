"""``hatchway forget --user ID`` ends that person's console access: on a real database, a
link printed by ``hatchway web login-link`` no longer signs in, their open sessions are gone
and the counters naming them too, while another person's (and the same id on another
platform, when one channel is named) stay."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from bot.cli import main
from bot.store import Store
from bot.store.web import target_bucket
from bot.webconsole import tokens
from tests.web.test_login_link import _config

pytestmark = pytest.mark.usefixtures("kept_logging")


def _link(tmp_path: Path, capsys: pytest.CaptureFixture[str], user: str) -> str:
    assert main(["web", "login-link", user, "--config", str(_config(tmp_path))]) == 0
    return capsys.readouterr().out.strip().rsplit("=", 1)[1]


async def _open(tmp_path: Path, sessions: dict[str, str]) -> None:
    async with await Store.open(tmp_path / "hatchway.db") as store:
        now = time.time()
        for id_hash, identity in sessions.items():
            await store.web.open_session(id_hash, identity, now=now, expires_at=now + 3600)
            await store.web.count(target_bucket(identity, "10.0.0.1"), now=now, window_s=60)


async def _state(tmp_path: Path, token: str) -> tuple[list[str], str | None]:
    async with await Store.open(tmp_path / "hatchway.db") as store:
        alive = [h for h in ("s1", "s2", "s3", "s4") if await store.web.session(h) is not None]
        rows = await store.db.fetchall("SELECT bucket FROM web_rate_counters ORDER BY bucket")
        assert {str(r["bucket"]) for r in rows} == {
            target_bucket(i, "10.0.0.1") for h, i in SESSIONS.items() if h in alive
        }
        return alive, await store.web.claim_link(tokens.digest(token), time.time())


SESSIONS = {
    "s1": "telegram:2002",
    "s2": "telegram:2002",
    "s3": "discord:2002",  # the same id on another platform
    "s4": "telegram:12002",  # an id ending in the same digits
}


@pytest.mark.parametrize(
    ("channel", "kept"),
    [((), ["s4"]), (("--channel", "telegram.main"), ["s3", "s4"])],
    ids=["every-channel", "one-channel"],
)
def test_forget_ends_sessions_and_links(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    channel: tuple[str, ...],
    kept: list[str],
) -> None:
    token = _link(tmp_path, capsys, "telegram:2002")
    asyncio.run(_open(tmp_path, SESSIONS))
    config = str(_config(tmp_path))
    assert main(["forget", "--user", "2002", *channel, "--yes", "--config", config]) == 0
    printed = capsys.readouterr().out
    assert "web_sessions" in printed and "web_sign_ins" in printed
    alive, claimed = asyncio.run(_state(tmp_path, token))
    assert alive == kept
    assert claimed is None  # the printed link signs nobody in any more
