"""The record pages in a real browser, signed in through the chat link: every page renders
what the store holds (hostile text shown as text, never run), the audit log filters, pages
and exports CSV, the turns page shows each call's outcome, approver and receipt check, the
health page shows channels, chain, queue and figures; an approver sees only their channel."""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Download, Page

from bot.metrics import Metrics
from tests.fakes.telegram_setup import TOKEN
from tests.web import console_records as records
from tests.web.harness import ADMIN, APPROVER, LLM_KEY_ENV, ConsoleRig, console_rig

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]

RECEIPT_KEY = "k" * 32


@pytest_asyncio.fixture(loop_scope="module")
async def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ConsoleRig]:
    """The console's rig with the daemon's metrics and a receipt key in the environment."""
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv(LLM_KEY_ENV, "test-key")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("HATCHWAY_RECEIPT_KEY", RECEIPT_KEY)
    metrics = Metrics()
    async with console_rig(tmp_path, metrics=metrics) as running:
        metrics.track(running.app)  # as the daemon does once the App runs
        yield running


async def nothing_ran(page: Page) -> None:
    """No script the records carried ran, and their markup is text."""
    assert await page.evaluate("window.pwned === undefined")
    assert await page.locator("main b:has-text('bold')").count() == 0


async def test_an_admin_reads_every_page(rig: ConsoleRig, page: Page) -> None:
    store = rig.app.store
    await records.audit_rows(store, 12)
    mine, _theirs = await records.turns(store)
    await records.signed_calls(store, mine, "telegram.main:1001", RECEIPT_KEY)
    await records.grant(store)
    await records.job(store)
    await records.pairing(store, "ABCD2345")
    await rig.sign_in(page, ADMIN)
    nav = page.locator("header nav")
    for title in ("Grants", "Audit log", "Turns", "Channels and health", "Schedules", "Pairing"):
        assert await nav.locator(f"a:has-text('{title}')").count() == 1

    await nav.locator("a:has-text('Grants')").click()
    await page.wait_for_selector("#live-grants")
    assert "telegram.main" in await page.locator("#live-grants").inner_text()
    await rig.screenshot(page, "grants")

    await nav.locator("a:has-text('Audit log')").click()
    rows = page.locator("#audit-rows tbody tr")
    await rows.first.wait_for()
    assert await rows.count() == 12
    assert records.FORMULA in await page.locator("#audit-rows").inner_text()
    assert records.HOSTILE in await page.locator("#audit-rows").inner_text()
    await nothing_ran(page)
    await rig.screenshot(page, "audit-log")

    await nav.locator("a:has-text('Turns')").click()
    await page.wait_for_selector("#sessions")
    sessions = await page.locator("#sessions").inner_text()
    assert "telegram.main:1001" in sessions and "slack.ops:C9" in sessions
    await rig.screenshot(page, "turns")
    await page.locator("#sessions a:has-text('telegram.main:1001')").click()
    turn = page.locator("article.turn")
    await turn.wait_for()
    text = await turn.inner_text()
    assert records.HOSTILE in text
    calls = turn.locator("table.calls tbody tr")
    assert await calls.count() == 3
    calculator, ping, fetch = await calls.all_inner_texts()
    assert "calculator" in calculator and "no receipt" in calculator
    assert "ran (failed or not: not recorded)" in calculator  # a row of the old shape
    assert "ping" in ping and "OK" in ping and "2002" in ping and "host: db1" in ping
    assert "fetch" in fetch and "CHANGED since signed: observation" in fetch
    assert RECEIPT_KEY not in await page.content()
    await nothing_ran(page)

    await nav.locator("a:has-text('Channels and health')").click()
    await page.wait_for_selector("#channel-health")
    health = await page.locator("#channel-health").inner_text()
    assert "telegram.main" in health and "connected" in health
    chain = await page.locator("#provider-chains").inner_text()
    assert "gpt-4o-mini" in chain and "default" in chain and "test-key" not in chain
    summary = await page.locator("#health-summary").inner_text()
    assert "approval decisions today" in summary and "1 of 1" in summary
    assert "requests pending now" in summary and "in the last hour" in summary
    assert await page.locator("#figures").count() == 0  # the raw figures are a link away
    await rig.screenshot(page, "channels-health")
    await page.locator("#raw-metrics").click()
    figures = await page.locator("#figures").inner_text()
    assert "hatchway_turns_running" in figures and "hatchway_channel_up" in figures
    assert "hatchway_inbox_entries" in figures

    await nav.locator("a:has-text('Schedules')").click()
    await page.wait_for_selector("#jobs")
    assert "standup" in await page.locator("#jobs").inner_text()
    await nothing_ran(page)
    await rig.screenshot(page, "schedules")

    await nav.locator("a:has-text('Pairing')").click()
    await page.wait_for_selector("#pending-pairings")
    assert "ABCD2345" in await page.locator("#pending-pairings").inner_text()
    await nothing_ran(page)
    await rig.screenshot(page, "pairing")


async def downloaded(download: Download) -> str:
    """The text of a file the browser downloaded."""
    path = await download.path()
    return await asyncio.to_thread(Path(path).read_text, encoding="utf-8")


