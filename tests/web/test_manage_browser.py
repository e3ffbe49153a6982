"""What an admin changes on the console, in a real browser signed in through the chat link:
grants revoked and created (a created grant lets the next call run unasked), a scheduled job
paused, resumed and removed, pairing requests approved (the stranger is answered from then
on) and rejected. Each change is a form post answered with a redirect, so a reload changes
nothing. An approver who is not an admin gets 403 for each page and each post."""

from __future__ import annotations

import pytest
from playwright.async_api import Page

from bot.schedules.book import ScheduleBook
from tests.web import console_records as records
from tests.web.harness import ADMIN, APPROVER, REQUESTER, STRANGER, ConsoleRig

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]


async def test_an_admin_revokes_and_creates_grants(rig: ConsoleRig, page: Page) -> None:
    store = rig.app.store
    kept = await records.grant(store, "shell")
    revoked = await records.grant(store, "write_file")
    await rig.sign_in(page, ADMIN)
    await page.goto(rig.url("/grants"))
    await page.locator(f"#grant-{revoked} button:has-text('Revoke')").click()
    await page.wait_for_selector(f"text=Grant {revoked} revoked")
    assert "/grants?done=revoked" in page.url
    record = await store.grants.get(revoked)
    assert record is not None and record.revoked_at is not None
    assert "revoked" in await page.locator(f"#ended-grants #grant-{revoked}").inner_text()
    still = await store.grants.get(kept)
    assert still is not None and still.revoked_at is None

    # a conversation grant needs its conversation: refused, nothing stored
    form = page.locator("#create-grant")
    await form.locator("input[name=tool]").fill("deploy")
    await form.locator("select[name=scope]").select_option("conversation")
    async with page.expect_response(lambda r: r.request.method == "POST") as refused:
        await form.locator("button[type=submit]").click()
    assert (await refused.value).status == 400
    assert "needs the conversation's id" in await page.locator("p.error").inner_text()
    assert len(await store.grants.list(now=0, include_inactive=True)) == 2

    await form.locator("input[name=conversation]").fill(str(REQUESTER))
    await form.locator("input[name=hours]").fill("2")
    await form.locator("button[type=submit]").click()
    await page.wait_for_selector("text=created.")
    await page.reload()  # the redirect's page: reloading it posts nothing again
    grants = await store.grants.list(now=0, include_inactive=True)
    [created] = [g for g in grants if g.tool == "deploy"]
    assert (created.scope, created.scope_key) == ("conversation", f"telegram.main:{REQUESTER}")
    assert created.granted_by == f"telegram:{ADMIN}"
    assert created.expires_at is not None and created.expires_at - created.created_at == 7200
    assert created.size == "console"
    row = await page.locator(f"#live-grants #grant-{created.id}").inner_text()
    assert "console" in row
    old = await page.locator(f"#live-grants #grant-{kept}").inner_text()
    assert "always (size not recorded)" in old  # made before sizes were kept

    # the grant is live: the requester's next deploy runs without a card
    await rig.deploy_asked("v3")
    await rig.tg.wait_for("sendMessage", lambda c: "Deployed v3." in str(c.params.get("text")))
    assert rig.ran == [{"version": "v3"}]
    assert await store.approvals.list() == []


async def test_an_admin_pauses_resumes_and_removes_a_job(rig: ConsoleRig, page: Page) -> None:
    book = ScheduleBook(rig.app.store.schedules)
    job = await records.job(rig.app.store)
    await rig.sign_in(page, ADMIN)
    await page.goto(rig.url("/schedules"))
    row = page.locator(f"#job-{job.id}")
    assert "active" in await row.locator("td").nth(1).inner_text()

    await row.locator("button:has-text('Pause')").click()
    await page.wait_for_selector(f"text=Job {job.id} paused")
    paused = await book.get(job.id)
    assert paused is not None and paused.paused
    assert await row.locator("td").nth(1).inner_text() == "paused"
    await page.reload()
    assert (await book.get(job.id)) == paused

    await row.locator("button:has-text('Resume')").click()
    await page.wait_for_selector(f"text=Job {job.id} resumed")
    resumed = await book.get(job.id)
    assert resumed is not None and resumed.enabled and resumed.next_run_at is not None
    assert await row.locator("td").nth(1).inner_text() == "active"

    await row.locator("button:has-text('Remove')").click()
    await page.wait_for_selector(f"text=Job {job.id} removed")
    assert await book.get(job.id) is None
    assert await page.locator(f"#job-{job.id}").count() == 0


