"""The configuration in force, and that no secret reaches any console page: an admin reads
the approval policy of each channel and agent, the routing table and every setting, where a
secret shows as the name of its environment variable; the secrets the daemon runs with (the
bot token, the model's key, the receipt key) appear on no page an admin can open, and a
secret pasted into the configuration itself is hidden."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Page

from tests.fakes.telegram_setup import TOKEN
from tests.web import console_records as records
from tests.web.harness import ADMIN, APPROVER, LLM_KEY_ENV, ConsoleRig, console_rig

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]

LLM_KEY = "sk-live-abcdefghijklmnopqrstuvwx0123"
RECEIPT_KEY = "r" * 40
PAGES = (
    "/approvals",
    "/grants",
    "/audit",
    "/turns",
    "/turns/session?key=telegram.main:1001",
    "/channels",
    "/channels/metrics",
    "/usage",
    "/schedules",
    "/pairing",
    "/configuration",
)


@pytest_asyncio.fixture(loop_scope="module")
async def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ConsoleRig]:
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv(LLM_KEY_ENV, LLM_KEY)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("HATCHWAY_RECEIPT_KEY", RECEIPT_KEY)
    async with console_rig(tmp_path) as running:
        yield running


async def test_no_page_shows_a_secret(rig: ConsoleRig, page: Page) -> None:
    await records.outcome_turns(rig.app.store)
    await records.audit_rows(rig.app.store, 3)
    await rig.sign_in(page, ADMIN)
    for path in PAGES:
        answer = await page.goto(rig.url(path))
        assert answer is not None and answer.status == 200, path
        content = await page.content()
        for secret in (TOKEN, LLM_KEY, RECEIPT_KEY):
            assert secret not in content, (path, secret[:6])


async def test_the_configuration_in_force(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, ADMIN)
    await page.goto(rig.url("/configuration"))
    policies = await page.locator("#policies").inner_text()
    assert "telegram.main" in policies and "supervised" in policies
    assert str(APPROVER) in policies
    settings = await page.locator("#settings").inner_text()
    assert LLM_KEY_ENV in settings and "variable name" in settings
    assert "channels.telegram.main.token_env" in settings
    await rig.screenshot(page, "configuration")


async def test_an_approver_may_not_read_the_configuration(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, APPROVER)
    answer = await page.goto(rig.url("/configuration"))
    assert answer is not None and answer.status == 403
