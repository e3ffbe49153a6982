"""The console's middlewares: response headers, the session, and CSRF on every POST.

They run, in this order, on every request under ``/console/`` (after the daemon's own, which
already refuse what no endpoint accepts: see :mod:`bot.ops.web`):

1. :func:`headers` puts on every answer, refusals included: a strict Content-Security-Policy
   (``default-src 'self'``: no inline script or style, no other origin, no framing, forms
   post only here), ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``
   (a sign-in link's token never leaves in a Referer header), ``X-Frame-Options: DENY`` and
   ``Cache-Control: no-store`` (pages show pending calls; no cache keeps them).
2. :func:`session` reads the session cookie and puts the :class:`~bot.webconsole.viewer.Viewer`
   (or None) on the request under :data:`VIEWER`.
3. :func:`csrf` refuses (403) any request that changes state (every method but GET and HEAD)
   unless its form carries the CSRF token: the session's (:func:`bot.webconsole.tokens.csrf_for`),
   or, before sign-in, the browser's sign-in nonce. A browser that says the request comes
   from another site (``Sec-Fetch-Site: cross-site``) is refused as well.

Between the session and CSRF, :mod:`bot.webconsole.not_found` renders every 404 as the
console's page (the order is :data:`bot.webconsole.console.MIDDLEWARES`). Pages check roles
themselves, through :mod:`bot.webconsole.pages`.
"""

from __future__ import annotations

import structlog
from aiohttp import web
from aiohttp.typedefs import Handler

from bot.webconsole import tokens
from bot.webconsole.sessions import Sessions
from bot.webconsole.viewer import Viewer

log = structlog.get_logger(__name__)

VIEWER = web.RequestKey[Viewer | None]("viewer")
SESSIONS = web.AppKey("sessions", Sessions)
CSRF_FIELD = "csrf"
SAFE_METHODS = frozenset({"GET", "HEAD"})

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def _protect(response: web.StreamResponse) -> None:
    for name, value in HEADERS.items():
        response.headers[name] = value


@web.middleware
async def headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as answer:
        _protect(answer)
        raise
    _protect(response)
    return response


@web.middleware
async def session(request: web.Request, handler: Handler) -> web.StreamResponse:
    request[VIEWER] = await request.app[SESSIONS].viewer(request)
    return await handler(request)


@web.middleware
async def csrf(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method in SAFE_METHODS:
        return await handler(request)
    if request.headers.get("Sec-Fetch-Site", "") == "cross-site":
        raise web.HTTPForbidden(text="cross-site request refused")
    viewer = request[VIEWER]
    expected = viewer.csrf if viewer is not None else request.app[SESSIONS].nonce(request)
    given = (await request.post()).get(CSRF_FIELD)
    if expected is None or not isinstance(given, str) or not tokens.same(given, expected):
        log.warning("web_csrf_refused", path=request.path, signed_in=viewer is not None)
        raise web.HTTPForbidden(text="missing or wrong CSRF token; reload the page")
    return await handler(request)
