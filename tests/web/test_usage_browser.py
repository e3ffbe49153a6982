"""The Usage and budgets page in a real browser: the figures of ``hatchway usage`` by each
grouping, its CSV export (cells safe for a spreadsheet), a bad ``since`` answered with what
is wrong, and no budget when none is set; an approver who is not an admin is refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from playwright.async_api import Page

from tests.store.records import envelope, turn
from tests.web.harness import ADMIN, APPROVER, ConsoleRig

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]


async def test_usage_by_grouping_and_as_csv(rig: ConsoleRig, page: Page) -> None:
    await turn(rig.app.store, envelope("=1001", "1001", "m-usage", direct=True))
    await rig.sign_in(page, ADMIN)
    await page.goto(rig.url("/usage?by=user&since=7d"))
    rows = await page.locator("#usage-rows").inner_text()
    assert "telegram.main =1001" in rows and "total" in rows
    assert await page.locator("text=No budget is set").count() == 1
    await rig.screenshot(page, "usage")
    async with page.expect_download() as download:
        await page.locator("#usage-csv").click()
    path = await (await download.value).path()
    text = await asyncio.to_thread(Path(path).read_text, encoding="utf-8")
    header, first = text.splitlines()[:2]
    assert header.startswith("user,calls,input_tokens")
    assert first.startswith("telegram.main =1001,")  # not a formula: it starts with "t"
    await page.goto(rig.url("/usage?by=model"))
    assert (
        "gpt" in await page.locator("#usage-rows").inner_text()
        or await page.locator("#usage-rows tbody tr").count() >= 2
    )
    answer = await page.goto(rig.url("/usage?since=yesterday-ish"))
    assert answer is not None and answer.status == 400
    assert "since" in await page.locator("p.error").inner_text()


async def test_an_approver_may_not_see_usage(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, APPROVER)
    answer = await page.goto(rig.url("/usage"))
    assert answer is not None and answer.status == 403
