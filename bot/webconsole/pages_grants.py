"""The Grants page (admins): the standing "always" decisions, live and ended; revoke; create.

A grant lets one tool run without asking in a scope: a conversation, a channel alias, or
everywhere (:mod:`bot.approval.grants`). The page lists the live ones and the latest ended
ones (expired or revoked, kept for the record), revokes a live one, and creates one the way
an "Always" click does (:func:`bot.approval.grants.new_grant`), with the admin's
identity as ``granted_by`` and an optional lifetime. Every change is a POST answered with a
redirect back here (:mod:`bot.webconsole.notices`).
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web

from bot.approval.grants import new_grant, size_of
from bot.channel_config import GrantScope
from bot.store.grants import GrantRecord
from bot.webconsole import display
from bot.webconsole.notices import done, notice
from bot.webconsole.pages import Access, PageRequest, Pages
from bot.webconsole.people import People, kind_of
from bot.webconsole.places import Places
from bot.webconsole.sign_in import field

log = structlog.get_logger(__name__)

PATH = "/grants"
SCOPES: tuple[GrantScope, ...] = ("conversation", "channel", "global")
#: Ended grants shown (newest first); older ones stay in the database and in
#: ``hatchway grants list --all``.
ENDED_SHOWN = 100
MAX_TTL_HOURS = 24 * 366
#: The size a grant created on this page keeps (its lifetime is the form's).
CONSOLE_SIZE = "console"
#: A tool's name as the registry spells it (built-ins, ``server__tool`` of MCP servers).
TOOL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$")
_DONE = {
    "created": "Grant {ref} created.",
    "revoked": "Grant {ref} revoked: the tool asks again from its next call.",
    "gone": "Grant {ref} was not live any more; nothing changed.",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class GrantRow:
    """One grant as the page shows it."""

    id: int
    tool: str
    #: The size its approver picked ("for 1 h", "always"; :func:`size_of`).
    size: str
    scope: str
    where: str
    granted_by: str
    created: str
    expires: str
    state: str
    live: bool


def _kind(grant: GrantRecord) -> str:
    """The platform kind the grant's maker is a user of (a channel or conversation grant's
    scope names it; a global grant's does not, and its maker is shown by id)."""
    return kind_of(grant.scope_key.partition(":")[0]) if grant.scope_key else ""


def _where(grant: GrantRecord, places: Places) -> str:
    """A conversation grant's conversation by title beside its key; a channel's key; or
    everywhere."""
    if not grant.scope_key:
        return "everywhere"
    key = display.text(grant.scope_key)
    if grant.scope != "conversation":
        return key
    channel, _, conversation = grant.scope_key.partition(":")
    title = places.title(channel, conversation)
    return f"{title} ({key})" if title else key


def _places(grants: list[GrantRecord]) -> list[tuple[str, str, str | None]]:
    found: list[tuple[str, str, str | None]] = []
    for grant in grants:
        if grant.scope == "conversation":
            channel, _, conversation = grant.scope_key.partition(":")
            found.append((channel, conversation, None))
    return found


def _row(grant: GrantRecord, now: float, people: People, places: Places) -> GrantRow:
    live = grant.active(now)
    if live:
        state = "live"
    elif grant.revoked_at is not None:
        state = f"revoked {display.when(grant.revoked_at)}"
    else:
        state = "expired"
    return GrantRow(
        id=grant.id,
        tool=display.text(grant.tool),
        size=display.text(size_of(grant)),
        scope=grant.scope,
        where=_where(grant, places),
        granted_by=people.show(_kind(grant), grant.granted_by),
        created=display.when(grant.created_at),
        expires=display.when(grant.expires_at),
        state=state,
        live=live,
    )


def register(pages: Pages) -> None:
    pages.add("GET", PATH, grants_page, access=Access.ADMIN, nav="Grants")
    pages.add("POST", PATH, create_grant, access=Access.ADMIN)
    pages.add("POST", f"{PATH}/{{grant_id}}/revoke", revoke_grant, access=Access.ADMIN)


def _channels(page: PageRequest) -> list[str]:
    return [f"{kind}.{alias}" for kind, alias, _cfg in page.host.settings.channels.all()]


async def _render(
    page: PageRequest, *, error: str = "", form: dict[str, str] | None = None, status: int = 200
) -> web.Response:
    now = time.time()
    grants = await page.host.store.grants.list(now=now, include_inactive=True)
    people = await People.load(page.host.store, [(_kind(g), g.granted_by) for g in grants])
    places = await Places.load(page.host.store, _places(grants))
    rows = [_row(g, now, people, places) for g in reversed(grants)]
    context: dict[str, Any] = {
        "live": [r for r in rows if r.live],
        "ended": [r for r in rows if not r.live][:ENDED_SHOWN],
        "done": notice(page.request, _DONE),
        "error": error,
        "form": form or {},
        "scopes": SCOPES,
        "channels": _channels(page),
        "path": PATH,
    }
    return page.render("grants.html", context, status=status)


async def grants_page(page: PageRequest) -> web.StreamResponse:
    return await _render(page)


def _parse(form: dict[str, str], channels: list[str]) -> tuple[GrantScope, float | None] | str:
    """The scope and lifetime (seconds) ``form`` asks for, or what is wrong with it."""
    if not TOOL_NAME.match(form["tool"]):
        return "Name the tool as it is registered (letters, digits, _ . : -)."
    scopes = [s for s in SCOPES if s == form["scope"]]
    if not scopes:
        return f"The scope is one of {', '.join(SCOPES)}."
    scope = scopes[0]
    if scope != "global" and form["channel"] not in channels:
        return "Pick one of the configured channels."
    if scope == "conversation" and not form["conversation"]:
        return "A conversation grant needs the conversation's id."
    if not form["hours"]:
        return scope, None
    try:
        hours = float(form["hours"])
    except ValueError:
        return "The lifetime is a number of hours (empty: until revoked)."
    if not math.isfinite(hours) or not 0 < hours <= MAX_TTL_HOURS:
        return f"The lifetime is more than 0 and at most {MAX_TTL_HOURS:,} hours."
    return scope, hours * 3600


async def create_grant(page: PageRequest) -> web.StreamResponse:
    posted = await page.request.post()
    form = {
        name: field(posted, name) for name in ("tool", "scope", "channel", "conversation", "hours")
    }
    parsed = _parse(form, _channels(page))
    if isinstance(parsed, str):
        return await _render(page, error=parsed, form=form, status=400)
    scope, ttl_s = parsed
    now = time.time()
    granted_by = str(page.viewer.identity)
    grant_id = await page.host.store.grants.create(
        new_grant(
            tool=form["tool"],
            scope=scope,
            channel=form["channel"],
            conversation_id=form["conversation"],
            granted_by=granted_by,
            now=now,
            ttl_s=ttl_s,
            size=CONSOLE_SIZE,
        )
    )
    log.info(
        "grant_created",
        grant_id=grant_id,
        tool=form["tool"],
        scope=scope,
        granted_by=granted_by,
        via="web",
    )
    return done(PATH, "created", str(grant_id))


async def revoke_grant(page: PageRequest) -> web.StreamResponse:
    raw = page.request.match_info["grant_id"]
    if not raw.isdigit() or len(raw) > 18:
        raise web.HTTPNotFound(text="no such grant")
    grant_id = int(raw)
    revoked = await page.host.store.grants.revoke(grant_id, time.time())
    if revoked:
        log.info(
            "grant_revoked", grant_id=grant_id, revoked_by=str(page.viewer.identity), via="web"
        )
    return done(PATH, "revoked" if revoked else "gone", str(grant_id))