async def test_an_admin_approves_and_rejects_pairing_requests(rig: ConsoleRig, page: Page) -> None:
    store = rig.app.store
    await records.pairing(store, "STRA2345", user_id=str(STRANGER))
    await records.pairing(store, "MALL2345", user_id="5005")
    await rig.sign_in(page, ADMIN)
    await page.goto(rig.url("/pairing"))
    await page.locator("#pairing-STRA2345 button:has-text('Approve')").click()
    await page.wait_for_selector("text=Pairing STRA2345 approved")
    assert await store.pairings.is_paired("telegram.main", str(STRANGER))
    approved = await store.pairings.get("STRA2345")
    assert approved is not None and approved.approved_by == f"telegram:{ADMIN}"

    await page.locator("#pairing-MALL2345 button:has-text('Reject')").click()
    await page.wait_for_selector("text=Pairing MALL2345 rejected")
    rejected = await store.pairings.get("MALL2345")
    assert rejected is not None and rejected.status == "rejected"
    assert not await store.pairings.is_paired("telegram.main", "5005")
    earlier = await page.locator("#earlier-pairings").inner_text()
    assert "approved" in earlier and "rejected" in earlier
    assert await page.locator("#pending-pairings").count() == 0
    # deciding again changes nothing
    again = await page.request.post(
        rig.url("/pairing/MALL2345/approve"), form={"csrf": await _csrf(page)}, max_redirects=0
    )
    assert again.status == 303 and "done=gone" in again.headers["location"]
    assert not await store.pairings.is_paired("telegram.main", "5005")

    # the stranger is let in: the bot answers their DM
    rig.llm.queue_text("Welcome aboard.")
    await rig.ask("hello", sender=STRANGER)
    await rig.tg.wait_for(
        "sendMessage",
        lambda c: (
            c.params.get("chat_id") == STRANGER and "Welcome aboard." in str(c.params["text"])
        ),
    )


async def _csrf(page: Page) -> str:
    token = await page.locator("form.sign-out input[name=csrf]").get_attribute("value")
    assert token
    return token


async def test_an_approver_who_is_not_an_admin_cannot_manage(rig: ConsoleRig, page: Page) -> None:
    store = rig.app.store
    grant = await records.grant(store)
    job = await records.job(store)
    await records.pairing(store, "WAIT2345")
    await rig.sign_in(page, APPROVER)
    for path in ("/grants", "/schedules", "/pairing"):
        answer = await page.goto(rig.url(path))
        assert answer is not None and answer.status == 403, path
        assert "console admins" in await page.locator("main").inner_text()
    await page.goto(rig.url("/audit"))  # a page they may open, for the session's token
    token = await _csrf(page)
    for path in (
        f"/grants/{grant}/revoke",
        "/grants",
        f"/schedules/{job.id}/pause",
        f"/schedules/{job.id}/remove",
        "/pairing/WAIT2345/approve",
        "/pairing/WAIT2345/reject",
    ):
        posted = await page.request.post(
            rig.url(path),
            form={"csrf": token, "tool": "shell", "scope": "global"},
            max_redirects=0,
        )
        assert posted.status == 403, path
    record = await store.grants.get(grant)
    assert record is not None and record.revoked_at is None
    assert len(await store.grants.list(now=0, include_inactive=True)) == 1
    still = await ScheduleBook(store.schedules).get(job.id)
    assert still is not None and still.enabled
    waiting = await store.pairings.get("WAIT2345")
    assert waiting is not None and waiting.status == "pending"
