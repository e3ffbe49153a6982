"""Signing in and out: the pages a browser without a session may open.

* ``GET /sign-in``: pick a platform (a configured channel alias) and type a user id, or a
  name from ``web.names``.
* ``POST /sign-in``: counted against the rate limits (per client address, then per target
  identity, whoever asks), then queued for :class:`~bot.webconsole.mailer.SignInMailer`, and
  answered with the same page whatever the identity: "if it may sign in, a link is on its
  way", with the code form. No answer says whether an id may sign in.
* ``POST /sign-in/code``: the code from the message, valid only in the browser that asked
  (counted per client address too).
* ``GET /sign-in/link?token=…``: a page with one button; ``POST /sign-in/link`` spends the
  link and signs in (a link preview's GET spends nothing).
* ``POST /sign-out``.

Every form carries the CSRF token (the browser's sign-in nonce before sign-in); a session
is opened by :class:`~bot.webconsole.sessions.Sessions`. After signing in the browser goes
back to the page it was sent away from (``next``, a path under ``/console/`` only).
"""

from __future__ import annotations

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


def _next(raw: str) -> str:
    """Where to go after signing in: a path under the console, or its home page."""
    if raw.startswith(f"{PREFIX}/") and not raw.startswith("//") and "\\" not in raw:
        return raw
    return HOME


def client_address(request: web.Request, trust_forwarded_for: bool) -> str:
    """The asking client: the peer, or behind a trusted proxy the address it added last to
    ``X-Forwarded-For``."""
    if trust_forwarded_for:
        forwarded = request.headers.get("X-Forwarded-For", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last[:64]
    return request.remote or "unknown"


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
    ) -> web.Response:
        """A sign-in page. Its forms' CSRF token is the browser's nonce (given now when it
        has none: a code counts only with it), or the session's when one is signed in (an
        identity that may not use the console, asking for another one's link)."""
        nonce = self._sessions.nonce(request)
        fresh = nonce is None
        if nonce is None:
            nonce = tokens.new_token()
        viewer = request[VIEWER]
        response = render(
            request,
            template,
            {"next": _next(request.query.get("next", "")), **context},
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
            raise web.HTTPSeeOther(_next(request.query.get("next", "")))
        return self._page(request, "sign_in.html", {"channels": self._channels()})

    async def _limited(self, request: web.Request, target: Identity | None) -> bool:
        """Count this request; True when the client or the target is over its limit."""
        config = self._settings().web
        store, now = self._sessions.store, self._clock()
        client = client_address(request, config.trust_forwarded_for)
        count = await store.count(f"client:{client}", now=now, window_s=config.rate_window_s)
        if count > config.sign_ins_per_client:
            log.warning("web_sign_in_limited", client=client, bucket="client")
            return True
        if target is None:
            return False
        count = await store.count(f"target:{target}", now=now, window_s=config.rate_window_s)
        if count > config.sign_ins_per_target:
            log.warning("web_sign_in_limited", client=client, bucket="target")
            return True
        return False

    def _too_many(self, request: web.Request) -> web.Response:
        return self._page(
            request,
            "sign_in.html",
            {
                "channels": self._channels(),
                "error": "Too many sign-in requests. Wait a few minutes and try again.",
            },
            status=429,
        )

    async def ask(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        via, user = field(form, "channel"), field(form, "user")
        settings = self._settings()
        identity: Identity | None = None
        named = settings.web.names.get(user)
        if named is not None:
            identity = Identity.parse(named)
        elif via in self._channels() and USER_ID.match(user):
            identity = Identity(kind=via.partition(".")[0], user_id=user)
        if identity is None:
            return self._page(
                request,
                "sign_in.html",
                {
                    "channels": self._channels(),
                    "error": "Pick a platform and type a user id (letters, digits, '_', "
                    "'.' or '-'), or a name the admin configured.",
                },
                status=400,
            )
        if await self._limited(request, identity):
            return self._too_many(request)
        nonce = self._sessions.nonce(request)
        if nonce is not None:  # the CSRF check passed with it; always present here
            origin = links.server_origin(settings, _local_port(request))
            self._mailer.ask(SignInAsk(identity=identity, via=via, nonce=nonce, origin=origin))
        return self._page(
            request,
            "sign_in_sent.html",
            {"identity": str(identity), "kind": identity.kind, "ttl_s": settings.web.link_ttl_s},
        )

    async def code(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        nonce = self._sessions.nonce(request)
        if await self._limited(request, None):
            return self._too_many(request)
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
                {"error": "That code is wrong, expired or already used."},
                status=403,
            )
        return await self._signed_in(request, Identity.parse(identity), field(form, "next"))

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
        identity = None
        if len(token) == 64:
            identity = await self._sessions.store.claim_link(tokens.digest(token), self._clock())
        if identity is None:
            log.warning("web_sign_in_link_refused")
            return self._page(request, "sign_in_expired.html", {}, status=410)
        return await self._signed_in(request, Identity.parse(identity), field(form, "next"))

    async def _signed_in(
        self, request: web.Request, identity: Identity, after: str
    ) -> web.StreamResponse:
        response = see_other(_next(after))
        await self._sessions.open(response, identity)
        return response

    async def sign_out(self, request: web.Request) -> web.StreamResponse:
        response = see_other(f"{PREFIX}/sign-in")
        await self._sessions.close(request, response)
        viewer = request[VIEWER]
        if viewer is not None:
            log.info("web_signed_out", identity=str(viewer.identity))
        return response
