"""The console over plain HTTP (aiohttp's client, no browser): the headers every answer
carries, the sign-in rate limits, requests from another site, links that never take the
``Host`` header's word, the ``Secure`` cookie behind TLS, and where a sign-in may lead."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from structlog.testing import capture_logs

from bot.webconsole import tokens
from bot.webconsole.security import CONTENT_SECURITY_POLICY
from tests.fakes.telegram_members import NEVER_STARTED
from tests.fakes.telegram_setup import TOKEN
from tests.web.harness import ADMIN, APPROVER, LLM_KEY_ENV, STRANGER, ConsoleRig, console_rig

pytestmark = pytest.mark.asyncio(loop_scope="module")

_CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv(LLM_KEY_ENV, "test-key")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@asynccontextmanager
async def browsing(rig: ConsoleRig) -> AsyncIterator[aiohttp.ClientSession]:
    jar = aiohttp.CookieJar(unsafe=True)  # cookies for 127.0.0.1
    async with aiohttp.ClientSession(cookie_jar=jar) as client:
        yield client


async def _form_token(client: aiohttp.ClientSession, rig: ConsoleRig) -> str:
    async with client.get(rig.url("/sign-in")) as answer:
        found = _CSRF.search(await answer.text())
    assert found
    return found.group(1)


async def _ask(client: aiohttp.ClientSession, rig: ConsoleRig, user: int, **headers: str) -> int:
    token = await _form_token(client, rig)
    async with client.post(
        rig.url("/sign-in"),
        data={"csrf": token, "channel": "telegram.main", "user": str(user)},
        headers=headers,
    ) as answer:
        return answer.status


async def test_every_answer_carries_the_security_headers(tmp_path: Path) -> None:
    async with console_rig(tmp_path) as rig, browsing(rig) as client:
        for path, status in (
            ("/sign-in", 200),
            ("/static/console.css", 200),
            ("/approvals", 200),  # the sign-in page, after a redirect
            ("/sign-in/link?token=" + "0" * 64, 410),
        ):
            async with client.get(rig.url(path)) as answer:
                assert answer.status == status, path
                assert answer.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
                assert answer.headers["X-Content-Type-Options"] == "nosniff"
                assert answer.headers["Referrer-Policy"] == "no-referrer"
                assert answer.headers["X-Frame-Options"] == "DENY"
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
    assert "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY


async def test_sign_in_requests_are_limited_per_target_and_per_client(tmp_path: Path) -> None:
    async with console_rig(tmp_path, sign_ins_per_target=2, sign_ins_per_client=4) as rig:
        async with browsing(rig) as client:
            statuses = [await _ask(client, rig, APPROVER) for _ in range(3)]
            assert statuses == [200, 200, 429]
            # another target from the same client, until the client's own limit
            statuses = [await _ask(client, rig, STRANGER) for _ in range(2)]
            assert statuses == [200, 429]
        await rig.sign_in_message(APPROVER, count=2)
        assert (
            len([c for c in rig.messages_to(APPROVER) if "/sign-in/link" in c.params["text"]]) == 2
        )


async def test_a_cross_site_post_is_refused(tmp_path: Path) -> None:
    async with console_rig(tmp_path) as rig, browsing(rig) as client:
        assert await _ask(client, rig, APPROVER, **{"Sec-Fetch-Site": "cross-site"}) == 403
        assert await _ask(client, rig, APPROVER, **{"Sec-Fetch-Site": "same-origin"}) == 200


async def test_links_ignore_the_host_header(tmp_path: Path) -> None:
    async with console_rig(tmp_path) as rig, browsing(rig) as client:
        await _ask(client, rig, APPROVER, Host="evil.example", **{"X-Forwarded-Host": "evil"})
        link = rig.link_in(await rig.sign_in_message(APPROVER))
    assert link.startswith(f"{rig.origin}/console/sign-in/link?token=")


async def test_the_cookies_are_secure_behind_tls(tmp_path: Path) -> None:
    # a browser keeps Secure cookies for https only: this client sends them by hand
    async with (
        console_rig(tmp_path, public_url="https://ops.example.com") as rig,
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as client,
    ):
        async with client.get(rig.url("/sign-in")) as answer:
            nonce = answer.cookies["hatchway_console_form"]
            found = _CSRF.search(await answer.text())
        assert found and found.group(1) == nonce.value
        assert nonce["secure"] and nonce["httponly"] and nonce["samesite"] == "Strict"
        sent = {"Cookie": f"hatchway_console_form={nonce.value}"}
        form = {"csrf": nonce.value, "channel": "telegram.main", "user": str(APPROVER)}
        async with client.post(rig.url("/sign-in"), data=form, headers=sent) as answer:
            assert answer.status == 200
        link = rig.link_in(await rig.sign_in_message(APPROVER))
        assert link.startswith("https://ops.example.com/console/sign-in/link?token=")
        token = link.rsplit("=", 1)[1]
        async with client.post(
            rig.url("/sign-in/link"),
            data={"csrf": nonce.value, "token": token, "next": "https://evil.example/"},
            headers=sent,
            allow_redirects=False,
        ) as answer:
            assert answer.status == 303
            assert answer.headers["Location"] == "/console/approvals"
            cookie = answer.cookies["hatchway_console"]
    assert cookie["secure"] and cookie["httponly"] and cookie["samesite"] == "Strict"


async def test_a_user_who_never_started_the_bot_is_told_in_advance_and_logged(
    tmp_path: Path,
) -> None:
    async with console_rig(tmp_path) as rig, browsing(rig) as client:
        rig.tg.roster.unreachable[APPROVER] = NEVER_STARTED
        token = await _form_token(client, rig)
        with capture_logs() as logs:
            async with client.post(
                rig.url("/sign-in"),
                data={"csrf": token, "channel": "telegram.main", "user": str(APPROVER)},
            ) as answer:
                page = await answer.text()
            # asks are sent in order: once the admin's message is out, the first one is done
            await _ask(client, rig, ADMIN)
            await rig.sign_in_message(ADMIN)
    assert answer.status == 200
    assert "the bot can only" in page and "/start" in page
    [failed] = [e for e in logs if e["event"] == "web_sign_in_send_failed"]
    assert failed["identity"] == f"telegram:{APPROVER}"
    assert "started it" in failed["hint"]
    assert TOKEN not in str(failed)


async def test_an_idle_session_ends(tmp_path: Path) -> None:
    async with console_rig(tmp_path) as rig, browsing(rig) as client:
        now = time.time()
        for name, last_seen in (("idle", now - 1801), ("fresh", now - 60)):
            session_id = tokens.new_token()
            await rig.app.store.web.open_session(
                tokens.digest(session_id),
                f"telegram:{APPROVER}",
                now=last_seen,
                expires_at=now + 3600,
            )
            async with client.get(
                rig.url("/approvals"),
                headers={"Cookie": f"hatchway_console={session_id}"},
                allow_redirects=False,
            ) as answer:
                assert answer.status == (303 if name == "idle" else 200), name
            stored = await rig.app.store.web.session(tokens.digest(session_id))
            assert (stored is None) == (name == "idle")


async def test_an_unknown_address_gets_the_consoles_not_found_page(tmp_path: Path) -> None:
    async with console_rig(tmp_path) as rig, browsing(rig) as client:
        for path in ("/no-such-page", "/approvals/x/y/z", "/console-typo"):
            async with client.get(rig.url(path)) as answer:
                page = await answer.text()
                assert answer.status == 404, path
                assert answer.content_type == "text/html", path
                assert answer.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
                assert answer.headers["X-Frame-Options"] == "DENY"
                assert "<h1>Not found</h1>" in page
                assert "no-such-page" not in page and "404: Not Found" not in page
        # the daemon's own paths outside the console keep their plain answers
        async with client.get(f"{rig.origin}/no-such-page") as answer:
            assert answer.status == 404
            assert "Content-Security-Policy" not in answer.headers
