"""The Pending approvals page: every open request a viewer may see, live, and its decisions.

What a card shows is what the chat's full view shows, from the same row through the same
function (:func:`bot.approval.card.card_for`): the tool, every argument in full (secret values
masked and nothing else, control and invisible characters as escapes, see
:mod:`bot.approval.summary`), why a person is asked, the requester, the conversation, the age
and the deadline. Approvers of the request's channel alias get Approve, Deny, Deny with a
reply, and where the card offers them (:attr:`~bot.channel.ApprovalCard.always`), Always and
"Approve with a grant" of one of the card's grant choices: the ones the chat's card offers
(``approval.grant_choices``, bounded by the policy: :mod:`bot.approval.grant_choices`),
decided by the same card flow. Admins who are not approvers of it see it without them.

Live: ``GET /approvals/cards`` answers the list alone, and ``static/live.js`` fetches it every
second, adding new cards and removing closed ones without touching the rest (a reply being
typed survives). Without JavaScript the page has a refresh link and every action is a plain
form.

A decision goes to :meth:`bot.approval.service.ApprovalService.decide_from_web` with the
fingerprint the page showed: the service applies the chat's rules (approvers only, not the
requester's own call, once), audits it with the route ``web`` and wakes the waiting turn,
which edits the chat's cards. A refused or repeated post (a replayed form) changes nothing
and is answered with why, with status 403 (not allowed), 409 (already decided) or 410 (no
longer open).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from aiohttp import web

from bot.approval.card import card_for, parse_channel_ref
from bot.approval.card_flow import counted_words
from bot.approval.web_answer import WebAnswer
from bot.channel import ApprovalCard, ApprovalChoice, ClickVerdict
from bot.store.approvals import ApprovalRecord, ApprovalStatus
from bot.visible_text import visible
from bot.webconsole import times
from bot.webconsole.pages import Access, PageRequest, Pages
from bot.webconsole.places import Places
from bot.webconsole.sessions import PREFIX
from bot.webconsole.sign_in import field, see_other

PATH = "/approvals"
#: The longest reply an approver may send instead of the tool's result (as on Slack and
#: Discord).
MAX_REPLY = 2000
_STATUS = {
    ClickVerdict.NOT_AUTHORISED: 403,
    ClickVerdict.SELF_APPROVAL: 403,
    ClickVerdict.ALREADY_DECIDED: 409,
    ClickVerdict.NEEDS_FULL_VIEW: 409,
    ClickVerdict.UNKNOWN: 410,
    ClickVerdict.CHOICE_NOT_OFFERED: 400,
    ClickVerdict.NO_GRANT_HERE: 400,
}
_DONE = {
    "approve": "Approved. The call runs now.",
    "always": "Approved, and a grant was made. The call runs now.",
    "grant": "Approved, with a grant of the size you picked. The call runs now.",
    "deny": "Denied. The call does not run.",
    "reply": "Denied with your reply. The call does not run; the model gets the reply.",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingCard:
    """One open request as the page shows it."""

    id: str
    channel: str
    card: ApprovalCard
    conversation: str
    fingerprint: str
    created_at: float
    expires_at: float
    may_decide: bool
    #: The viewer asked for this call and may not approve it.
    own: bool
    #: Reminders sent so far, and whom the request was escalated to (empty: nobody).
    reminders_sent: int = 0
    escalated_to: tuple[str, ...] = ()

    @property
    def asked(self) -> str:
        return _clock_time(self.created_at)

    @property
    def expires(self) -> str:
        return _clock_time(self.expires_at)

    @property
    def age(self) -> str:
        return f"({times.relative(times.current().now - self.created_at)})"

    @property
    def left(self) -> str:
        return f"({times.relative(times.current().now - self.expires_at)})"


def _clock_time(ts: float) -> str:
    return times.current().absolute(ts)


def _conversation(record: ApprovalRecord, places: Places) -> str:
    """``telegram.main · team (-100…) · thread 7``: the conversation (and thread) by title
    beside the id, where a title is kept."""
    channel, conversation = record.channel, record.conversation_id
    where = f"{visible(channel)} · {places.show(channel, conversation)}"
    if record.thread_id:
        where += f" · thread {places.show(channel, conversation, record.thread_id)}"
    return where


def register(pages: Pages) -> None:
    pages.add("GET", PATH, approvals_page, access=Access.SIGNED_IN, nav="Pending approvals")
    pages.add("GET", f"{PATH}/cards", approval_cards, access=Access.SIGNED_IN)
    pages.add("POST", f"{PATH}/{{approval_id}}/decide", decide, access=Access.SIGNED_IN)


async def pending_cards(page: PageRequest) -> list[PendingCard]:
    """The open requests ``page``'s viewer may see, oldest first."""
    approvals, viewer = page.host.approvals, page.viewer
    now = time.time()
    cards = []
    records = [
        r
        for r in await page.host.store.approvals.list(status=ApprovalStatus.PENDING)
        if r.expires_at > now
        and (viewer.may_read(r.channel) or viewer.may_decide(r.channel, escalated(page, r)))
    ]
    places = await Places.load(
        page.host.store, [(r.channel, r.conversation_id, r.thread_id) for r in records]
    )
    for record in records:
        policy = approvals.policy_for(parse_channel_ref(record.channel), record.agent)
        # the requester never counts toward a quorum, self_approval or not
        deciding = viewer.may_decide(record.channel, escalated(page, record))
        own = record.requester == viewer.identity.user_id and (
            not policy.self_approval or record.quorum > 1
        )
        cards.append(
            PendingCard(
                id=record.id,
                channel=record.channel,
                card=card_for(record, timeout_s=policy.timeout_s, policy=policy),
                conversation=_conversation(record, places),
                fingerprint=record.fingerprint,
                created_at=record.created_at,
                expires_at=record.expires_at,
                may_decide=deciding and not own,
                own=own and deciding,
                reminders_sent=record.reminders_sent,
                escalated_to=tuple(
                    visible(u)
                    for u in (*record.escalated_to, *(f"role {r}" for r in record.escalated_roles))
                ),
            )
        )
    return cards


