"""Signing in to the console in a real browser, through what the bot sends to a Telegram DM:
the link (opened, then confirmed with a button: a link preview spends nothing), the code
typed in the browser that asked, the same answer for an id that may not sign in (and no
message to it), an expired or already used link, and signing out."""

from __future__ import annotations

import time

import pytest
from playwright.async_api import Browser, Page

from bot.webconsole import links
from bot.webconsole.viewer import Identity
from tests.web.harness import APPROVER, STRANGER, ConsoleRig

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]


async def test_sign_in_with_the_link_then_sign_out(rig: ConsoleRig, page: Page) -> None:
    await page.goto(rig.url("/sign-in"))
    await page.fill("input[name=user]", str(APPROVER))
    await rig.screenshot(page, "sign-in")
    await rig.ask_for_link(page, APPROVER)
    await rig.screenshot(page, "sign-in-sent")
    text = await rig.sign_in_message(APPROVER)
    link = rig.link_in(text)
    assert link.startswith(rig.origin)

    # opening the link (what a link preview does) signs nobody in and spends nothing
    preview = await page.request.get(link)
    assert preview.status == 200
    await page.goto(link)
    await page.click("button:has-text('Sign in')")
    await page.wait_for_selector("text=Pending approvals")
    assert f"telegram:{APPROVER}" in await page.inner_text("header")
    cookie = next(c for c in await page.context.cookies() if c["name"] == "hatchway_console")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/console"
    assert not cookie["secure"]  # plain http here; https in web.public_url makes it Secure

    await page.click("button:has-text('Sign out')")
    await page.wait_for_selector("text=Send me a sign-in link")
    answer = await page.goto(rig.url("/approvals"))
    assert answer is not None and answer.url.startswith(rig.url("/sign-in"))

    # the link worked once
    await page.goto(link)
    assert "has expired or was already used" in await page.inner_text("main")


async def test_sign_in_with_the_code(rig: ConsoleRig, page: Page) -> None:
    await rig.ask_for_link(page, APPROVER)
    code = rig.code_in(await rig.sign_in_message(APPROVER))
    await page.fill("input[name=code]", code.lower().replace("-", " "))
    await page.click("button:has-text('Sign in')")
    await page.wait_for_selector(f"text=telegram:{APPROVER}")
    assert "Pending approvals" in await page.inner_text("h1")


async def test_the_code_counts_only_in_the_browser_that_asked(
    rig: ConsoleRig, page: Page, browser: Browser
) -> None:
    await rig.ask_for_link(page, APPROVER)
    code = rig.code_in(await rig.sign_in_message(APPROVER))
    other = await browser.new_context()
    try:
        elsewhere = await other.new_page()
        await elsewhere.goto(rig.url("/sign-in"))
        nonce = next(c for c in await other.cookies() if c["name"] == "hatchway_console_form")
        typed = await elsewhere.request.post(
            rig.url("/sign-in/code"),
            form={"csrf": nonce["value"], "code": code},
            max_redirects=0,
        )
        assert typed.status == 403
    finally:
        await other.close()
    # the code was not spent by the failed attempt: it still works where it was asked for
    await page.fill("input[name=code]", code)
    await page.click("button:has-text('Sign in')")
    await page.wait_for_selector(f"text=telegram:{APPROVER}")


async def test_an_id_that_may_not_sign_in_gets_the_same_answer_and_no_message(
    rig: ConsoleRig, page: Page
) -> None:
    await rig.ask_for_link(page, STRANGER)
    stranger_page = (await page.inner_text("main")).replace(str(STRANGER), "ID")
    await rig.ask_for_link(page, APPROVER)
    approver_page = (await page.inner_text("main")).replace(str(APPROVER), "ID")
    assert stranger_page == approver_page
    # asks are sent in order: once the approver's message is out, the stranger's ask is done
    await rig.sign_in_message(APPROVER)
    assert rig.messages_to(STRANGER) == []


async def test_an_expired_link_is_refused(rig: ConsoleRig, page: Page) -> None:
    issued = await links.issue(
        rig.app.store.web,
        Identity(kind="telegram", user_id=str(APPROVER)),
        origin=rig.origin,
        ttl_s=300,
        now=time.time() - 301,
    )
    answer = await page.goto(issued.url)
    assert answer is not None and answer.status == 410
    assert "has expired or was already used" in await page.inner_text("main")
    token = issued.url.rsplit("=", 1)[1]
    nonce = next(c for c in await page.context.cookies() if c["name"] == "hatchway_console_form")
    posted = await page.request.post(
        rig.url("/sign-in/link"), form={"csrf": nonce["value"], "token": token}, max_redirects=0
    )
    assert posted.status == 410
    assert not [c for c in await page.context.cookies() if c["name"] == "hatchway_console"]
