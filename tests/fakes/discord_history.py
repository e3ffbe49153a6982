"""Message ids, history and nonces in the fake Discord, as the real API has them.

* Ids are snowflakes of the moment they are made (:class:`Snowflakes`: milliseconds since
  Discord's epoch shifted left 22 bits, always increasing), so an id says when its message
  was posted, ``after`` a snowflake made from a time bounds history by age as with Discord,
  and :func:`snowflake_at` makes the id of a message posted in the past.
* ``GET /channels/{id}/messages`` (:func:`history_page`): ``limit`` 1–100 (50 when not
  given); with ``after``, the ``limit`` messages right after that id, else those right
  before ``before`` (or the latest); newest first either way (discord.py reverses them
  itself). REST message objects carry no ``nonce``, ``guild_id`` or ``member`` (the create
  response and the gateway events do): :func:`as_rest`.
* ``enforce_nonce`` (:class:`Nonces`): a create whose nonce the same author used in the
  same channel within :data:`NONCE_WINDOW_S` is answered with that message and creates
  nothing. (A nonce's length is checked with the message: :mod:`tests.fakes.discord_limits`.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from tests.fakes.discord_limits import FormError
from tests.fakes.discord_payloads import JSON

DISCORD_EPOCH_MS = 1_420_070_400_000
NONCE_WINDOW_S = 120.0
NONCE_CHARS = 25
DEFAULT_LIMIT = 50
MAX_LIMIT = 100
#: Fields a REST message object does not have.
GATEWAY_ONLY = ("nonce", "guild_id", "member")


def snowflake_at(unix_s: float, sequence: int = 0) -> int:
    """The id Discord would give a message made at ``unix_s`` (seconds since 1970)."""
    return ((int(unix_s * 1000) - DISCORD_EPOCH_MS) << 22) | (sequence & 0xFFF)


class Snowflakes:
    """Ids of things made now, increasing."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._last = 0

    def next(self) -> str:
        self._last = max(self._last + 1, snowflake_at(self._clock()))
        return str(self._last)


def as_rest(message: JSON) -> JSON:
    """A stored message as ``GET /channels/{id}/messages`` shows it."""
    return {k: v for k, v in message.items() if k not in GATEWAY_ONLY}


def history_page(
    messages: Iterable[JSON], channel_id: str, query: Mapping[str, str]
) -> list[JSON] | FormError:
    """One page of the channel's history, newest first; or why Discord refuses the query."""
    raw_limit = query.get("limit", str(DEFAULT_LIMIT))
    if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= MAX_LIMIT:
        return FormError("limit", "NUMBER_TYPE_MAX", f"Must be between 1 and {MAX_LIMIT}.")
    bounds = {k: query[k] for k in ("after", "before") if k in query}
    for key, value in bounds.items():
        if not value.isdigit():
            return FormError(key, "NUMBER_TYPE_COERCE", "Value is not snowflake.")
    limit = int(raw_limit)
    mine = sorted(
        (m for m in messages if m["channel_id"] == channel_id), key=lambda m: int(m["id"])
    )
    if "after" in bounds:
        page = [m for m in mine if int(m["id"]) > int(bounds["after"])][:limit]
    else:
        before = int(bounds["before"]) if "before" in bounds else None
        older = [m for m in mine if before is None or int(m["id"]) < before]
        page = older[-limit:]
    return [as_rest(m) for m in reversed(page)]


class Nonces:
    """The nonces messages were created with, for ``enforce_nonce``."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._made: dict[tuple[str, str, str], tuple[str, float]] = {}

    def earlier(self, channel_id: str, author_id: str, nonce: str) -> str | None:
        """The id of the message the same author created with ``nonce`` in the channel
        within the window, if any."""
        made = self._made.get((channel_id, author_id, nonce))
        if made is None or self._clock() - made[1] > NONCE_WINDOW_S:
            return None
        return made[0]

    def remember(self, channel_id: str, author_id: str, nonce: str, message_id: str) -> None:
        self._made[(channel_id, author_id, nonce)] = (message_id, self._clock())
