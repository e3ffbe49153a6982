"""Signing in and out: the pages a browser without a session may open.

* ``GET /sign-in``: pick a platform (a configured channel alias) and type a user id, or a
  name from ``web.names``.
* ``POST /sign-in``: counted against the rate limits
  (:mod:`bot.webconsole.sign_in_limits`), then queued for
  :class:`~bot.webconsole.mailer.SignInMailer`, and answered with the same page whatever was
  typed: "if it may sign in, a link is on its way", with the code form. The page names no
  identity (a name from ``web.names`` is not resolved in front of the asker), its platform
  hint follows the platform picked, and its status is the same for a configured name, an id
  and anything else of the same length: nothing tells who may sign in, or who a name is.
* ``POST /sign-in/code``: the code from the message, valid only in the browser that asked
  (counted per client address too).
* ``GET /sign-in/link?token=…``: a page with one button; ``POST /sign-in/link`` spends the
  link and signs in (a link preview's GET spends nothing).
* ``POST /sign-out``.

Every form carries the CSRF token (the browser's sign-in nonce before sign-in); a session
is opened by :class:`~bot.webconsole.sessions.Sessions`. After signing in the browser goes
back to the page it was sent away from: ``next``, when it is a path under ``/console/`` of
plain URL characters (no control character, space, backslash or ``..`` segment), else the
approvals page; it is judged before a link or code is spent, so a ``next`` that cannot be
followed never costs the link.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import structlog
from aiohttp import web

from bot.config import Settings
from bot.config.web import SIGN_IN_KINDS, USER_ID
from bot.webconsole import links, tokens
from bot.webconsole.mailer import SignInAsk, SignInMailer
from bot.webconsole.pages import render
from bot.webconsole.security import VIEWER
from bot.webconsole.sessions import NONCE_COOKIE, PREFIX, Sessions, set_cookie
from bot.webconsole.sign_in_limits import SignInLimits
from bot.webconsole.viewer import Identity

log = structlog.get_logger(__name__)

HOME = f"{PREFIX}/approvals"
MAX_FIELD = 200


def field(form: Mapping[str, object], name: str, *, limit: int = MAX_FIELD) -> str:
    """A form field as text, trimmed and cut to ``limit`` characters; empty when absent."""
    value = form.get(name)
    return value.strip()[:limit] if isinstance(value, str) else ""


def see_other(location: str) -> web.Response:
    """A 303 to ``location`` (after a POST, the browser GETs it)."""
    return web.Response(status=303, headers={"Location": location})


#: What ``next`` may hold: a path and query of URL characters (RFC 3986's unreserved,
#: sub-delims, ``:@/?%`` and ``#``), none of which ends a header or leaves the origin.
_NEXT = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?%#]{1,1000}")
#: The longest user id or name the form takes (its input's ``maxlength``).
_TYPED_MAX = 64


def after_sign_in(raw: str) -> str:
    """Where to go after signing in: ``raw`` when it is a path under the console (see the
    module docstring), else its home page."""
    path = raw.partition("?")[0].partition("#")[0]
    if (
        _NEXT.fullmatch(raw)
        and raw.startswith(f"{PREFIX}/")
        and not raw.startswith("//")
        and not any(part in (".", "..") for part in path.split("/"))
        and "%2e" not in path.lower()
    ):
        return raw
    return HOME


def _local_port(request: web.Request) -> int | None:
    """The port this request reached the daemon on (not the ``Host`` header's)."""
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    if isinstance(sockname, tuple) and len(sockname) >= 2:
        return int(sockname[1])
    return None


class SignIn:
    """The sign-in routes."""

    def __init__(
        self,
        sessions: Sessions,
        mailer: SignInMailer,
        settings: Callable[[], Settings],
        clock: Callable[[], float],
    ) -> None:
        self._sessions = sessions
        self._mailer = mailer
        self._settings = settings
        self._clock = clock
        self._limits = SignInLimits(sessions.store, settings, clock)

    def register(self, app: web.Application) -> None:
        app.router.add_get("/sign-in", self.form)
        app.router.add_post("/sign-in", self.ask)
        app.router.add_post("/sign-in/code", self.code)
        app.router.add_get("/sign-in/link", self.link)
        app.router.add_post("/sign-in/link", self.follow_link)
        app.router.add_post("/sign-out", self.sign_out)

    # -- pages -------------------------------------------------------------------------------

    def _channels(self) -> list[str]:
        """The channel aliases a sign-in message can go through."""
        return [
            f"{kind}.{alias}"
            for kind, alias, config in self._settings().channels.all()
            if config.enabled and kind in SIGN_IN_KINDS
        ]

    def _page(
        self,
        request: web.Request,
        template: str,
        context: dict[str, object],
        *,
        status: int = 200,
        nonce: str | None = None,
    ) -> web.Response:
        """A sign-in page. Its forms' CSRF token is the browser's nonce (given now when it
        has none: a code counts only with it; ``nonce``: the one to give), or the session's
        when one is signed in (an identity that may not use the console, asking for another
        one's link)."""
        held = self._sessions.nonce(request)
        nonce = nonce or held or tokens.new_token()
        fresh = nonce != held
        viewer = request[VIEWER]
        response = render(
            request,
            template,
            {"next": after_sign_in(request.query.get("next", "")), **context},
            viewer=None,
            csrf=nonce if viewer is None else viewer.csrf,
            status=status,
        )
        if fresh:
            set_cookie(response, NONCE_COOKIE, nonce, secure=self._settings().web.secure)
        return response

    async def form(self, request: web.Request) -> web.StreamResponse:
        viewer = request[VIEWER]
        if viewer is not None and viewer.eligible:
            raise web.HTTPSeeOther(after_sign_in(request.query.get("next", "")))
        return self._page(request, "sign_in.html", {"channels": self._channels()})

    def _too_many(self, request: web.Request, after: str) -> web.Response:
        return self._page(
            request,
            "sign_in.html",
            {
                "channels": self._channels(),
                "next": after,
                "error": "Too many sign-in requests. Wait a few minutes and try again.",
            },
            status=429,
        )

    async def ask(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        via, user = field(form, "channel"), field(form, "user")
        after = after_sign_in(field(form, "next", limit=2000))
        settings = self._settings()
        if via not in self._channels() or not user or len(user) > _TYPED_MAX:
            return self._page(
                request,
                "sign_in.html",
                {
                    "channels": self._channels(),
                    "next": after,
                    "error": "Pick a platform and type a user id (letters, digits, '_', "
                    "'.' or '-'), or a name the admin configured.",
                },
                status=400,
            )
        kind = via.partition(".")[0]
        # Resolved here, never shown: the page and its status are the same for a configured
        # name, a user id and anything else typed.
        identity: Identity | None = None
        named = settings.web.names.get(user)
        if named is not None:
            identity = Identity.parse(named)
        elif USER_ID.match(user):
            identity = Identity(kind=kind, user_id=user)
        target = None if identity is None else str(identity)
        viewer = request[VIEWER]
        own_session = viewer is not None and str(viewer.identity) == target
        if await self._limits.ask_over(request, f"{kind}:{user}", target, own_session=own_session):
            return self._too_many(request, after)
        # A browser signed in (as someone who may not use the console, or as the target) has
        # no nonce any more: it gets one with this page, for the code sent now.
        nonce = self._sessions.nonce(request) or tokens.new_token()
        if identity is not None:
            origin = links.server_origin(settings, _local_port(request))
            self._mailer.ask(SignInAsk(identity=identity, via=via, nonce=nonce, origin=origin))
        return self._page(
            request,
            "sign_in_sent.html",
            {"asked": True, "kind": kind, "ttl_s": settings.web.link_ttl_s, "next": after},
            nonce=nonce,
        )

    async def code(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        after = after_sign_in(field(form, "next", limit=2000))
        nonce = self._sessions.nonce(request)
        if await self._limits.client_over(request):
            return self._too_many(request, after)
        typed = tokens.normalise_code(field(form, "code"))
        identity = None
        if nonce is not None and typed:
            identity = await self._sessions.store.claim_code(
                tokens.code_digest(typed, nonce), self._clock()
            )
        if identity is None:
            log.warning("web_sign_in_code_refused")
            return self._page(
                request,
                "sign_in_sent.html",
                {"error": "That code is wrong, expired or already used.", "next": after},
                status=403,
            )
        return await self._signed_in(request, Identity.parse(identity), after)

    async def link(self, request: web.Request) -> web.StreamResponse:
        token = request.query.get("token", "")
        identity = None
        if len(token) == 64:
            identity = await self._sessions.store.sign_in_identity(
                tokens.digest(token), self._clock()
            )
        if identity is None:
            return self._page(request, "sign_in_expired.html", {}, status=410)
        return self._page(request, "sign_in_link.html", {"identity": identity, "token": token})

    async def follow_link(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        token = field(form, "token")
        after = after_sign_in(field(form, "next", limit=2000))  # before the link is spent
        identity = None
        if len(token) == 64:
            identity = await self._sessions.store.claim_link(tokens.digest(token), self._clock())
        if identity is None:
            log.warning("web_sign_in_link_refused")
            return self._page(request, "sign_in_expired.html", {}, status=410)
        return await self._signed_in(request, Identity.parse(identity), after)

    async def _signed_in(
        self, request: web.Request, identity: Identity, after: str
    ) -> web.StreamResponse:
        response = see_other(after)
        await self._sessions.open(response, identity)
        await self._limits.remember(request, response, identity)
        return response

    async def sign_out(self, request: web.Request) -> web.StreamResponse:
        response = see_other(f"{PREFIX}/sign-in")
        await self._sessions.close(request, response)
        viewer = request[VIEWER]
        if viewer is not None:
            log.info("web_signed_out", identity=str(viewer.identity))
        return response
