"""Sign-in links: issued for an identity, stored as digests, spent once.

A link is ``<base>/console/sign-in/link?token=<64 hex>``. Opening it shows a page with one
button; only pressing it (a POST) signs in, so a link preview (Slack and Telegram fetch the
links in messages) cannot spend it. The base is ``web.public_url``, or else the address the
daemon's server listens on, never the ``Host`` header of a request: a link built from that
would send the token wherever the asker pointed it.

:func:`issue` is used for links sent in chat (with a code for the asking browser) and by
``hatchway web login-link`` (no code).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.config import Settings
from bot.store.web import NewSignIn, WebAccess
from bot.webconsole import tokens
from bot.webconsole.sessions import PREFIX
from bot.webconsole.viewer import Identity

LINK_PATH = f"{PREFIX}/sign-in/link"


@dataclass(frozen=True, slots=True, kw_only=True)
class IssuedLink:
    url: str
    #: The code to type instead, in the browser whose nonce it was issued for; None for a
    #: link printed at the host.
    code: str | None
    expires_at: float


def server_origin(settings: Settings, port: int | None = None) -> str:
    """Where browsers reach the console: ``web.public_url``, else ``http://`` and the
    server's address (``port``: the port it is bound to, when known)."""
    if settings.web.public_url:
        return settings.web.public_url
    host = settings.server.host
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port if port is not None else settings.server.port}"


async def issue(
    store: WebAccess,
    identity: Identity,
    *,
    origin: str,
    ttl_s: float,
    now: float,
    nonce: str | None = None,
) -> IssuedLink:
    """Store a new sign-in for ``identity`` and return its link (and its code, bound to
    ``nonce``, when a browser asked)."""
    token = tokens.new_token()
    code = tokens.new_code() if nonce is not None else None
    await store.add_sign_in(
        NewSignIn(
            token_hash=tokens.digest(token),
            code_hash=None if code is None or nonce is None else tokens.code_digest(code, nonce),
            identity=str(identity),
            created_at=now,
            expires_at=now + ttl_s,
        )
    )
    return IssuedLink(url=f"{origin}{LINK_PATH}?token={token}", code=code, expires_at=now + ttl_s)
