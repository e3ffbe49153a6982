"""The Pairing requests page (admins): codes strangers got in a DM, to approve or reject.

Under ``dm_policy = "pairing"`` a stranger's DM gets a one-time code (:mod:`bot.gateway.pairing`).
The page lists the pending codes and the latest decided or expired ones; approving one lets
that user talk to the bot on that channel alias from then on (as ``hatchway pairing approve``
and ``/pair CODE`` do), rejecting one closes it. Both go through
:class:`bot.gateway.pairing.PairingBook` with the admin's identity, and answer with a
redirect back here. The display name is the stranger's own: shown scrubbed and visible.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from bot.gateway.pairing import CODE_LENGTH, PairingBook, normalise_code
from bot.store.pairings import PairingRecord
from bot.webconsole import display
from bot.webconsole.notices import done, notice
from bot.webconsole.pages import Access, PageRequest, Pages

PATH = "/pairing"
#: Decided or expired codes shown, newest first.
EARLIER_SHOWN = 100
_DONE = {
    "approved": "Pairing {ref} approved: the user may talk to the bot now.",
    "rejected": "Pairing {ref} rejected.",
    "gone": "No pending pairing with code {ref} (decided already, or expired); nothing changed.",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class PairingRow:
    code: str
    channel: str
    user: str
    state: str
    asked: str
    expires: str
    decided: str


def _row(record: PairingRecord, now: float) -> PairingRow:
    state = (
        "expired" if record.status == "pending" and not record.pending_at(now) else record.status
    )
    name = display.text(record.display_name, 100)
    user_id = display.text(record.user_id)
    decided = ""
    if record.approved_by:
        decided = f"{display.text(record.approved_by)}, {display.when(record.approved_at)}"
    return PairingRow(
        code=record.code,
        channel=record.channel,
        user=f"{name} ({user_id})" if name else user_id,
        state=state,
        asked=display.when(record.created_at),
        expires=display.when(record.expires_at),
        decided=decided,
    )


def register(pages: Pages) -> None:
    pages.add("GET", PATH, pairing_page, access=Access.ADMIN, nav="Pairing")
    for action in ("approve", "reject"):
        pages.add("POST", f"{PATH}/{{code}}/{action}", decide_pairing, access=Access.ADMIN)


async def pairing_page(page: PageRequest) -> web.StreamResponse:
    now = time.time()
    records = await page.host.store.pairings.list(now=now, include_inactive=True)
    rows = [_row(r, now) for r in reversed(records)]
    context: dict[str, Any] = {
        "pending": [r for r in rows if r.state == "pending"],
        "earlier": [r for r in rows if r.state != "pending"][:EARLIER_SHOWN],
        "done": notice(page.request, _DONE),
        "path": PATH,
    }
    return page.render("pairing.html", context)


async def decide_pairing(page: PageRequest) -> web.StreamResponse:
    code = normalise_code(page.request.match_info["code"])
    if len(code) != CODE_LENGTH or not code.isalnum():
        return done(PATH, "gone", code[:CODE_LENGTH])
    book = PairingBook(page.host.store, time.time)
    by = str(page.viewer.identity)
    if page.request.path.endswith("/approve"):
        outcome = await book.approve(code, by)
        return done(PATH, "approved" if outcome.approved else "gone", code)
    outcome = await book.reject(code, by)
    return done(PATH, "rejected" if outcome.record is not None else "gone", code)
