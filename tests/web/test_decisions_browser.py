"""From a decision to its call and back, in a real browser: an approver denies a request with a
reply from the console; the audit log says so in the chat's words with the requester by name
and id and the turn and call ids its row recorded (and the ``hatchway receipts verify`` command),
its link leads to that call on the turns page, which says "denied with a reply by" the
approver; the audit log and the turns page find the request by the requester's id and
nothing by anyone else's."""

from __future__ import annotations

from dataclasses import replace

import pytest
from playwright.async_api import Page

from tests.web.harness import APPROVER, REQUESTER, ConsoleRig

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]


async def test_a_decision_leads_to_its_call(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, APPROVER)
    await page.goto(rig.url("/approvals"))
    rig.llm.queue_tool_calls([("deploy", {"version": "v9"})])
    rig.llm.queue_text("Not deploying, as asked.")
    await rig.ask("deploy v9")
    card = page.locator("article.approval")
    await card.wait_for()
    # the card names the requester by the name Telegram gave, beside the id
    assert f"Ann ({REQUESTER})" in await card.inner_text()
    await card.locator("textarea[name=reply]").fill("Frozen until Monday.")
    await card.locator("button[value=reply]").click()
    await page.wait_for_selector("text=Denied with your reply.")
    await rig.tg.wait_for("sendMessage", lambda c: "Not deploying" in str(c.params.get("text")))
    # the audit row names its call by the ids it recorded
    [entry] = await rig.app.store.audit.since()
    [call] = await rig.app.store.tool_calls.for_turns([entry.turn_id or ""])
    assert call.call_id == entry.call_id
    assert call.decision == "edited" and call.decided_by == str(APPROVER)

    await page.goto(rig.url("/audit"))
    row = page.locator("#audit-rows tbody tr").first
    await row.wait_for()
    assert await row.locator("td.decision").inner_text() == "denied with a reply"
    text = await row.inner_text()
    assert f"Ann ({REQUESTER})" in text
    assert f"hatchway receipts verify --turn {call.turn_id}" in text
    assert "edited" not in text
    await rig.screenshot(page, "audit-decision")

    await row.locator("td.call-ref a").click()
    cell = page.locator(f"tr[id='call-{call.call_id}'] td.outcome")
    await cell.wait_for()
    assert await cell.inner_text() == f"denied with a reply by {APPROVER}"
    answer = await page.locator("article.turn").first.inner_text()
    assert "Not deploying, as asked." in answer

    # search by person: the requester finds it, someone else finds nothing
    await page.goto(rig.url(f"/audit?person={REQUESTER}"))
    await page.locator("#audit-rows").wait_for()
    assert await page.locator("#audit-rows tbody tr").count() == 1
    await page.goto(rig.url(f"/audit?person={APPROVER}"))
    await page.locator("#audit-rows").wait_for()
    assert await page.locator("#audit-rows tbody tr").count() == 1  # who decided
    await page.goto(rig.url("/audit?person=31337"))
    await page.wait_for_selector("text=No decision matches.")
    await page.goto(rig.url(f"/turns?person={REQUESTER}"))
    sessions = page.locator("#sessions tbody tr")
    await sessions.first.wait_for()
    assert await sessions.count() == 1
    await sessions.first.locator("a").click()
    await page.locator("#person-filter").wait_for()
    assert await page.locator("article.turn").count() == 1
    await page.goto(rig.url("/turns?person=31337"))
    await page.wait_for_selector("text=No conversation where 31337 wrote.")

    # a row written before the ids were kept says so, and links nowhere
    await rig.app.store.audit.append(replace(entry, at=entry.at + 1, turn_id=None, call_id=None))
    await page.goto(rig.url("/audit"))
    old = page.locator("#audit-rows tbody tr").first
    await old.wait_for()
    assert await old.locator("td.call-ref").inner_text() == "not recorded"
    assert await old.locator("td.call-ref a").count() == 0
