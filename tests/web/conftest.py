"""Fixtures of the console's tests: one headless Chromium per module, a fresh browser context
(cookies included) per test, and the running bot of :mod:`tests.web.harness`.

Chromium is Debian's (``/usr/bin/chromium``, installed by ``.ci/run``): Playwright drives it
and downloads nothing. A browser test module marks itself::

    pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]

so that its tests run in the module's event loop, the one the shared browser lives in; the
fixtures here use that loop too.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright

from tests.fakes.telegram_setup import TOKEN
from tests.web.harness import LLM_KEY_ENV, WAIT_MS, ConsoleRig, console_rig

CHROMIUM = "/usr/bin/chromium"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (.ci/run does)")
    # Chromium refuses to start its sandbox as root (a container's CI user)
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        yield launched
        await launched.close()


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(WAIT_MS)
    opened = await context.new_page()
    yield opened
    await context.close()


@pytest_asyncio.fixture(loop_scope="module")
async def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ConsoleRig]:
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv(LLM_KEY_ENV, "test-key")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    async with console_rig(tmp_path) as running:
        yield running
