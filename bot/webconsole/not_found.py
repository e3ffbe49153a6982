"""The console's own page for an address it does not have.

aiohttp answers a path under ``/console/`` that matches no route (and a page's "no such
grant") with its plain-text 404. :func:`not_found`, one of the console's middlewares, turns
every 404 into the console's page instead: the layout (signed in or not), the
Content-Security-Policy and other headers every answer carries, and no details (not the
path, not what was looked for), so a guessed address learns nothing.
"""

from __future__ import annotations

import structlog
from aiohttp import web
from aiohttp.typedefs import Handler

from bot.webconsole.pages import render
from bot.webconsole.security import VIEWER

log = structlog.get_logger(__name__)


@web.middleware
async def not_found(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPNotFound:
        log.info("web_not_found", method=request.method)
        return render(request, "not_found.html", {}, viewer=request.get(VIEWER), status=404)
