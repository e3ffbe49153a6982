"""How often a sign-in may be asked for, and whose requests always get through.

Three fixed-window counters (:mod:`bot.store.web` names their buckets):

* **per client**: ``web.sign_ins_per_client`` per ``web.rate_window_s``, asks and typed
  codes together, from one address (or one browser of the target's own, below);
* **per target and client**: ``web.sign_ins_per_target`` asks of one client for one
  target's link per ``web.rate_window_s``: a stranger who asks again and again for an
  admin's link runs out of their own asks, never the admin's;
* **per target**: ``web.sign_in_messages_per_hour`` messages asked for one target from every
  client together (against someone asking from many addresses). A request of the target's
  own is never refused by it: from a browser signed in as the target now, from a browser
  that carries the :data:`KNOWN_COOKIE` it got when it signed in as the target, or from an
  address the target signed in from, in the last :data:`KNOWN_FOR_S`. A browser of the
  target's own (signed in as it, or with that cookie) is also counted by the first two
  limits as itself, not as its address: others behind the same address cannot use up its
  asks.

The counters count what was asked for as it was typed (``<kind>:<text>``), whether it
names an identity that may sign in or not, and never by the identity a name from
``web.names`` stands for: a refusal says nothing about who may sign in, and no count shared
by a name and an id tells who the name is. (One identity may so be asked for under each of
its spellings, its id and each name of it, each up to the caps.)
Addresses and browsers are remembered as digests (:func:`~bot.webconsole.tokens.digest`).
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from aiohttp import web

from bot.config import Settings
from bot.store.web import WebAccess, client_bucket, dms_bucket, target_bucket
from bot.webconsole import tokens
from bot.webconsole.sessions import PREFIX
from bot.webconsole.viewer import Identity

log = structlog.get_logger(__name__)

#: A cookie a browser gets when it signs in (a random value; its digest is remembered with
#: the identity): a later ask of that identity from it is the identity's own.
KNOWN_COOKIE = "hatchway_console_known"
#: How long a browser or an address stays known after a sign-in from it.
KNOWN_FOR_S = 30 * 86400.0
#: The window of the per-target message cap.
MESSAGE_WINDOW_S = 3600.0


def client_address(request: web.Request, trust_forwarded_for: bool) -> str:
    """The asking client: the peer, or behind a trusted proxy the address it added last to
    ``X-Forwarded-For``."""
    if trust_forwarded_for:
        forwarded = request.headers.get("X-Forwarded-For", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last[:64]
    return request.remote or "unknown"


def _known_cookie(request: web.Request) -> str | None:
    value = request.cookies.get(KNOWN_COOKIE, "")
    return value if len(value) == 64 and all(ch in "0123456789abcdef" for ch in value) else None


class SignInLimits:
    """Counts sign-in requests and says when one is over a limit; remembers where each
    identity signed in from."""

    def __init__(
        self, store: WebAccess, settings: Callable[[], Settings], clock: Callable[[], float]
    ) -> None:
        self._store = store
        self._settings = settings
        self._clock = clock

    def _client(self, request: web.Request) -> str:
        return client_address(request, self._settings().web.trust_forwarded_for)

    async def _over(self, bucket: str, limit: int, window_s: float, client: str) -> bool:
        count = await self._store.count(bucket, now=self._clock(), window_s=window_s)
        if count > limit:
            log.warning("web_sign_in_limited", client=client, bucket=bucket.partition(":")[0])
            return True
        return False

    async def client_over(self, request: web.Request) -> bool:
        """Count a request of this client address; True when it is over
        ``sign_ins_per_client``."""
        config = self._settings().web
        client = self._client(request)
        return await self._over(
            client_bucket(client), config.sign_ins_per_client, config.rate_window_s, client
        )

    async def ask_over(
        self, request: web.Request, asked: str, identity: str | None, *, own_session: bool
    ) -> bool:
        """Count an ask; True when it is over a limit. ``asked`` is what was asked for, as
        typed (``<kind>:<text>``), which the counters count by: never the identity a name
        stands for, so that no count shared between a name and an id (or two names) tells
        who a name is. ``identity``: the identity it stands for, if any; ``own_session``: the
        browser is signed in as it.

        A browser of the identity's own (``own_session``, or its :data:`KNOWN_COOKIE` known
        for the identity) is counted as itself, not as its address: others at the same
        address (an office behind one NAT) cannot use up its asks."""
        config, now = self._settings().web, self._clock()
        address = self._client(request)
        cookie = _known_cookie(request)
        browser_key = None if cookie is None else f"browser:{tokens.digest(cookie)}"
        # The same queries whether ``asked`` names an identity or not (when it names none,
        # it is looked up as it is, which no sign-in ever remembered): how long the answer
        # takes tells nothing either.
        whose = identity if identity is not None else asked
        own_browser = own_session or (
            browser_key is not None
            and await self._store.knows_client(whose, [browser_key], since=now - KNOWN_FOR_S)
        )
        client = browser_key if own_browser and browser_key is not None else address
        window = config.rate_window_s
        if await self._over(client_bucket(client), config.sign_ins_per_client, window, address):
            return True
        if await self._over(
            target_bucket(asked, client), config.sign_ins_per_target, window, address
        ):
            return True
        count = await self._store.count(dms_bucket(asked), now=now, window_s=MESSAGE_WINDOW_S)
        if count <= config.sign_in_messages_per_hour or own_browser:
            return False
        address_key = f"addr:{tokens.digest(address)}"
        if await self._store.knows_client(whose, [address_key], since=now - KNOWN_FOR_S):
            return False
        log.warning("web_sign_in_limited", client=address, bucket="dms")
        return True

    async def remember(
        self, request: web.Request, response: web.StreamResponse, identity: Identity
    ) -> None:
        """``identity`` signed in from this request's client: remember its address and its
        browser (given a :data:`KNOWN_COOKIE` now when it has none)."""
        cookie = _known_cookie(request)
        if cookie is None:
            cookie = tokens.new_token()
            response.set_cookie(
                KNOWN_COOKIE,
                cookie,
                path=PREFIX,
                max_age=int(KNOWN_FOR_S),
                httponly=True,
                samesite="Strict",
                secure=self._settings().web.secure or None,
            )
        clients = [
            f"addr:{tokens.digest(self._client(request))}",
            f"browser:{tokens.digest(cookie)}",
        ]
        await self._store.remember_clients(str(identity), clients, self._clock())
