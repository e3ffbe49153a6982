"""Conversations by title in a real browser: a conversation whose title the console keeps
(here written as the gateway would keep it, with a right-to-left override in it) reads by
that title with its id beside it on the pending card, the audit log, the turns pages and
the grants page, cleaned as people's names are; at a phone's width too, with no sideways
scroll. A conversation with no title kept reads by its id alone."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page

from bot.approval.grants import new_grant
from tests.web.conftest import WAIT_MS
from tests.web.harness import ADMIN, APPROVER, REQUESTER, ConsoleRig
from tests.web.test_turns_browser import PHONE, no_sideways_scroll

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]

PLACE = f"telegram.main:{REQUESTER}"
TITLE = "Ops \u202edesk"
SHOWN = f"Ops \\u202edesk ({REQUESTER})"


@pytest_asyncio.fixture(loop_scope="module")
async def phone(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    context.set_default_timeout(WAIT_MS)
    opened = await context.new_page()
    yield opened
    await context.close()


async def test_conversations_read_by_title_beside_their_id(
    rig: ConsoleRig, page: Page, phone: Page
) -> None:
    store = rig.app.store
    await store.conversation_titles.remember(PLACE, TITLE, time.time())
    await rig.sign_in(page, APPROVER)
    await page.goto(rig.url("/approvals"))
    await rig.deploy_asked("v4")
    card = page.locator("article.approval")
    await card.wait_for()
    assert f"telegram.main · {SHOWN}" in await card.inner_text()
    assert "\u202e" not in await card.inner_text()  # shown, never obeyed
    await card.locator("button[value=approve]").click()
    await page.wait_for_selector("text=Approved. The call runs now.")
    await rig.tg.wait_for("sendMessage", lambda c: "Deployed v4." in str(c.params.get("text")))

    await page.goto(rig.url("/audit"))
    row = page.locator("#audit-rows tbody tr").first
    await row.wait_for()
    assert f"telegram.main · {SHOWN}" in await row.inner_text()

    await page.goto(rig.url("/turns"))
    session = page.locator("#sessions tbody tr").first
    await session.wait_for()
    assert await session.locator(".place-title").inner_text() == "Ops \\u202edesk"
    assert PLACE in await session.inner_text()
    await session.locator("a").click()
    heading = page.locator("h1")
    await heading.locator(".place-title").wait_for()
    assert await heading.inner_text() == f"Turns of Ops \\u202edesk {PLACE}"

    # a conversation grant names its conversation; one of another conversation, its key alone
    now = time.time()
    for conversation in (str(REQUESTER), "777"):
        await store.grants.create(
            new_grant(
                tool="deploy",
                scope="conversation",
                channel="telegram.main",
                conversation_id=conversation,
                granted_by=str(ADMIN),
                now=now,
                ttl_s=None,
            )
        )
    await rig.sign_in(phone, ADMIN)
    await phone.goto(rig.url("/grants"))
    grants = phone.locator("#live-grants tbody tr")
    await grants.first.wait_for()
    wheres = {await grants.nth(i).locator("td.mono").nth(1).inner_text() for i in range(2)}
    assert wheres == {f"Ops \\u202edesk ({PLACE})", "telegram.main:777"}
    await no_sideways_scroll(phone)
    for path in ("/audit", "/turns"):
        await phone.goto(rig.url(path))
        await phone.get_by_text("Ops \\u202edesk").first.wait_for()
        await no_sideways_scroll(phone)
    await rig.screenshot(phone, "titles-phone")
