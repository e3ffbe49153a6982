"""The console's test rig: the App behind the daemon's HTTP server, Telegram and a model on
loopback, and a real Chromium page driven by Playwright.

:func:`console_rig` starts, in the test's event loop:

* the loopback Telegram Bot API fake (python-telegram-bot talks to it for real);
* the OpenAI-compatible fake (:class:`~tests.fakes.openai_server.OpenAIFake`), which the test
  scripts (``rig.llm.queue_tool_calls([("deploy", {...})])``);
* an :class:`~bot.app.App` built from settings, with the daemon's :class:`HttpServer` on a
  free loopback port and ``[web] enabled``: the console is mounted the way ``hatchway run``
  mounts it, and its sign-in messages go out through the Telegram channel;
* a ``deploy`` tool that records its calls (:attr:`ConsoleRig.ran`).

People: :data:`REQUESTER` talks to the bot and also approves (so a call of their own is
refused as self-approval, not as a stranger's), :data:`APPROVER` approves, :data:`ADMIN` is
in ``web.admins`` only, :data:`STRANGER` is none of these.

:meth:`ConsoleRig.sign_in` signs a page in the way a person does: the sign-in form, the link
read from the DM the fake recorded, the link page's button. Screenshots of pages go to
``docs/console/`` when ``HATCHWAY_CONSOLE_SCREENSHOTS=1`` (:meth:`ConsoleRig.screenshot`).
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.async_api import Page

from bot.app import App
from bot.config import ServerConfig, Settings, parse_settings
from bot.metrics import Metrics
from bot.ops.web import HttpServer
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.recording_tool import deploy_tool
from tests.fakes.telegram_server import ApiCall, FakeTelegram, message, private_chat, user
from tests.fakes.telegram_setup import TOKEN, started

REQUESTER = 1001
APPROVER = 2002
STRANGER = 3003
ADMIN = 4004
LLM_KEY_ENV = "HATCHWAY_TEST_LLM_KEY"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "console"
#: Playwright waits up to this long for what a page should show (a loaded machine is slow;
#: nothing is asserted about how long it took).
WAIT_MS = 30_000
_LINK = re.compile(r"https?://\S+/console/sign-in/link\?token=[0-9a-f]{64}")
_CODE = re.compile(r"\b([A-Z0-9]{4}-[A-Z0-9]{4})\b")


def console_settings(
    tg: FakeTelegram,
    llm: OpenAIFake,
    state: Path,
    storage: Mapping[str, Any] | None = None,
    *,
    approval: Mapping[str, Any] | None = None,
    approvers: Sequence[int] = (APPROVER, REQUESTER),
    **web: Any,
) -> Settings:
    """One Telegram channel (:data:`REQUESTER` talks; ``approvers``, by default
    :data:`APPROVER` and the requester, approve, by DM too), the model fake as the provider,
    and the console on; ``storage``: a ``[storage]`` table (a PostgreSQL ``url``) instead of
    the SQLite file; ``approval``: more ``[approval]`` keys."""
    return parse_settings(
        {
            "state_dir": str(state),
            **({"storage": dict(storage)} if storage is not None else {}),
            "providers": {
                "default": {
                    "kind": "openai",
                    "base_url": llm.base_url,
                    "model": "gpt-4o-mini",
                    "api_key_env": LLM_KEY_ENV,
                    "max_retries": 0,
                }
            },
            "approval": {"timeout_s": 120, "dm_approvers": True, **(approval or {})},
            "channels": {
                "telegram": {
                    "main": {
                        "api_base_url": tg.base_url,
                        "file_base_url": tg.file_base_url,
                        "poll_timeout_s": 1,
                        "reconnect_initial_s": 0.01,
                        "reconnect_max_s": 0.05,
                        "allowed_users": [str(REQUESTER), str(APPROVER)],
                        "approvers": [str(a) for a in approvers],
                    }
                }
            },
            "server": {"host": "127.0.0.1", "port": 0},
            "web": {"enabled": True, "admins": [f"telegram:{ADMIN}"], **web},
        },
        environ={LLM_KEY_ENV: "test-key"},
        require_provider=False,
    )


@dataclass
class ConsoleRig:
    """A running bot with its console; see the module docstring."""

    app: App
    server: HttpServer
    tg: FakeTelegram
    llm: OpenAIFake
    ran: list[Mapping[str, object]] = field(default_factory=list)
    _next_message: int = 10

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    def url(self, path: str) -> str:
        """``path`` under the console: ``rig.url("/approvals")``."""
        return f"{self.origin}/console{path}"

    async def ask(self, text: str, *, sender: int = REQUESTER) -> None:
        """``sender`` writes ``text`` to the bot in their DM."""
        self._next_message += 1
        chat = private_chat(sender)
        await self.tg.push(
            {"message": message(chat, user(sender), text, message_id=self._next_message)}
        )

    async def deploy_asked(self, version: str = "v2", *, sender: int = REQUESTER) -> None:
        """The model calls ``deploy(version)`` for ``sender``'s message, then answers."""
        self.llm.queue_tool_calls([("deploy", {"version": version})])
        self.llm.queue_text(f"Deployed {version}.")
        await self.ask(f"deploy {version}", sender=sender)

    async def card_text(self, chat_id: int) -> str:
        """The text of the approval card in ``chat_id`` as Telegram shows it now (waits for
        it to be posted)."""
        await self.tg.wait_for(
            "sendMessage",
            lambda c: "reply_markup" in c.params and str(c.params.get("chat_id")) == str(chat_id),
        )
        [card] = [m for m in self.tg.bot_messages(chat_id) if "reply_markup" in m]
        return str(card["text"])

    def messages_to(self, user_id: int) -> list[ApiCall]:
        return [c for c in self.tg.calls_of("sendMessage") if c.params.get("chat_id") == user_id]

    async def sign_in_message(self, user_id: int, *, count: int = 1) -> str:
        """The text of the ``count``-th sign-in message the bot sent ``user_id``."""
        calls = await self.tg.wait_for(
            "sendMessage",
            lambda c: c.params.get("chat_id") == user_id and "/sign-in/link" in c.params["text"],
            count=count,
            wait_s=WAIT_MS / 1000,
        )
        return str(calls[count - 1].params["text"])

    @staticmethod
    def link_in(text: str) -> str:
        found = _LINK.search(text)
        assert found, text
        return found.group(0)

    @staticmethod
    def code_in(text: str) -> str:
        found = _CODE.search(text)
        assert found, text
        return found.group(1)

    async def ask_for_link(self, page: Page, user_id: int | str) -> None:
        """Fill in the sign-in form for ``user_id`` on Telegram and send it."""
        await page.goto(self.url("/sign-in"))
        await page.select_option("select[name=channel]", "telegram.main")
        await page.fill("input[name=user]", str(user_id))
        await page.click("button[type=submit]:has-text('Send me a sign-in link')")
        await page.wait_for_selector("text=Check your direct messages")

    async def sign_in(self, page: Page, user_id: int, *, count: int = 1) -> None:
        """Sign ``page`` in as ``telegram:user_id`` through the link sent to their DM."""
        await self.ask_for_link(page, user_id)
        link = self.link_in(await self.sign_in_message(user_id, count=count))
        await page.goto(link)
        await page.click("button:has-text('Sign in')")
        await page.wait_for_selector(f"text=telegram:{user_id}")

    async def screenshot(self, page: Page, name: str) -> None:
        """``docs/console/<name>.png``, when screenshots are asked for."""
        if os.environ.get("HATCHWAY_CONSOLE_SCREENSHOTS") == "1":
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            await page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


