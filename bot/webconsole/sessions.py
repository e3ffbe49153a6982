"""Sessions: a cookie that ties a browser to the identity it signed in as.

The cookie (:data:`SESSION_COOKIE`) holds a random id; the database holds its digest. It is
``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's page sends it, so a
form posted from elsewhere arrives without a session), ``Secure`` when browsers reach the
console over https (``web.public_url``), and scoped to ``/console``. A session ends at
sign-out, after ``web.session_idle_s`` without a request, or ``web.session_max_s`` after it
began; an ended or unknown cookie is simply no session (the browser is sent to sign in).

Before signing in, a browser gets a second cookie, :data:`NONCE_COOKIE` (same flags): the
sign-in forms carry its value as their CSRF token, and a typed code counts only with it
(:mod:`bot.webconsole.tokens`).
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from aiohttp import web

from bot.config import Settings
from bot.store.web import WebAccess
from bot.webconsole import tokens
from bot.webconsole.viewer import Identity, Viewer, viewer_for

log = structlog.get_logger(__name__)

PREFIX = "/console"
SESSION_COOKIE = "hatchway_console"
NONCE_COOKIE = "hatchway_console_form"
#: ``last_seen`` is written at most this often per session (a live page polls every second).
TOUCH_EVERY_S = 30.0


def _token_shape(value: str) -> bool:
    return len(value) == 64 and all(ch in "0123456789abcdef" for ch in value)


def set_cookie(response: web.StreamResponse, name: str, value: str, *, secure: bool) -> None:
    response.set_cookie(
        name, value, path=PREFIX, httponly=True, samesite="Strict", secure=secure or None
    )


class Sessions:
    """Opens, reads and closes sessions for the console's requests."""

    def __init__(
        self, store: WebAccess, settings: Callable[[], Settings], clock: Callable[[], float]
    ) -> None:
        self._store = store
        self._settings = settings
        self._clock = clock

    @property
    def store(self) -> WebAccess:
        return self._store

    async def viewer(self, request: web.Request) -> Viewer | None:
        """Who this request's session is signed in as, with their roles now; None without a
        live session."""
        session_id = request.cookies.get(SESSION_COOKIE, "")
        if not _token_shape(session_id):
            return None
        id_hash = tokens.digest(session_id)
        record = await self._store.session(id_hash)
        if record is None:
            return None
        now = self._clock()
        settings = self._settings()
        if now >= record.expires_at or now - record.last_seen >= settings.web.session_idle_s:
            await self._store.close_session(id_hash)
            log.info("web_session_ended", identity=record.identity, why="timeout")
            return None
        if now - record.last_seen >= TOUCH_EVERY_S:
            await self._store.touch_session(id_hash, now)
        identity = Identity.parse(record.identity)
        return viewer_for(settings, identity, csrf=tokens.csrf_for(session_id))

    async def open(self, response: web.StreamResponse, identity: Identity) -> None:
        """Start a session for ``identity`` and set its cookie on ``response``."""
        session_id = tokens.new_token()
        now = self._clock()
        web_config = self._settings().web
        await self._store.open_session(
            tokens.digest(session_id),
            str(identity),
            now=now,
            expires_at=now + web_config.session_max_s,
        )
        set_cookie(response, SESSION_COOKIE, session_id, secure=web_config.secure)
        response.del_cookie(NONCE_COOKIE, path=PREFIX)
        log.info("web_signed_in", identity=str(identity))

    async def close(self, request: web.Request, response: web.StreamResponse) -> None:
        """Sign out: the session is deleted and its cookie cleared."""
        session_id = request.cookies.get(SESSION_COOKIE, "")
        if _token_shape(session_id):
            await self._store.close_session(tokens.digest(session_id))
        response.del_cookie(SESSION_COOKIE, path=PREFIX)

    def nonce(self, request: web.Request) -> str | None:
        """The sign-in forms' nonce this browser holds, when it holds a well-formed one."""
        value = request.cookies.get(NONCE_COOKIE, "")
        return value if _token_shape(value) else None
