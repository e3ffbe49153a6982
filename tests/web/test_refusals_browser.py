"""What the console refuses, in a real browser signed in through the chat: a replayed form
post, a post without the CSRF token, a requester approving their own call, an admin who is
not an approver of the channel deciding, and a person who is no longer an approver opening a
page. Each refusal leaves the call waiting (or decided once), the tool run at most once, and
the refused decisions audited like refused clicks."""

from __future__ import annotations

import pytest
from playwright.async_api import Page

from tests.web.harness import ADMIN, APPROVER, REQUESTER, ConsoleRig

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]


async def _pending_card(rig: ConsoleRig, page: Page) -> str:
    """Ask for a deploy and wait for its card on the approvals page; its decide URL."""
    await page.goto(rig.url("/approvals"))
    await rig.deploy_asked("v2")
    card = page.locator("article.approval")
    await card.wait_for()
    approval_id = (await card.get_attribute("id") or "").removeprefix("approval-")
    return rig.url(f"/approvals/{approval_id}/decide")


async def _csrf(page: Page) -> str:
    """The session's CSRF token, as every form of the page carries it."""
    token = await page.locator("form.sign-out input[name=csrf]").get_attribute("value")
    assert token
    return token


def _reload_with_approvers(rig: ConsoleRig, *approvers: int) -> None:
    """Reload the settings (as SIGHUP does) with only ``approvers`` on telegram.main."""
    settings = rig.app.settings
    main = settings.channels.get("telegram", "main")
    assert main is not None
    telegram = main.model_copy(update={"approvers": [str(a) for a in approvers]})
    channels = settings.channels.model_copy(update={"telegram": {"main": telegram}})
    rig.app.reload(settings.model_copy(update={"channels": channels}))


async def test_a_replayed_form_post_is_refused(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, APPROVER)
    await _pending_card(rig, page)
    async with page.expect_request(lambda r: r.method == "POST" and "/decide" in r.url) as sent:
        await page.locator("article.approval button[value=approve]").click()
    await page.wait_for_selector("text=Approved. The call runs now.")
    posted = await sent.value

    replay = await page.request.post(
        posted.url,
        data=posted.post_data,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        max_redirects=0,
    )
    assert replay.status == 409
    assert "already decided" in await replay.text()
    await rig.tg.wait_for("sendMessage", lambda c: "Deployed v2." in str(c.params.get("text")))
    assert rig.ran == [{"version": "v2"}]
    decisions = [str(r.decision) for r in await rig.app.store.audit.since()]
    assert decisions.count("approved") == 1


async def test_a_post_without_the_csrf_token_is_refused(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, APPROVER)
    decide = await _pending_card(rig, page)
    fingerprint = await page.locator("input[name=fingerprint]").first.get_attribute("value")
    form: dict[str, str | float | bool] = {"choice": "approve", "fingerprint": fingerprint or ""}

    missing = await page.request.post(decide, form=form, max_redirects=0)
    wrong = await page.request.post(decide, form={**form, "csrf": "0" * 64}, max_redirects=0)
    assert (missing.status, wrong.status) == (403, 403)
    assert "CSRF" in await missing.text()
    assert rig.ran == []
    [row] = await rig.app.store.approvals.list()
    assert row.status == "pending"
    # the same post with the token is what the page sends, and counts
    accepted = await page.request.post(
        decide, form={**form, "csrf": await _csrf(page)}, max_redirects=0
    )
    assert accepted.status == 303


async def test_the_requester_cannot_approve_their_own_call(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, REQUESTER)
    decide = await _pending_card(rig, page)
    card = page.locator("article.approval")
    assert "You asked for this call" in await card.inner_text()
    assert await card.locator("button[value=approve]").count() == 0

    row = (await rig.app.store.approvals.list())[0]
    forged = await page.request.post(
        decide,
        form={"csrf": await _csrf(page), "choice": "approve", "fingerprint": row.fingerprint},
        max_redirects=0,
    )
    assert forged.status == 403
    assert "You cannot approve your own request." in await forged.text()
    assert rig.ran == []
    refused = [r for r in await rig.app.store.audit.since() if r.decided_by == str(REQUESTER)]
    assert [(r.decision, r.reason) for r in refused] == [("click_refused:approve", "self_approval")]


async def test_an_admin_who_is_not_an_approver_reads_but_cannot_decide(
    rig: ConsoleRig, page: Page
) -> None:
    await rig.sign_in(page, ADMIN)
    decide = await _pending_card(rig, page)
    card = page.locator("article.approval")
    assert "Read only" in await card.inner_text()
    assert await card.locator("form").count() == 0

    row = (await rig.app.store.approvals.list())[0]
    forged = await page.request.post(
        decide,
        form={"csrf": await _csrf(page), "choice": "deny", "fingerprint": row.fingerprint},
        max_redirects=0,
    )
    assert forged.status == 403
    assert "not authorised" in await forged.text()
    refused = [r for r in await rig.app.store.audit.since() if r.decided_by == str(ADMIN)]
    assert [(r.decision, r.reason) for r in refused] == [("click_refused:deny", "not_authorised")]
    [still] = await rig.app.store.approvals.list()
    assert still.status == "pending"


async def test_a_removed_approver_is_refused_at_the_next_page(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, APPROVER)
    await page.goto(rig.url("/approvals"))
    _reload_with_approvers(rig, REQUESTER)

    answer = await page.goto(rig.url("/approvals"))
    assert answer is not None and answer.status == 403
    assert "is not an approver of any channel" in await page.inner_text("main")


async def test_a_refused_identity_may_sign_in_as_another(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, APPROVER)
    _reload_with_approvers(rig, REQUESTER)
    answer = await page.goto(rig.url("/approvals"))
    assert answer is not None and answer.status == 403
    assert await page.locator("header nav a").count() == 0

    await rig.sign_in(page, REQUESTER)
    assert "Pending approvals" in await page.inner_text("h1")