@asynccontextmanager
async def console_rig(
    state: Path,
    *,
    metrics: Metrics | None = None,
    storage: Mapping[str, Any] | None = None,
    approval: Mapping[str, Any] | None = None,
    approvers: Sequence[int] = (APPROVER, REQUESTER),
    **web: Any,
) -> AsyncIterator[ConsoleRig]:
    """Everything in the module docstring, running for the block; ``web``: more ``[web]``
    keys; ``metrics``: the daemon's figures, kept as ``hatchway run`` keeps them;
    ``storage``: a ``[storage]`` table (a PostgreSQL ``url``) instead of the SQLite file;
    ``approval`` and ``approvers`` as :func:`console_settings` takes them."""
    async with FakeTelegram(TOKEN) as tg, OpenAIFake(model="gpt-4o-mini") as llm:
        settings = console_settings(
            tg, llm, state, storage, approval=approval, approvers=approvers, **web
        )
        server = HttpServer(ServerConfig(host="127.0.0.1", port=0))
        ran: list[Mapping[str, object]] = []
        app = App(settings, web_app=server.app, tools=[deploy_tool(ran)], metrics=metrics)
        async with app:
            await server.start()
            try:
                await started(app)
                yield ConsoleRig(app=app, server=server, tg=tg, llm=llm, ran=ran)
            finally:
                await server.aclose()
