"""The Turns page: conversations with recent activity, and one session's recent turns with
every tool call, its outcome, its duration, who let it run and its receipt check.

``/turns`` lists sessions (a conversation, or one of its threads or agents) by their latest
activity, each under its conversation's title (and its thread's) where the platform gives
one (:mod:`bot.webconsole.places`); ``/turns/session?key=…`` shows that session's turns,
newest first, from
:attr:`bot.store.Store.turns`: the message that started each (sender by name and id, text,
when, how it ended — ``stopped`` for a turn ``/stop`` ended —, how long it took), the reply
sent for it (masked like everything else), and the tool calls of its run, each with its
outcome in the chat's words (:mod:`bot.webconsole.outcomes`). A call's receipt is checked against
its row as stored now, with the key ``agent.receipt_key_env`` names, like
``hatchway receipts verify`` (:mod:`bot.tools.receipt`); the key is never shown.

**Search by person**: ``person`` (a user id) lists the conversations where that person wrote
(on the channels the viewer reads), and a session's page shows only their turns.

An approver sees the sessions of the channels they approve; another channel's session reads
as empty (the store's queries take the viewer's channels).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from bot.errors import ConfigError
from bot.store.tool_calls import ToolCallRecord
from bot.store.turns import SESSIONS_PAGE, TurnRecord
from bot.tools.receipt import ReceiptSigner, ReceiptVerdict
from bot.turn import CancelReason
from bot.webconsole import display
from bot.webconsole.outcomes import call_outcome
from bot.webconsole.pages import Access, PageRequest, Pages
from bot.webconsole.people import People, kind_of
from bot.webconsole.places import Places, session_places

PATH = "/turns"
SESSION_PATH = f"{PATH}/session"
MAX_KEY_CHARS = 512
MAX_PERSON_CHARS = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRow:
    call_id: str
    tool: str
    arguments: str
    outcome: str
    outcome_class: str
    decided_by: str
    duration: str
    receipt: str
    receipt_class: str
    result: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyView:
    kind: str
    text: str
    status: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnView:
    turn_id: str
    started: str
    took: str
    status: str
    status_class: str
    error: str
    sender: str
    text: str
    attempts: int
    background: bool
    calls: tuple[CallRow, ...]
    replies: tuple[ReplyView, ...]


class Receipts:
    """Checks receipts with the configured key, read once per page (and only when a row
    has a receipt)."""

    def __init__(self, page: PageRequest) -> None:
        self._agent = page.host.settings.agent
        self._signer: ReceiptSigner | None = None
        self._missing = ""

    def check(self, record: ToolCallRecord) -> tuple[str, str]:
        """(what the check found, its CSS class)."""
        if record.receipt is None:
            return "no receipt", "receipt-none"
        if self._signer is None and not self._missing:
            try:
                self._signer = ReceiptSigner.for_verifying(self._agent)
            except ConfigError:
                self._missing = f"not checked: {self._agent.receipt_key_env} is not set"
        if self._signer is None:
            return self._missing, "receipt-unchecked"
        result = self._signer.check(record)
        verified = result.verdict is ReceiptVerdict.VERIFIED
        return result.describe(), "receipt-verified" if verified else "receipt-bad"


def _call(record: ToolCallRecord, receipts: Receipts, people: People) -> CallRow:
    receipt, receipt_class = receipts.check(record)
    outcome = call_outcome(record)
    kind = kind_of(record.channel)
    return CallRow(
        call_id=display.text(record.call_id, 80),
        tool=display.text(record.tool),
        arguments=display.arguments(record.arguments),
        outcome=outcome.label,
        outcome_class=outcome.css,
        decided_by=people.show(kind, outcome.decided_by) if outcome.decided_by else "",
        duration=display.duration(record.duration_ms / 1000),
        receipt=receipt,
        receipt_class=receipt_class,
        result=display.block(record.observation, 600),
    )


#: How a turn ended, as shown: the inbox entry's status, and ``stopped`` for a turn
#: ``/stop`` ended (its entry is ``done`` with :attr:`bot.turn.CancelReason.STOP` as its error).
_ENDED = {
    "done": "answered",
    "failed": "failed",
    "processing": "running",
    "received": "waiting",
    "parked": "waiting for approval",
}


def _ending(turn: TurnRecord) -> tuple[str, str, str]:
    """(how the turn ended, its CSS class, the note to show)."""
    if turn.status == "done" and turn.error == CancelReason.STOP:
        return "stopped", "state-stopped", ""
    label = _ENDED.get(turn.status, turn.status)
    return label, f"state-{turn.status}", display.text(turn.error, 300)


_REPLY_KIND = {"answer": "Answer", "failure": "Failure line", "notice": "Notice"}


def _turn(turn: TurnRecord, receipts: Receipts, people: People) -> TurnView:
    status, status_class, error = _ending(turn)
    kind = kind_of(turn.channel)
    return TurnView(
        turn_id=turn.turn_id,
        started=display.when(turn.received_at),
        took=display.duration(turn.duration_s),
        status=status,
        status_class=status_class,
        error=error,
        sender=people.show(kind, turn.sender_id) if turn.sender_id else "unknown",
        text=display.block(turn.text, 1000),
        attempts=turn.attempts,
        background=turn.background,
        calls=tuple(_call(c, receipts, people) for c in turn.tool_calls),
        replies=tuple(
            ReplyView(
                kind=_REPLY_KIND.get(r.kind, r.kind),
                text=display.block(r.body, 4000),
                status="" if r.status == "sent" else r.status,
            )
            for r in turn.replies
        ),
    )


def register(pages: Pages) -> None:
    pages.add("GET", PATH, sessions_page, access=Access.SIGNED_IN, nav="Turns")
    pages.add("GET", SESSION_PATH, session_page, access=Access.SIGNED_IN)


def _bad(page: PageRequest, template: str, context: dict[str, Any], error: str) -> web.Response:
    return page.render(template, {**context, "error": error}, status=400)


async def sessions_page(page: PageRequest) -> web.StreamResponse:
    query = page.request.query
    configured = [f"{kind}.{alias}" for kind, alias, _ in page.host.settings.channels.all()]
    channel = query.get("channel", "")[:200]
    person = query.get("person", "").strip()[:MAX_PERSON_CHARS]
    readable = [c for c in configured if page.viewer.may_read(c)]
    context: dict[str, Any] = {
        "sessions": [],
        "channels": readable,
        "channel": channel,
        "person": person,
        "older": "",
        "error": "",
        "path": PATH,
        "session_path": SESSION_PATH,
    }
    before: tuple[float, str] | None = None
    if "before_at" in query or "before_key" in query:
        try:
            at = float(query.get("before_at", ""))
        except ValueError:
            at = math.nan
        if not math.isfinite(at):
            return _bad(page, "turns.html", context, "before_at: not a time; start again")
        before = (at, query.get("before_key", "")[:MAX_KEY_CHARS])
    if person:
        # a person's conversations: where they wrote, on the channels the viewer reads
        found = await page.host.store.turns.sessions_of_sender(
            person, [c for c in readable if not channel or c == channel]
        )
        more = False
    else:
        found = await page.host.store.turns.sessions(
            display.reach(page.viewer), channel=channel, before=before, limit=SESSIONS_PAGE + 1
        )
        more, found = len(found) > SESSIONS_PAGE, found[:SESSIONS_PAGE]
    keep_person = {"person": person} if person else {}
    places = await Places.load(
        page.host.store, [(s.channel, *session_places(s.channel, s.session_key)) for s in found]
    )
    context["sessions"] = [
        {
            "key": display.text(s.session_key, 300),
            "title": places.session_title(s.channel, s.session_key),
            "href": f"{SESSION_PATH}?{urlencode({'key': s.session_key, **keep_person})}",
            "channel": s.channel,
            "active": display.when(s.updated_at),
        }
        for s in found
    ]
    if more:
        last = found[-1]
        position = {"before_at": repr(last.updated_at), "before_key": last.session_key}
        keep = {"channel": channel} if channel else {}
        context["older"] = f"{PATH}?{urlencode({**keep, **position})}"
    return page.render("turns.html", context)


def _people_of(turns: tuple[TurnRecord, ...]) -> list[tuple[str, str]]:
    who = [(kind_of(t.channel), t.sender_id) for t in turns]
    for turn in turns:
        for c in turn.tool_calls:
            who += [
                (kind_of(c.channel), c.decided_by or ""),
                (kind_of(c.channel), c.approved_by or ""),
            ]
    return who


async def session_page(page: PageRequest) -> web.StreamResponse:
    query = page.request.query
    key = query.get("key", "")[:MAX_KEY_CHARS]
    person = query.get("person", "").strip()[:MAX_PERSON_CHARS]
    context: dict[str, Any] = {
        "key": display.text(key, 300),
        "title": "",
        "person": display.text(person, 120),
        "all_href": f"{SESSION_PATH}?{urlencode({'key': key})}",
        "turns": [],
        "older": "",
        "error": "",
        "path": PATH,
    }
    if not key:
        return _bad(page, "session.html", context, "Pick a conversation from the list.")
    raw_before = query.get("before", "")
    if raw_before and not (raw_before.isdigit() and len(raw_before) <= 18):
        return _bad(page, "session.html", context, "before: not a turn's position; start again")
    found = await page.host.store.turns.for_session(
        key,
        display.reach(page.viewer),
        before=int(raw_before) if raw_before else None,
        sender_id=person,
    )
    receipts = Receipts(page)
    people = await People.load(page.host.store, _people_of(found.turns))
    if found.turns:
        channel = found.turns[0].channel
        places = await Places.load(page.host.store, [(channel, *session_places(channel, key))])
        context["title"] = places.session_title(channel, key)
    context["turns"] = [_turn(t, receipts, people) for t in found.turns]
    if found.older is not None:
        more = {"key": key, **({"person": person} if person else {}), "before": found.older}
        context["older"] = f"{SESSION_PATH}?{urlencode(more)}"
    return page.render("session.html", context)
