"""The console's Turns pages on PostgreSQL databases whose collation is ICU's ``en-US`` or
glibc's ``en_US.UTF-8`` (where ``;`` sorts before ``:``): an approver sees their channel's
conversations and the channel filter finds them, as on every other database. The App with
its console runs on that database; the pages are read over HTTP as a signed-in browser.
Marked ``long``: CI's second stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.telegram_setup import TOKEN
from tests.pg import COLLATIONS, PgServer, collated_url
from tests.web import console_records as records
from tests.web.harness import ADMIN, APPROVER, LLM_KEY_ENV, ConsoleRig, console_rig
from tests.web.test_sign_in_http import Browser, browser

pytestmark = pytest.mark.long

MINE = "telegram.main:1001"
THEIRS = "slack.ops:C9"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv(LLM_KEY_ENV, "test-key")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


async def signed_in(rig: ConsoleRig, b: Browser, user_id: int, count: int) -> None:
    assert (await b.ask(str(user_id)))[0] == 200
    await b.follow(rig.link_in(await rig.sign_in_message(user_id, count=count)))
    assert await b.signed_in_as() == f"telegram:{user_id}"


async def sessions(b: Browser, query: str = "") -> str:
    async with b.client.get(b.rig.url(f"/turns{query}"), headers=b.headers) as answer:
        assert answer.status == 200
        return await answer.text()


@pytest.mark.parametrize("collation", list(COLLATIONS))
async def test_the_turns_pages_list_a_channels_conversations_under_the_collation(
    tmp_path: Path, pg_server: PgServer, collation: str
) -> None:
    with collated_url(pg_server, collation) as url:
        async with console_rig(tmp_path, storage={"url": url}, trust_forwarded_for=True) as rig:
            await records.turns(rig.app.store)
            async with browser(rig, "10.0.10.1") as approver:
                await signed_in(rig, approver, APPROVER, 1)
                page = await sessions(approver)
                assert MINE in page and THEIRS not in page
                page = await sessions(approver, "?channel=telegram.main")
                assert MINE in page and THEIRS not in page
                assert THEIRS not in await sessions(approver, "?channel=slack.ops")
            async with browser(rig, "10.0.10.2") as admin:
                await signed_in(rig, admin, ADMIN, 1)
                page = await sessions(admin)
                assert MINE in page and THEIRS in page
                page = await sessions(admin, "?channel=slack.ops")
                assert THEIRS in page and MINE not in page