async def approvals_page(page: PageRequest) -> web.StreamResponse:
    done = _DONE.get(page.request.query.get("done", ""))
    return page.render(
        "approvals.html", {"cards": await pending_cards(page), "done": done, "path": PATH}
    )


async def approval_cards(page: PageRequest) -> web.StreamResponse:
    response = page.render("approval_cards.html", {"cards": await pending_cards(page)})
    # live.js replaces the list only with an answer that says it is one (not a sign-in page
    # a redirect led to once the session ended)
    response.headers["X-Console-Fragment"] = "approvals"
    return response


def escalated(page: PageRequest, record: ApprovalRecord) -> list[str]:
    """Whom ``record`` was escalated to and the configuration in force still escalates it
    to: they may see and decide it here too, as on the card in chat."""
    return page.host.approvals.escalated_now(record)


def _refused(page: PageRequest, message: str, status: int) -> web.StreamResponse:
    return page.render("approval_result.html", {"message": message, "path": PATH}, status=status)


async def decide(page: PageRequest) -> web.StreamResponse:
    request, viewer = page.request, page.viewer
    approval_id = request.match_info["approval_id"]
    form = await request.post()
    record = await page.host.store.approvals.get(approval_id)
    if record is None or not (
        viewer.may_read(record.channel)
        or viewer.may_decide(record.channel, escalated(page, record))
    ):
        return _refused(page, ClickVerdict.UNKNOWN.message, 410)
    ref = parse_channel_ref(record.channel)
    if ref.kind != viewer.identity.kind:
        # a user id of another platform is nobody on this one
        return _refused(page, ClickVerdict.NOT_AUTHORISED.message, 403)
    action = field(form, "choice")
    reply: str | None = None
    grant_choice = ""
    if action == "reply":
        reply = field(form, "reply", limit=MAX_REPLY + 1)
        if not reply or len(reply) > MAX_REPLY:
            return _refused(
                page, f"Type a reply of 1 to {MAX_REPLY:,} characters to deny with it.", 400
            )
        choice = ApprovalChoice.DENY
    elif action == "grant":
        # a choice the card offered, by its key: the card flow checks it against the row
        grant_choice = field(form, "grant")
        if not grant_choice:
            return _refused(page, "Pick a grant to approve with.", 400)
        choice = ApprovalChoice.ALWAYS
    elif action in ("approve", "deny", "always"):
        choice = ApprovalChoice(action)
    else:
        return _refused(page, "Unknown action.", 400)
    verdict = await page.host.approvals.decide_from_web(
        WebAnswer(
            channel=ref,
            approval_id=record.id,
            fingerprint=field(form, "fingerprint"),
            choice=choice,
            user_id=viewer.identity.user_id,
            reply=reply,
            grant_choice=grant_choice,
        )
    )
    if verdict is ClickVerdict.ACCEPTED:
        return see_other(f"{PREFIX}{PATH}?done={action}")
    if verdict in (ClickVerdict.COUNTED, ClickVerdict.ALREADY_COUNTED):
        # one approval of several: say which, and how many more the request waits for
        counted = await page.host.store.approvals.get(record.id)
        words = counted_words(counted, viewer.identity.user_id) if counted else ""
        message = f"{words[0].upper()}{words[1:]}." if words else verdict.message
        return page.render("approval_result.html", {"message": message, "path": PATH})
    return _refused(page, verdict.message, _STATUS.get(verdict, 409))
