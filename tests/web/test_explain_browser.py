"""The Explain page in a real browser: the console's form of ``hatchway policy explain``
against the running bot (its tools, its database, its Telegram channel), the answer it
gives, and the clear message a question that cannot be answered gets; markup and secrets in
the arguments are shown as the card shows them, never run; a question without the form's
CSRF token is refused."""

from __future__ import annotations

import json

import pytest
from playwright.async_api import Page

from tests.web.harness import ADMIN, APPROVER, REQUESTER, ConsoleRig

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


async def ask(page: Page, tool: str, arguments: str, *, dm: bool = True) -> None:
    await page.select_option("select[name=channel]", "telegram.main")
    await page.fill("input[name=conversation]", str(REQUESTER))
    await page.fill("input[name=user]", str(REQUESTER))
    if dm:
        await page.check("input[name=dm]")
    await page.fill("input[name=tool]", tool)
    await page.fill("textarea[name=arguments]", arguments)
    await page.click("#explain-form button[type=submit]")


async def test_an_admin_asks_why_a_call_would_be_asked(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, ADMIN)
    await page.locator("header nav a:has-text('Explain')").click()
    await page.wait_for_selector("#explain-form")
    await ask(page, "deploy", json.dumps({"version": "v2"}))
    await page.wait_for_selector("#explain-answer")
    assert await page.locator("#explain-decision").inner_text() == "ask"
    rule = await page.locator("#explain-rule").inner_text()
    assert rule.startswith("side-effecting tool: no deny, always_ask, grant or auto_approve")
    approvers = await page.locator("#explain-approvers").inner_text()
    # a DM is seen by its requester alone, who may not approve their own call
    assert f"{APPROVER}: sees the conversation: no" in approvers
    assert f"{REQUESTER} (the requester; self_approval is off): not counted" in approvers
    asked = await page.locator("#explain-asked").inner_text()
    assert asked == "a copy in each approver's direct messages (nobody here can answer)"
    assert "version: v2" in await page.locator("#explain-card").inner_text()
    await rig.screenshot(page, "explain")
    assert rig.ran == []  # nothing ran


async def test_markup_and_secrets_in_the_arguments_are_shown_as_on_the_card(
    rig: ConsoleRig, page: Page
) -> None:
    await rig.sign_in(page, APPROVER)
    await page.goto(rig.url("/explain"))
    hostile = f"<script>window.pwned = 1</script><b>bold</b> {SECRET}"
    await ask(page, "deploy", json.dumps({"version": hostile, "password": "hunter2-swordfish"}))
    card = await page.locator("#explain-card").inner_text()
    assert "<script>window.pwned = 1</script>" in card  # shown as text
    content = await page.content()
    assert SECRET not in content and "hunter2-swordfish" not in content
    assert await page.evaluate("window.pwned === undefined")
    assert await page.locator("main b:has-text('bold')").count() == 0


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        ("nope", "{}", "there is no tool named 'nope'. (the tools: deploy)"),
        ("deploy", '{"version": ', "The arguments are not JSON"),
        ("deploy", "[1, 2]", "The arguments must be a JSON object"),
        ("deploy", "{}", "Not executed"),
    ],
)
async def test_a_question_that_cannot_be_answered_says_why(
    rig: ConsoleRig, page: Page, tool: str, arguments: str, said: str
) -> None:
    await rig.sign_in(page, ADMIN)
    await page.goto(rig.url("/explain"))
    async with page.expect_response(lambda r: r.request.method == "POST") as answered:
        await ask(page, tool, arguments)
    assert (await answered.value).status == 400
    assert said in await page.locator("p.error").inner_text()
    assert await page.locator("#explain-answer").count() == 0
    # the question stays in the form, to be corrected
    assert await page.locator("input[name=tool]").input_value() == tool


async def test_a_channel_not_offered_and_a_missing_token_are_refused(
    rig: ConsoleRig, page: Page
) -> None:
    await rig.sign_in(page, APPROVER)
    await page.goto(rig.url("/explain"))
    await page.evaluate(
        "document.querySelector('select[name=channel]').innerHTML ="
        " '<option value=\"slack.elsewhere\">slack.elsewhere</option>'"
    )
    await page.fill("input[name=conversation]", "C1")
    await page.fill("input[name=user]", "U1")
    await page.fill("input[name=tool]", "deploy")
    await page.click("#explain-form button[type=submit]")
    assert "Pick one of the channels offered" in await page.locator("p.error").inner_text()
    answer = await page.request.post(
        rig.url("/explain"),
        form={"channel": "telegram.main", "conversation": "1", "user": "1", "tool": "deploy"},
    )
    assert answer.status == 403
