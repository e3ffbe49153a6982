"""The turns page tells the truth, in a real browser at desktop and phone widths: every
call's real outcome in the chat's words with a colour to match (ran ok, ran and failed,
denied by a person named with their id, denied with a reply, expired and why, under a
grant, stopped; "not recorded" for a row from before outcomes were kept), a turn ``/stop``
ended says stopped, each turn shows the answer sent, people appear by name beside their id
with format characters shown as escapes, and no page scrolls sideways on a phone."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page

from tests.web import console_records as records
from tests.web.harness import ADMIN, WAIT_MS, ConsoleRig

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]

PHONE = {"width": 390, "height": 844}
SESSION = "telegram.main:1001"


@pytest_asyncio.fixture(loop_scope="module")
async def phone(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    context.set_default_timeout(WAIT_MS)
    opened = await context.new_page()
    yield opened
    await context.close()


async def no_sideways_scroll(page: Page) -> None:
    """The page is no wider than the screen (no horizontal scroll)."""
    wide = await page.evaluate("document.documentElement.scrollWidth")
    screen = await page.evaluate("window.innerWidth")
    assert wide <= screen, f"{page.url} is {wide} px wide on a {screen} px screen"


async def open_session(rig: ConsoleRig, page: Page) -> None:
    await page.goto(rig.url("/turns"))
    await page.locator(f"#sessions a:has-text('{SESSION}')").click()
    await page.locator("article.turn").first.wait_for()


async def test_each_call_shows_its_real_outcome(rig: ConsoleRig, page: Page) -> None:
    outcomes, stopped = await records.outcome_turns(rig.app.store)
    await rig.sign_in(page, ADMIN)
    await open_session(rig, page)

    turn = page.locator(f"article[id='turn-{outcomes}']")
    rows = turn.locator("table.calls tbody tr")
    assert await rows.count() == 1 + len(records.OUTCOMES)
    old = rows.nth(0).locator("td.outcome")
    assert await old.inner_text() == "ran (failed or not: not recorded)"
    assert "outcome-unknown" in (await old.get_attribute("class") or "")
    for index, (tool, _fields, words, css) in enumerate(records.OUTCOMES, start=1):
        cell = rows.nth(index).locator("td.outcome")
        assert await cell.inner_text() == words, tool
        assert css in (await cell.get_attribute("class") or ""), tool
    colours = {
        css: await rows.nth(i).locator("td.outcome").evaluate("el => getComputedStyle(el).color")
        for i, (_t, _f, _w, css) in enumerate(records.OUTCOMES, start=1)
    }
    # ok is green, failed and denied red, expired amber, stopped grey: four colours
    assert colours["outcome-ok"] != colours["outcome-failed"]
    assert colours["outcome-expired"] not in (colours["outcome-ok"], colours["outcome-failed"])
    assert colours["outcome-stopped"] not in (colours["outcome-ok"], colours["outcome-failed"])
    # the answer that was sent, and the requester by name beside the id
    text = await turn.inner_text()
    assert "answer to check the servers" in text
    assert "Rita" in text and "(1001)" in text
    assert await page.evaluate("window.pwned === undefined")
    assert await page.locator("main b:has-text('bold')").count() == 0

    ended = page.locator(f"article[id='turn-{stopped}'] .turn-state")
    assert await ended.inner_text() == "stopped"
    assert "state-stopped" in (await ended.get_attribute("class") or "")
    assert await turn.locator(".turn-state").inner_text() == "answered"
    await rig.screenshot(page, "turn")


async def test_the_pages_fit_a_phone(rig: ConsoleRig, phone: Page) -> None:
    await records.outcome_turns(rig.app.store)
    await records.audit_rows(rig.app.store, 6)
    await records.grant(rig.app.store)
    await records.job(rig.app.store)
    await records.pairing(rig.app.store, "ABCD2345")
    await rig.sign_in(phone, ADMIN)
    paths = [
        "/approvals",
        "/grants",
        "/audit",
        "/turns",
        "/channels",
        "/schedules",
        "/pairing",
        "/usage",
        "/channels/metrics",
        "/configuration",
    ]
    for path in paths:
        await phone.goto(rig.url(path))
        await phone.locator("main h1").first.wait_for()
        await no_sideways_scroll(phone)
    await open_session(rig, phone)
    await no_sideways_scroll(phone)
    # the outcome still reads on a phone
    assert "denied by" in await phone.locator("article.turn").first.inner_text() or (
        "denied by" in await phone.locator("article.turn").nth(1).inner_text()
    )
    await rig.screenshot(phone, "turn-phone")
    await phone.goto(rig.url("/approvals"))
    await rig.screenshot(phone, "pending-approvals-phone")
