"""Pending approvals in a real browser: sign in through the link the bot sent to the
approver's Telegram DM, watch a request appear without a reload, approve it; the tool runs
once and the chat's cards show the outcome."""

from __future__ import annotations

import pytest
from playwright.async_api import Page

from tests.web.harness import APPROVER, ConsoleRig

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]


async def test_approve_from_the_console(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, APPROVER)
    await page.goto(rig.url("/approvals"))
    await page.wait_for_selector("text=Nothing is waiting for a decision.")
    # a mark on the window: still there later means the page was never reloaded
    await page.evaluate("window.keptSinceLoad = true")

    await rig.deploy_asked("v2")
    card = page.locator("article.approval")
    await card.wait_for()
    assert await page.evaluate("window.keptSinceLoad === true")
    assert "deploy" in await card.locator(".tool").inner_text()
    assert "version: v2" in await card.locator("pre.arguments").inner_text()
    await rig.screenshot(page, "pending-approvals")

    await card.locator("button[value=approve]").click()
    await page.wait_for_selector("text=Approved. The call runs now.")
    await rig.tg.wait_for("sendMessage", lambda c: "Deployed v2." in str(c.params.get("text")))
    assert rig.ran == [{"version": "v2"}]
    await rig.tg.wait_for(
        "editMessageText", lambda c: "Approved: deploy" in str(c.params.get("text"))
    )
    rows = await rig.app.store.audit.since()
    [decision] = [r for r in rows if r.decision == "approved"]
    assert (decision.decided_by, decision.reason) == (str(APPROVER), "web")
