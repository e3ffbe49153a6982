"""Adding a page: a route, the role it needs, and a template rendered with the layout.

A page module exposes ``register(pages: Pages) -> None`` and is listed once in
:data:`bot.webconsole.console.PAGE_MODULES`. It adds its routes with :meth:`Pages.add`::

    def register(pages: Pages) -> None:
        pages.add("GET", "/grants", grants_page, access=Access.ADMIN, nav="Grants")
        pages.add("POST", "/grants/{id}/revoke", revoke, access=Access.ADMIN)

    async def grants_page(page: PageRequest) -> web.StreamResponse:
        rows = await page.host.store.grants.list(...)
        return page.render("grants.html", {"grants": rows})

Every handler added this way runs for a signed-in, eligible viewer only: without a session a
GET is sent to the sign-in page (and comes back afterwards) and anything else gets 403; an
identity that may not use the console (no longer an approver or admin) gets the 403 page;
:attr:`Access.ADMIN` pages refuse approvers who are not admins. A POST has already passed the
CSRF check (:mod:`bot.webconsole.security`). What a viewer may see *within* a page (the
channels they approve, or all of them for an admin) is the page's to filter, with
:meth:`Viewer.may_read` and :meth:`Viewer.may_decide`.

Templates extend ``base.html`` and get ``viewer``, ``csrf``, ``nav`` and ``prefix``; jinja2
escapes every value (autoescape is on, and ``|safe`` is never used on anything a user, a
model or a platform wrote). Text that may hold control characters (tool arguments, chat
text, names) goes through :func:`bot.visible_text.visible` and secrets through
:func:`bot.scrub.scrub_text` before it reaches a template.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp_jinja2
from aiohttp import web

from bot.webconsole import display, times
from bot.webconsole.host import ConsoleHost
from bot.webconsole.security import VIEWER
from bot.webconsole.sessions import PREFIX
from bot.webconsole.viewer import Viewer


class Access(enum.Enum):
    """Who may open a page."""

    #: Approvers of any channel alias and admins (each sees what they may read).
    SIGNED_IN = "signed_in"
    #: ``web.admins`` only.
    ADMIN = "admin"


@dataclass(frozen=True, slots=True, kw_only=True)
class NavEntry:
    title: str
    path: str
    access: Access


@dataclass(frozen=True, slots=True, kw_only=True)
class PageRequest:
    """One request to a page: the aiohttp request, who is asking, and the running bot."""

    request: web.Request
    viewer: Viewer
    host: ConsoleHost
    nav: tuple[NavEntry, ...]
    #: The viewer's latest display name (cleaned for showing; empty when none is kept).
    viewer_name: str = ""

    def render(
        self, template: str, context: Mapping[str, Any] | None = None, *, status: int = 200
    ) -> web.Response:
        """``template`` with the layout's values added to ``context``."""
        values = {"viewer_name": self.viewer_name, **(context or {})}
        return render(
            self.request, template, values, viewer=self.viewer, nav=self.nav, status=status
        )


Handler = Callable[[PageRequest], Awaitable[web.StreamResponse]]


def render(
    request: web.Request,
    template: str,
    context: Mapping[str, Any],
    *,
    viewer: Viewer | None,
    nav: tuple[NavEntry, ...] = (),
    csrf: str | None = None,
    status: int = 200,
) -> web.Response:
    """Render ``template`` with the values every page's layout reads."""
    shown = tuple(
        entry
        for entry in nav
        if viewer is not None
        and viewer.eligible
        and (entry.access is Access.SIGNED_IN or viewer.admin)
    )
    fmt = times.current()
    values = {
        "prefix": PREFIX,
        "zone": fmt.zone_name,
        "zone_offset": fmt.offset_s(),
        "viewer": viewer,
        "csrf": csrf if csrf is not None else (viewer.csrf if viewer is not None else ""),
        "nav": shown,
        "current": request.path,
        "viewer_name": "",
        **context,
    }
    return aiohttp_jinja2.render_template(template, request, values, status=status)


def forbidden(request: web.Request, viewer: Viewer | None, why: str) -> web.Response:
    return render(request, "forbidden.html", {"why": why}, viewer=viewer, status=403)


class Pages:
    """The console's routes that need a signed-in viewer, and its navigation."""

    def __init__(self, app: web.Application, host: ConsoleHost) -> None:
        self._app = app
        self._host = host
        self._nav: list[NavEntry] = []

    def add(
        self,
        method: str,
        path: str,
        handler: Handler,
        *,
        access: Access,
        nav: str | None = None,
        name: str | None = None,
    ) -> None:
        """Serve ``handler`` at ``PREFIX + path`` for viewers ``access`` lets in; ``nav``
        puts the page in the layout's navigation under that title."""
        if nav is not None:
            self._nav.append(NavEntry(title=nav, path=PREFIX + path, access=access))

        async def page(request: web.Request) -> web.StreamResponse:
            viewer = request[VIEWER]
            if viewer is None:
                if request.method == "GET":
                    target = quote(request.path_qs, safe="")
                    raise web.HTTPSeeOther(f"{PREFIX}/sign-in?next={target}")
                raise web.HTTPForbidden(text="not signed in")
            if not viewer.eligible:
                return forbidden(
                    request,
                    viewer,
                    f"{viewer.identity} is not an approver of any channel nor a console admin.",
                )
            if access is Access.ADMIN and not viewer.admin:
                return forbidden(request, viewer, "This page is for console admins (web.admins).")
            who = str(viewer.identity)
            names = await self._host.store.display_names.of([who])
            with times.using(times.time_format(self._host.settings.web.time_zone)):
                return await handler(
                    PageRequest(
                        request=request,
                        viewer=viewer,
                        host=self._host,
                        nav=tuple(self._nav),
                        viewer_name=display.text(names.get(who, ""), 80),
                    )
                )

        self._app.router.add_route(method, path, page, name=name)
