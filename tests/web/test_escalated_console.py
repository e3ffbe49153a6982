"""The console follows the chat's rule for a request escalated to someone (issue 39): a
person ``escalate_to`` lists may sign in, sees the request escalated to them and decides it,
as a click on the card would; once a reload takes them out of ``escalate_to`` they neither
see it nor decide it (the configuration in force when the decision is made decides). Over
plain HTTP, with the daemon's App, its console, the Telegram fake and a real SQLite file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.approval import audit
from bot.store.approvals import ApprovalRecord, ApprovalStatus
from bot.store.audit import Decision
from tests.web.harness import LLM_KEY_ENV, STRANGER, ConsoleRig, console_rig
from tests.web.test_sign_in_http import Browser, browser

pytestmark = pytest.mark.asyncio(loop_scope="module")

#: Nobody lists STRANGER but the escalation.
ESCALATED = str(STRANGER)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fakes.telegram_setup import TOKEN

    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv(LLM_KEY_ENV, "test-key")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def reload_escalating(rig: ConsoleRig, *to: str) -> None:
    """Reload the settings (as SIGHUP does) with ``[approval] escalate_to = to``."""
    settings = rig.app.settings
    approval = settings.approval.model_copy(
        update={"escalate_to": list(to), "escalate_after_s": 3600.0}
    )
    rig.app.reload(settings.model_copy(update={"approval": approval}))


async def escalated_request(rig: ConsoleRig) -> ApprovalRecord:
    """A deploy waiting on its card, escalated to :data:`ESCALATED` as the reminder sweep
    records an escalation."""
    await rig.deploy_asked("v2")
    # the card is posted once its row is written
    await rig.tg.wait_for("sendMessage", lambda c: "deploy" in str(c.params.get("text")))
    [row] = await rig.app.store.approvals.list(status=ApprovalStatus.PENDING)
    entry = audit.entry_for_record(
        row, at=row.created_at, decision=Decision.ESCALATED, decided_by="runtime", reason="x"
    )
    assert await rig.app.store.approvals.claim_escalation(
        row.id, [ESCALATED], at=row.created_at, audit=entry
    )
    return row


async def signed_in(rig: ConsoleRig, b: Browser) -> None:
    status, _ = await b.ask(ESCALATED)
    assert status == 200
    answer = await b.follow(rig.link_in(await rig.sign_in_message(STRANGER)))
    assert answer.status == 303


async def approvals_page(rig: ConsoleRig, b: Browser) -> str:
    """The pending approvals page as ``b`` sees it ("" when it is refused)."""
    async with b.client.get(rig.url("/approvals"), headers=b.headers) as answer:
        return await answer.text() if answer.status == 200 else ""


async def test_a_person_escalated_to_decides_in_the_console_as_on_the_card(
    tmp_path: Path,
) -> None:
    async with console_rig(tmp_path, trust_forwarded_for=True) as rig:
        reload_escalating(rig, ESCALATED)
        row = await escalated_request(rig)
        async with browser(rig, "10.0.2.1") as b:
            await signed_in(rig, b)
            page = await approvals_page(rig, b)
            assert f"approval-{row.id}" in page
            assert re.search(r'<button[^>]*value="approve"', page), page
            answer = await b.post(
                f"/approvals/{row.id}/decide",
                {"choice": "approve", "fingerprint": row.fingerprint},
            )
            assert answer.status == 303
        await rig.tg.wait_for("sendMessage", lambda c: "Deployed v2." in str(c.params.get("text")))
        decided = await rig.app.store.approvals.get(row.id)
        assert decided is not None
        assert (decided.status, decided.decided_by) == (ApprovalStatus.APPROVED, ESCALATED)
        assert rig.ran == [{"version": "v2"}]


async def test_a_person_a_reload_took_out_of_escalate_to_is_refused_in_the_console(
    tmp_path: Path,
) -> None:
    async with console_rig(tmp_path, trust_forwarded_for=True) as rig:
        reload_escalating(rig, ESCALATED, "someone-else")
        row = await escalated_request(rig)
        async with browser(rig, "10.0.2.2") as b:
            await signed_in(rig, b)
            assert f"approval-{row.id}" in await approvals_page(rig, b)
            reload_escalating(rig, "someone-else")  # still escalating, no longer to them
            # listed nowhere now: the console is closed to them, the request with it
            assert f"approval-{row.id}" not in await approvals_page(rig, b)
            answer = await b.post(
                f"/approvals/{row.id}/decide",
                {"choice": "approve", "fingerprint": row.fingerprint},
            )
            assert answer.status in (403, 410)
        still = await rig.app.store.approvals.get(row.id)
        assert still is not None and still.status is ApprovalStatus.PENDING
        assert rig.ran == []