async def _ids(page: Page) -> list[int]:
    cells = await page.locator("#audit-rows tbody tr td:first-child").all_inner_texts()
    return [int(c) for c in cells]


async def test_the_audit_log_filters_pages_and_exports(rig: ConsoleRig, page: Page) -> None:
    ids = await records.audit_rows(rig.app.store, 130)
    newest_first = ids[::-1]
    await rig.sign_in(page, ADMIN)
    await page.goto(rig.url("/audit"))
    await page.wait_for_selector("#audit-rows")
    assert await _ids(page) == newest_first[:50]
    await page.locator("a[rel=next]").first.click()
    await page.wait_for_url("**before=**")
    assert await _ids(page) == newest_first[50:100]
    await page.locator("a[rel=next]").first.click()
    await page.wait_for_url(lambda url: url.count("before=") == 1 and "before=" in url)
    assert await _ids(page) == newest_first[100:]
    assert await page.locator("a[rel=next]").count() == 0
    await page.locator("a[rel=prev]").first.click()
    await page.wait_for_url("**after=**")
    assert await _ids(page) == newest_first[50:100]

    # filters: every fourth row was denied, a third of them are shell calls
    await page.goto(rig.url("/audit"))
    await page.select_option("select[name=decision]", "denied")
    await page.fill("input[name=tool]", "shell")
    await page.click("#audit-filters button[type=submit]")
    await page.wait_for_url("**decision=denied**")
    expected = [i for n, i in enumerate(ids) if n % 4 == 0 and records.TOOLS[n % 3] == "shell"][
        ::-1
    ]
    assert await _ids(page) == expected
    assert set(await page.locator("#audit-rows td.decision").all_inner_texts()) == {"denied"}

    async with page.expect_download() as download:
        await page.click("#export-csv")
    table = list(csv.reader(io.StringIO(await downloaded(await download.value))))
    assert table[0][:3] == ["id", "at", "channel"]
    assert [int(r[0]) for r in table[1:]] == expected
    # the whole trail: every hostile requester cell starts with a quote, not a formula
    async with page.expect_download() as everything:
        await page.goto(rig.url("/audit"))
        await page.click("#export-csv")
    rows = list(csv.DictReader(io.StringIO(await downloaded(await everything.value))))
    assert len(rows) == 130
    hostile = [r["requester"] for r in rows if "HYPERLINK" in r["requester"]]
    assert hostile and all(cell == "'" + records.FORMULA for cell in hostile)
    assert not any(cell.startswith(("=", "+", "-", "@")) for r in rows for cell in r.values())


async def test_a_bad_filter_is_answered_with_what_is_wrong(rig: ConsoleRig, page: Page) -> None:
    await rig.sign_in(page, ADMIN)
    for query, words in (
        ("decision=maybe", "not a decision"),
        ("from=yesterday", "neither a day"),
        ("before=garbage", "not a position"),
    ):
        answer = await page.goto(rig.url(f"/audit?{query}"))
        assert answer is not None and answer.status == 400
        assert words in await page.locator("p.error").inner_text()


async def test_an_approver_sees_only_their_channel(rig: ConsoleRig, page: Page) -> None:
    store = rig.app.store
    ids = await records.audit_rows(store, 30)
    await records.turns(store)
    await rig.sign_in(page, APPROVER)
    nav = await page.locator("header nav").inner_text()
    assert "Audit log" in nav and "Turns" in nav
    assert "Grants" not in nav and "Schedules" not in nav and "Pairing" not in nav

    await page.goto(rig.url("/audit"))
    await page.wait_for_selector("#audit-rows")
    telegram = [i for n, i in enumerate(ids) if n % 3 != 2][::-1]
    assert await _ids(page) == telegram
    options = await page.locator("select[name=channel] option").all_inner_texts()
    assert records.OTHER not in options
    # asking for the other channel by name finds nothing, on the page and in the export
    await page.goto(rig.url(f"/audit?channel={records.OTHER}"))
    assert await page.locator("text=No decision matches.").count() == 1
    export = await page.request.get(rig.url(f"/audit/export.csv?channel={records.OTHER}"))
    assert export.status == 200
    assert (await export.text()).strip().splitlines()[1:] == []
    everything = await page.request.get(rig.url("/audit/export.csv"))
    exported = list(csv.DictReader(io.StringIO(await everything.text())))
    assert {r["channel"] for r in exported} == {records.TELEGRAM}

    await page.goto(rig.url("/turns"))
    sessions = await page.locator("#sessions").inner_text()
    assert "telegram.main:1001" in sessions and "slack.ops" not in sessions
    await page.goto(rig.url("/turns/session?key=slack.ops:C9"))
    assert await page.locator("article.turn").count() == 0
    assert await page.locator("text=No turn in this conversation").count() == 1

    await page.goto(rig.url("/channels"))
    health = await page.locator("#channel-health").inner_text()
    assert "telegram.main" in health
    await page.goto(rig.url("/channels/metrics"))
    figures = await page.locator("#figures").inner_text()
    assert "channel=slack" not in figures
