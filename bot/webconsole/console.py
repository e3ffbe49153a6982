"""The console as one aiohttp sub-application under ``/console/``, and its one task.

:class:`Console` is built by the App when ``[web] enabled`` and the daemon's HTTP application
exists (``hatchway run``; ``hatchway chat`` serves nothing), and mounted with :meth:`mount`
before the server starts: the daemon then listens on ``[server] host:port`` even when
``server.enabled`` is false. Its middlewares (:mod:`bot.webconsole.security`) apply to its
routes only, after the daemon's own; an address it does not have gets its own 404 page
(:mod:`bot.webconsole.not_found`). :meth:`run` is a task of the App's: it sends sign-in
messages (:mod:`bot.webconsole.mailer`) and deletes ended sessions, spent links and old
rate counters every :data:`PRUNE_EVERY_S`.

Pages are composed here, in :data:`PAGE_MODULES`: each module's ``register(pages)`` adds its
routes (:mod:`bot.webconsole.pages`). Templates (``templates/``, jinja2 with autoescape on,
undefined names an error) and static files (``static/``) are package data.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp_jinja2
import jinja2
import structlog
from aiohttp import web

from bot.errors import StorageError
from bot.webconsole.host import ConsoleHost
from bot.webconsole.mailer import SignInMailer
from bot.webconsole.not_found import not_found
from bot.webconsole.pages import Pages
from bot.webconsole.security import SESSIONS, csrf, headers, session
from bot.webconsole.sessions import PREFIX, Sessions
from bot.webconsole.sign_in import HOME, SignIn
from bot.webconsole.sign_in_limits import KNOWN_FOR_S, MESSAGE_WINDOW_S

log = structlog.get_logger(__name__)

#: The page modules, in navigation order; each exposes ``register(pages: Pages)``.
PAGE_MODULES: tuple[str, ...] = (
    "bot.webconsole.approvals",
    "bot.webconsole.pages_grants",
    "bot.webconsole.pages_explain",
    "bot.webconsole.pages_audit",
    "bot.webconsole.pages_turns",
    "bot.webconsole.pages_health",
    "bot.webconsole.pages_usage",
    "bot.webconsole.pages_config",
    "bot.webconsole.pages_schedules",
    "bot.webconsole.pages_pairing",
)
#: The console's middlewares, outermost first (:mod:`bot.webconsole.security`): a 404 is
#: rendered as the console's page inside the headers and with the session read.
MIDDLEWARES = (headers, session, not_found, csrf)
PRUNE_EVERY_S = 600.0
STATIC = Path(__file__).parent / "static"


class Console:
    """The web console of one running bot (``host``)."""

    def __init__(self, host: ConsoleHost, clock: Callable[[], float] = time.time) -> None:
        self._host = host
        self._clock = clock
        self.sessions = Sessions(host.store.web, lambda: host.settings, clock)
        self.mailer = SignInMailer(host, clock)

    def application(self) -> web.Application:
        """The console's routes, middlewares and templates, as a sub-application."""
        app = web.Application(middlewares=MIDDLEWARES)
        app[SESSIONS] = self.sessions
        aiohttp_jinja2.setup(
            app,
            loader=jinja2.PackageLoader("bot.webconsole", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            default_helpers=False,
        )
        SignIn(self.sessions, self.mailer, lambda: self._host.settings, self._clock).register(app)
        app.router.add_get("/", _home)
        app.router.add_static("/static", STATIC, append_version=False)
        pages = Pages(app, self._host)
        for name in PAGE_MODULES:
            importlib.import_module(name).register(pages)
        return app

    def mount(self, web_app: web.Application) -> None:
        """Serve the console under ``/console/`` of ``web_app`` (before it is started)."""
        web_app.add_subapp(PREFIX, self.application())
        log.info("web_console_mounted", path=f"{PREFIX}/")

    async def run(self) -> None:
        """Send sign-in messages and prune ended sessions until cancelled."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self.mailer.run(), name="web-sign-in-mailer")
            group.create_task(self._prune(), name="web-prune")

    async def _prune(self) -> None:
        while True:
            config = self._host.settings.web
            try:
                await self._host.store.web.prune(
                    now=self._clock(),
                    idle_s=config.session_idle_s,
                    window_s=max(config.rate_window_s, MESSAGE_WINDOW_S),
                    known_s=KNOWN_FOR_S,
                )
            except StorageError as exc:
                log.warning("web_prune_failed", error=str(exc))
            await asyncio.sleep(PRUNE_EVERY_S)


async def _home(request: web.Request) -> web.StreamResponse:
    raise web.HTTPSeeOther(HOME)
