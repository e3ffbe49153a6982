"""The sign-in over plain HTTP (aiohttp's client, each client a cookie jar of its own and an
address of its own through ``X-Forwarded-For``): the answer is the same whatever was typed,
nobody can use the limits to lock someone else out, and a ``next`` that cannot be followed
never costs the link."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from bot.webconsole.sign_in import HOME, after_sign_in
from bot.webconsole.sign_in_limits import KNOWN_COOKIE
from tests.fakes.telegram_setup import TOKEN
from tests.web.harness import ADMIN, APPROVER, LLM_KEY_ENV, STRANGER, ConsoleRig, console_rig

_CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')
_SECRETS = re.compile(r"[0-9a-f]{64}")


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv(LLM_KEY_ENV, "test-key")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


class Browser:
    """One browser (its own cookies) at one address (``X-Forwarded-For``, which the console
    trusts in these tests)."""

    def __init__(self, rig: ConsoleRig, client: aiohttp.ClientSession, address: str) -> None:
        self.rig = rig
        self.client = client
        self.address = address

    @property
    def headers(self) -> dict[str, str]:
        return {"X-Forwarded-For": self.address}

    async def csrf(self) -> str:
        async with self.client.get(self.rig.url("/sign-in"), headers=self.headers) as answer:
            found = _CSRF.search(await answer.text())
        assert found
        return found.group(1)

    async def ask(self, user: str, *, next_path: str = "") -> tuple[int, str]:
        form = {"csrf": await self.csrf(), "channel": "telegram.main", "user": user}
        if next_path:
            form["next"] = next_path
        async with self.client.post(
            self.rig.url("/sign-in"), data=form, headers=self.headers
        ) as answer:
            return answer.status, await answer.text()

    async def post(self, path: str, form: dict[str, str]) -> aiohttp.ClientResponse:
        form = {"csrf": await self.csrf(), **form}
        async with self.client.post(
            self.rig.url(path), data=form, headers=self.headers, allow_redirects=False
        ) as answer:
            await answer.read()
            return answer

    async def follow(self, link: str, next_path: str = "") -> aiohttp.ClientResponse:
        return await self.post(
            "/sign-in/link", {"token": link.rsplit("=", 1)[1], "next": next_path}
        )

    async def signed_in_as(self) -> str | None:
        async with self.client.get(
            self.rig.url("/approvals"), headers=self.headers, allow_redirects=False
        ) as answer:
            text = await answer.text()
        if answer.status != 200:
            return None
        found = re.search(r"telegram:\d+", text)
        return found.group(0) if found else None

    async def sign_out(self) -> None:
        async with self.client.get(self.rig.url("/approvals"), headers=self.headers) as answer:
            found = _CSRF.search(await answer.text())
        assert found
        async with self.client.post(
            self.rig.url("/sign-out"),
            data={"csrf": found.group(1)},
            headers=self.headers,
            allow_redirects=False,
        ) as answer:
            assert answer.status == 303


@asynccontextmanager
async def browser(rig: ConsoleRig, address: str) -> AsyncIterator[Browser]:
    jar = aiohttp.CookieJar(unsafe=True)  # cookies for 127.0.0.1
    async with aiohttp.ClientSession(cookie_jar=jar) as client:
        yield Browser(rig, client, address)


def sign_in_messages(rig: ConsoleRig, user_id: int) -> int:
    return len([c for c in rig.messages_to(user_id) if "/sign-in/link" in c.params["text"]])


async def test_the_answer_is_the_same_whatever_was_typed(tmp_path: Path) -> None:
    names = {"alice": f"telegram:{APPROVER}", "Carol Jones": f"telegram:{ADMIN}"}
    typed = [
        "alice",  # a configured name: answered without the identity behind it
        "Carol Jones",  # one that is no user id
        str(APPROVER),
        str(STRANGER),
        "bob",
        "Dave Smith",  # no configured name, no user id either
        "x" * 64,
    ]
    answers: dict[str, tuple[int, str]] = {}
    async with console_rig(tmp_path, names=names, trust_forwarded_for=True) as rig:
        for n, user in enumerate(typed):
            async with browser(rig, f"10.0.1.{n}") as b:
                status, page = await b.ask(user)
                answers[user] = (status, _SECRETS.sub("…", page))
        # the names still work: their people got their links
        await rig.sign_in_message(APPROVER)
        await rig.sign_in_message(ADMIN)
    pages = {page for _, page in answers.values()}
    assert {status for status, _ in answers.values()} == {200}, answers
    assert len(pages) == 1, answers
    [page] = pages
    for revealing in (str(APPROVER), str(ADMIN), "telegram:", "alice", "Carol"):
        assert revealing not in page


async def test_the_limits_do_not_tell_who_a_name_is(tmp_path: Path) -> None:
    # if a name and the id behind it shared a count, using up one and trying the other
    # would tell who the name is
    names = {"alice": f"telegram:{ADMIN}"}
    async with console_rig(
        tmp_path,
        names=names,
        sign_ins_per_target=2,
        sign_in_messages_per_hour=2,
        trust_forwarded_for=True,
    ) as rig:
        async with browser(rig, "10.0.9.1") as prober:
            assert [(await prober.ask("alice"))[0] for _ in range(3)] == [200, 200, 429]
            assert (await prober.ask(str(ADMIN)))[0] == 200
            assert (await prober.ask(str(STRANGER)))[0] == 200
        async with browser(rig, "10.0.9.2") as other:
            # the name's two messages of the hour are spent, whoever asks now
            assert (await other.ask("alice"))[0] == 429
        async with browser(rig, "10.0.9.3") as other:
            # the id's and another person's are untouched: the same answer for both
            assert (await other.ask(str(ADMIN)))[0] == 200
            assert (await other.ask(str(STRANGER)))[0] == 200


async def test_a_stranger_asking_again_and_again_locks_out_only_themselves(
    tmp_path: Path,
) -> None:
    async with (
        console_rig(tmp_path, sign_ins_per_target=2, trust_forwarded_for=True) as rig,
        browser(rig, "10.0.2.66") as stranger,
        browser(rig, "10.0.2.1") as admin,
    ):
        statuses = [(await stranger.ask(str(ADMIN)))[0] for _ in range(5)]
        assert statuses == [200, 200, 429, 429, 429]
        status, _ = await admin.ask(str(ADMIN))
        assert status == 200
        text = await rig.sign_in_message(ADMIN, count=3)
        assert (await admin.follow(rig.link_in(text))).status == 303
        assert await admin.signed_in_as() == f"telegram:{ADMIN}"


async def test_many_addresses_reach_the_message_cap_but_not_the_targets_own_requests(
    tmp_path: Path,
) -> None:
    async with console_rig(tmp_path, sign_in_messages_per_hour=3, trust_forwarded_for=True) as rig:
        async with browser(rig, "10.0.3.1") as laptop:
            # the admin signed in once from this browser, at this address
            assert (await laptop.ask(str(ADMIN)))[0] == 200
            response = await laptop.follow(rig.link_in(await rig.sign_in_message(ADMIN)))
            assert response.cookies[KNOWN_COOKIE]["httponly"]
            assert await laptop.signed_in_as() == f"telegram:{ADMIN}"
            await laptop.sign_out()
            # strangers, one address each, use up the hour's messages
            statuses = []
            for n in range(5):
                async with browser(rig, f"10.0.4.{n}") as stranger:
                    statuses.append((await stranger.ask(str(ADMIN)))[0])
            assert statuses == [200, 200, 429, 429, 429]
            # the admin's own requests still get through: the same browser elsewhere ...
            laptop.address = "10.0.5.9"
            assert (await laptop.ask(str(ADMIN)))[0] == 200
        # ... and another browser at the address the admin signed in from
        async with browser(rig, "10.0.3.1") as desktop:
            assert (await desktop.ask(str(ADMIN)))[0] == 200
            text = await rig.sign_in_message(ADMIN, count=5)
            assert (await desktop.follow(rig.link_in(text))).status == 303
            assert await desktop.signed_in_as() == f"telegram:{ADMIN}"
        # a new browser at a new address is anyone: over the cap
        async with browser(rig, "10.0.6.1") as unknown:
            assert (await unknown.ask(str(ADMIN)))[0] == 429
        # another target's messages are not touched
        async with browser(rig, "10.0.6.2") as other:
            assert (await other.ask(str(APPROVER)))[0] == 200
        await rig.sign_in_message(APPROVER)
    assert sign_in_messages(rig, ADMIN) == 5


async def test_a_browser_signed_in_as_the_target_gets_through_the_message_cap(
    tmp_path: Path,
) -> None:
    async with (
        console_rig(tmp_path, sign_in_messages_per_hour=1, trust_forwarded_for=True) as rig,
        browser(rig, "10.0.11.1") as laptop,
    ):
        await laptop.ask(str(ADMIN))
        await laptop.follow(rig.link_in(await rig.sign_in_message(ADMIN)))
        # a session from before browsers were remembered: no cookie, a new address
        laptop.client.cookie_jar.clear(lambda cookie: cookie.key == KNOWN_COOKIE)
        laptop.address = "10.0.11.2"
        assert await laptop.signed_in_as() == f"telegram:{ADMIN}"
        async with browser(rig, "10.0.11.3") as stranger:
            assert (await stranger.ask(str(ADMIN)))[0] == 429
        assert (await laptop.ask(str(ADMIN)))[0] == 200
        # sent, with a code that counts in this browser (it got a nonce with the page)
        code = rig.code_in(await rig.sign_in_message(ADMIN, count=2))
        assert (await laptop.post("/sign-in/code", {"code": code})).status == 303


async def test_others_behind_the_same_address_cannot_use_up_the_targets_own_browser(
    tmp_path: Path,
) -> None:
    async with console_rig(
        tmp_path, sign_ins_per_target=2, sign_ins_per_client=4, trust_forwarded_for=True
    ) as rig:
        office = "10.0.8.1"  # one NAT address for everyone in the office
        async with browser(rig, office) as laptop:
            assert (await laptop.ask(str(ADMIN)))[0] == 200
            await laptop.follow(rig.link_in(await rig.sign_in_message(ADMIN)))
            assert await laptop.signed_in_as() == f"telegram:{ADMIN}"
            await laptop.sign_out()
            async with browser(rig, office) as colleague:
                statuses = [(await colleague.ask(str(ADMIN)))[0] for _ in range(5)]
                assert statuses == [200, 429, 429, 429, 429]
            # the address is used up; the admin's own browser is counted as itself
            assert (await laptop.ask(str(ADMIN)))[0] == 200
            text = await rig.sign_in_message(ADMIN, count=3)
            assert (await laptop.follow(rig.link_in(text))).status == 303
            assert await laptop.signed_in_as() == f"telegram:{ADMIN}"
        async with browser(rig, office) as new_browser:
            assert (await new_browser.ask(str(ADMIN)))[0] == 429


NEXT_WITH_CONTROLS = [
    "/console/grants\x01",
    "/console/grants\nSet-Cookie: x=1",
    "/console/grants\x7f",
    "/console/grants\u202e",
    "/console/grants x",
]


@pytest.mark.parametrize("next_path", NEXT_WITH_CONTROLS, ids=repr)
async def test_a_next_that_cannot_be_followed_leads_home_and_the_link_signs_in(
    tmp_path: Path, next_path: str
) -> None:
    async with (
        console_rig(tmp_path, trust_forwarded_for=True) as rig,
        browser(rig, "10.0.7.1") as b,
    ):
        await b.ask(str(APPROVER))
        response = await b.follow(rig.link_in(await rig.sign_in_message(APPROVER)), next_path)
        assert response.status == 303
        assert response.headers["Location"] == HOME
        assert await b.signed_in_as() == f"telegram:{APPROVER}"


async def test_a_next_that_cannot_be_followed_does_not_cost_the_code(tmp_path: Path) -> None:
    async with (
        console_rig(tmp_path, trust_forwarded_for=True) as rig,
        browser(rig, "10.0.7.2") as b,
    ):
        await b.ask(str(APPROVER))
        code = rig.code_in(await rig.sign_in_message(APPROVER))
        response = await b.post("/sign-in/code", {"code": code, "next": NEXT_WITH_CONTROLS[1]})
        assert response.status == 303
        assert response.headers["Location"] == HOME
        assert await b.signed_in_as() == f"telegram:{APPROVER}"


async def test_a_next_under_the_console_is_followed(tmp_path: Path) -> None:
    async with (
        console_rig(tmp_path, trust_forwarded_for=True) as rig,
        browser(rig, "10.0.7.3") as b,
    ):
        await b.ask(str(ADMIN))
        link = rig.link_in(await rig.sign_in_message(ADMIN))
        response = await b.follow(link, "/console/audit?tool=deploy&decision=approved")
        assert response.headers["Location"] == "/console/audit?tool=deploy&decision=approved"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/console/grants", "/console/grants"),
        ("/console/audit?tool=a%20b&before=1.5_3", "/console/audit?tool=a%20b&before=1.5_3"),
        ("", HOME),
        ("/console", HOME),
        ("/consolex/grants", HOME),
        ("https://evil.example/console/", HOME),
        ("//evil.example/console/", HOME),
        ("/console/../metrics", HOME),
        ("/console/./grants", HOME),
        ("/console/%2e%2e/metrics", HOME),
        ("/console/%2E%2E/metrics", HOME),
        ("/console\\evil", HOME),
        ("/console/\\\\evil.example", HOME),
        ("/console/grants\x00", HOME),
        ("/console/grants\r\n", HOME),
        ("/console/grants\t", HOME),
        ("/console/gränts", HOME),
        ("/console/" + "a" * 1000, HOME),
    ],
)
def test_where_a_sign_in_may_lead(raw: str, expected: str) -> None:
    assert after_sign_in(raw) == expected
