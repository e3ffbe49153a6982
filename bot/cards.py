"""Answers on approval cards, as the core and the platforms share them.

A platform reports **facts**: someone (an :class:`Actor`) pressed a button, reacted or
replied on a card (a :class:`CardAction`). The core decides what it means
(:mod:`bot.approval.card_flow`, through :meth:`bot.channel.ChannelHost.card_action`) and
answers through the platform's :class:`CardSurface` with a :class:`CardReply`: tell the
actor something, show the full request, open the reply form, or nothing more (accepted: the
card edit shows it). A platform never decides a verdict or its wording.

Button payloads are written and read by one :class:`ButtonCodec` for every platform, within
the platform's byte budget (Telegram's 64-byte callback data is the tightest). The payload
carries its format version (:data:`FORMAT`); see the codec for what an unknown version gets.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bot.envelope import ChannelRef, SentMessage


class ApprovalChoice(enum.StrEnum):
    APPROVE = "approve"
    DENY = "deny"
    ALWAYS = "always"


def answer_window(timeout_s: float) -> str:
    """How long a card waits, as its last line says it: whole minutes under two hours
    (``5 min``, at least 1), whole hours under two days (``24 h``), else days (``3 days``);
    rounded to the nearest unit, since the exact deadline is the card's own."""
    minutes = max(1, round(timeout_s / 60))
    if minutes < 120:
        return f"{minutes} min"
    hours = round(timeout_s / 3600)
    if hours < 48:
        return f"{hours} h"
    return f"{round(timeout_s / 86400)} days"


class CardState(enum.StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"
    EDITED = "edited"  # denied with replacement text


#: The longest deny-with-a-reply text (:attr:`CardAction.reply`) a reply form
#: accepts; the model is never told more than this of a reply.
MAX_REPLY_CHARS = 2000
#: How a copy of a card outside its conversation says where it was asked (the place follows).
ASKED_IN_PREFIX = "Asked in: "
#: How a pending card names who can approve it (``approval.name_approvers``; names follow).
APPROVERS_PREFIX = "Can approve: "
#: How a card says whom it was escalated to (the names follow).
ESCALATED_PREFIX = "⏫ Escalated to: "
#: How a card that needs several approvers says how far it has come.
QUORUM_PREFIX = "🔑 "
#: The button a cut card offers in place of Approve / Always.
SHOW_FULL_LABEL = "🔎 Show full and decide"
#: What a pending cut card says about it.
CUT_NOTE = (
    "⚠ Part of this request is not shown here. Press “Show full and decide” to read all of "
    "it; it can only be approved from there."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GrantOption:
    """One grant choice a card offers (:mod:`bot.approval.grant_choices`): the ``key`` its
    button's payload carries and the ``label`` the approver reads ("for 1 h")."""

    key: str
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalCard:
    """What an approval card shows. Built by the approval service, already scrubbed and with
    every invisible character escaped (:mod:`bot.visible_text`).

    ``approval_id`` is opaque; adapters put only it into button payloads. ``lines`` is the
    argument summary (secret values masked, long values shown as head and tail).
    ``full_text`` is every argument in full. When ``cut`` is true the summary hides part of
    it, and a pending card must not offer Approve or Always: it offers
    :data:`SHOW_FULL_LABEL` instead, which opens a view showing ``full_text`` whole (a modal,
    an ephemeral message, a message or an attached file) with its own Approve / Deny /
    Always; clicks from that view carry ``full_view=True``
    (:class:`CardAction`). The service refuses an approval of a cut card without it.
    Adapters escape platform markup in everything they render from a card.
    """

    approval_id: str
    tool: str
    lines: tuple[str, ...]
    reason: str
    requested_by: str
    state: CardState = CardState.PENDING
    decided_by: str = ""
    timeout_s: float = 300.0
    full_text: str = ""
    cut: bool = False
    #: Whom the request was escalated to (``approval.escalate_to``), empty when it was not.
    escalated_to: str = ""
    #: On a copy posted outside the conversation that asked (an approver's DM): which
    #: conversation that was; empty on the conversation's own card.
    asked_in: str = ""
    #: Who can approve it, as far as ``approval.name_approvers`` allows naming them (empty:
    #: nobody is named); shown while it is pending.
    approvers: str = ""
    #: The sizes of yes offered besides Always ("for 1 h", …): shown where Always is (a
    #: card that is approvable here, a full view), as the platform draws a choice (a
    #: select, an overflow menu, a row of buttons); a pick is a :attr:`CardVerb.GRANT`.
    grant_choices: tuple[GrantOption, ...] = ()
    #: A request that needs several approvers: how far it has come and who else may
    #: approve (``🔑 1 of 2 approvals: Alex ✓ · may approve: …``); empty otherwise.
    quorum: str = ""
    #: A unified diff longer than the card shows, as ``full_text`` shows it (its lines
    #: there): a full view may send it as a ``.diff`` file (:func:`plan_full_view`).
    diff: str = ""
    #: Whether Always and the grant choices are offered (where Approve is): False on a
    #: request that needs several approvers unless the approval pressed would complete it
    #: and its quorum lets grants count (:func:`bot.approval.card.offers_grants`): there an
    #: Always would make no grant. A pending card then shows Approve / Deny only.
    always: bool = True

    @property
    def approvable_here(self) -> bool:
        """True when the card itself may carry Approve / Always (pending and not cut)."""
        return self.state is CardState.PENDING and not self.cut

    def render_full_text(self) -> str:
        """Plain-text rendering of the full view: head, every argument, why, who asked."""
        body = [
            f"🔎 Full request: {self.tool}",
            self.full_text or "\n".join(self.lines),
            f"Why: {self.reason}",
            f"Asked by: {self.requested_by}",
        ]
        return "\n".join(body)

    def render_text(self) -> str:
        """Plain-text rendering shared by adapters (they may add platform markup)."""
        head = {
            CardState.PENDING: f"🔐 Approval needed: {self.tool}",
            CardState.APPROVED: f"✅ Approved: {self.tool}",
            CardState.DENIED: f"❌ Denied: {self.tool}",
            CardState.EXPIRED: f"⌛ Expired: {self.tool}",
            CardState.EDITED: f"✏️ Denied with a reply: {self.tool}",
        }[self.state]
        body = [head, *self.lines, f"Why: {self.reason}", f"Asked by: {self.requested_by}"]
        if self.asked_in:
            body.append(f"{ASKED_IN_PREFIX}{self.asked_in}")
        if self.escalated_to:
            body.append(f"{ESCALATED_PREFIX}{self.escalated_to}")
        if self.approvers and self.state is CardState.PENDING:
            body.append(f"{APPROVERS_PREFIX}{self.approvers}")
        if self.quorum:
            body.append(f"{QUORUM_PREFIX}{self.quorum}")
        if self.state is CardState.PENDING:
            if self.cut:
                body.append(CUT_NOTE)
            body.append(f"No answer within {answer_window(self.timeout_s)} means no.")
        elif self.decided_by:
            body.append(f"By: {self.decided_by}")
        return "\n".join(body)


class ClickVerdict(enum.StrEnum):
    """What the adapter should tell the clicker (privately, where the platform allows)."""

    ACCEPTED = "accepted"
    NOT_AUTHORISED = "not_authorised"
    SELF_APPROVAL = "self_approval"
    ALREADY_DECIDED = "already_decided"
    UNKNOWN = "unknown"  # expired, from before a restart, or never existed
    NEEDS_FULL_VIEW = "needs_full_view"  # approving a cut card from the card itself
    #: a grant choice the card did not offer, or the policy no longer allows (tampered,
    #: unknown, malformed): nothing decided
    CHOICE_NOT_OFFERED = "choice_not_offered"
    #: One approval of several counted; the request waits for more (the reply's note says
    #: how many).
    COUNTED = "counted"
    #: This approver's approval was counted already: a second one counts nothing.
    ALREADY_COUNTED = "already_counted"
    #: Always or a grant choice on a request that needs several approvers where it would
    #: make no grant (a card drawn before they were withdrawn there): nothing decided
    NO_GRANT_HERE = "no_grant_here"

    @property
    def message(self) -> str:
        return {
            ClickVerdict.ACCEPTED: "Recorded.",
            ClickVerdict.NOT_AUTHORISED: "You are not authorised to approve this.",
            ClickVerdict.SELF_APPROVAL: "You cannot approve your own request.",
            ClickVerdict.ALREADY_DECIDED: "This request was already decided.",
            ClickVerdict.UNKNOWN: "This request has expired.",
            ClickVerdict.NEEDS_FULL_VIEW: (
                "Part of this request is not shown on the card. Press “Show full and "
                "decide” and approve from the full text."
            ),
            ClickVerdict.CHOICE_NOT_OFFERED: (
                "That grant choice was not offered on this card, or is no longer allowed "
                "here. Nothing was decided: pick one the card shows, or use Approve."
            ),
            ClickVerdict.COUNTED: (
                "Your approval is recorded. This request needs another approver too."
            ),
            ClickVerdict.ALREADY_COUNTED: (
                "Your approval was already counted; this request needs another approver."
            ),
            ClickVerdict.NO_GRANT_HERE: (
                "Always and grant choices make no grant on this request: it needs several "
                "approvers, or its tool always asks. Nothing was decided: press Approve to "
                "give your approval."
            ),
        }[self]


class CardVerb(enum.StrEnum):
    """What a button, reaction or reply on a card asks for."""

    APPROVE = "approve"
    DENY = "deny"
    ALWAYS = "always"
    #: "✏️ Reply instead": with :attr:`CardAction.reply`, a deny with that reply; without,
    #: a request for the reply form.
    REPLY = "reply"
    #: "🔎 Show full and decide": a request for the full view; decides nothing.
    SHOW_FULL = "show_full"
    #: A grant choice ("for 1 h"): approves with a grant of that size
    #: (:attr:`CardAction.grant_choice` names it).
    GRANT = "grant"

    @property
    def choice(self) -> ApprovalChoice | None:
        """The decision this verb makes; None for the verbs that only open something."""
        return _CHOICES.get(self)


_CHOICES = {
    CardVerb.APPROVE: ApprovalChoice.APPROVE,
    CardVerb.DENY: ApprovalChoice.DENY,
    CardVerb.ALWAYS: ApprovalChoice.ALWAYS,
    CardVerb.REPLY: ApprovalChoice.DENY,
    CardVerb.GRANT: ApprovalChoice.ALWAYS,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Actor:
    """Who answered: the platform's user id and the roles the platform reports for them
    (Discord roles, a Telegram member status); empty when roles are not configured. ``name``
    is the name the platform shows for them (empty when it will not say): shown on the
    decided card beside the id, never matched on."""

    user_id: str
    roles: tuple[str, ...] = ()
    name: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CardAction:
    """One answer on an approval card, as the platform saw it.

    ``card`` is the card message the answer came from, when the platform names it: when the
    request is no longer open, the core edits that message to the request's outcome (it may
    be a copy never stored, or a stale client's). ``full_view`` says the answer came from a
    view that showed the whole request (a full view, or the web console). ``reply`` is the
    text of a reply instead (:attr:`CardVerb.REPLY`); None asks for the reply form.
    """

    channel: ChannelRef
    approval_id: str
    verb: CardVerb
    actor: Actor
    full_view: bool = False
    reply: str | None = None
    card: SentMessage | None = None
    #: With :attr:`CardVerb.GRANT`: the key of the grant choice picked, as the payload
    #: carried it (checked against what the card offered; never trusted).
    grant_choice: str = ""


class CardReplyKind(enum.StrEnum):
    ACCEPTED = "accepted"  # decided; the card edit shows it
    TELL = "tell"  # say :attr:`CardReply.text` to the actor, privately where possible
    SHOW_FULL = "show_full"  # show :attr:`CardReply.card` whole, with its own buttons
    OPEN_REPLY_FORM = "open_reply_form"  # offer the actor a way to reply instead


#: What a view an answer was made in says once the answer is recorded, by its verb (Slack's
#: full view is replaced with it).
OUTCOME_NOTES = {
    CardVerb.APPROVE: "✅ You approved this request.",
    CardVerb.ALWAYS: "♾️ You approved this request, and always for this tool.",
    CardVerb.DENY: "❌ You denied this request. The tool does not run.",
    CardVerb.GRANT: "♾️ You approved this request, with a grant of the size you picked.",
}

#: What a button whose payload this process cannot read is answered with (drawn by another
#: version of hatchway, or damaged).
UNREADABLE_BUTTON = (
    "This button was drawn by another version of hatchway and cannot be read here. "
    "Answer on a newer copy of the card, or ask again."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CardReply:
    """What the core answers a :class:`CardAction` with."""

    kind: CardReplyKind
    verdict: ClickVerdict = ClickVerdict.ACCEPTED
    #: The approval answered (for the reply form).
    approval_id: str = ""
    #: The request whole, for :attr:`CardReplyKind.SHOW_FULL`.
    card: ApprovalCard | None = None
    #: What to tell, for :attr:`CardReplyKind.TELL` when it is not the verdict's message.
    note: str = ""

    @property
    def text(self) -> str:
        return self.note or self.verdict.message

    @classmethod
    def of(cls, verdict: ClickVerdict) -> CardReply:
        if verdict is ClickVerdict.ACCEPTED:
            return cls(kind=CardReplyKind.ACCEPTED)
        return cls(kind=CardReplyKind.TELL, verdict=verdict)


class CardSurface(Protocol):
    """How one platform answers one card action. Built by the adapter for the action it
    reports (it knows the press, the interaction or the message to answer); the core calls
    at most one of the ``async`` methods, after deciding. It must not decide anything."""

    def shows_whole(self, card: ApprovalCard) -> bool:
        """Whether this platform draws ``card`` whole on its card (not shortened to fit a
        message). Approve and Always count only from a view that showed everything."""
        ...

    async def tell(self, reply: CardReply) -> None:
        """Tell the actor ``reply.text`` (an alert, an ephemeral message, a reply); an
        accepted answer too, where the platform acknowledges every press."""
        ...

    async def show_full(self, card: ApprovalCard) -> None:
        """Show ``card``'s request whole (``full_text``) with Approve / Deny / Always whose
        answers carry ``full_view``."""
        ...

    async def open_reply_form(self, approval_id: str) -> None:
        """Offer the actor a way to deny ``approval_id`` with a reply (a modal, an
        instruction)."""
        ...


class CardAnswers(Protocol):
    """Where card actions go: part of :class:`bot.channel.ChannelHost`."""

    async def card_action(self, action: CardAction, surface: CardSurface) -> CardReply:
        """Report one answer on an approval card; the core decides what it means and carries
        the answer out on ``surface`` before this returns (when the request is no longer
        open, the card the action names has been edited to its outcome too). The reply is
        returned for the adapter's log line."""
        ...


async def answer_on(surface: CardSurface, reply: CardReply) -> None:
    """Carry ``reply`` out on ``surface``."""
    if reply.kind is CardReplyKind.SHOW_FULL and reply.card is not None:
        await surface.show_full(reply.card)
    elif reply.kind is CardReplyKind.OPEN_REPLY_FORM:
        await surface.open_reply_form(reply.approval_id)
    else:
        await surface.tell(reply)


# -- the button codec ------------------------------------------------------------------------

#: The payload format written now. Format 1 is ``ap:<approval id>:<code>[:<field>…][:@<card>]``.
FORMAT = 1
#: The tag of each format a payload can start with; a reader keeps every format a pending
#: card can still carry (docs/approvals.md, "Rolling upgrades").
_TAGS = {"ap": 1}
#: Tags of later formats look like ``v<N>``: recognised as ours, read as unknown.
_LATER = "v"
#: Telegram's callback data limit, the tightest of the platforms.
TELEGRAM_BUDGET = 64

_CODES = {
    (CardVerb.APPROVE, False): "a",
    (CardVerb.DENY, False): "d",
    (CardVerb.ALWAYS, False): "w",
    (CardVerb.APPROVE, True): "fa",
    (CardVerb.DENY, True): "fd",
    (CardVerb.ALWAYS, True): "fw",
    (CardVerb.SHOW_FULL, False): "s",
    (CardVerb.REPLY, False): "r",
    # a grant choice, its key the one field (a reader without these codes answers the
    # press with UNREADABLE_BUTTON and decides nothing)
    (CardVerb.GRANT, False): "g",
    (CardVerb.GRANT, True): "fg",
}
_VERBS = {code: key for key, code in _CODES.items()}
#: Long ids carried as a digest known to this process only (a bounded table).
_LONG_IDS_KEPT = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class Button:
    """What a button's payload says: which approval, which verb, whether it sat on a full
    view, and the optional ``fields`` later verbs need (a grant choice, a quorum vote), each
    a short token without ``:`` not starting with ``@``. ``card`` names the card message a
    button that is not on the card belongs to (Discord's full view is an ephemeral message
    the core cannot edit): a platform message id without ``:``, written last as ``@<card>``."""

    approval_id: str
    verb: CardVerb
    full_view: bool = False
    fields: tuple[str, ...] = ()
    card: str = ""

    @property
    def grant_choice(self) -> str:
        """The grant choice key of a :attr:`CardVerb.GRANT` button ("" otherwise, or when
        the payload carried none: the core refuses that as not offered)."""
        return self.fields[0] if self.verb is CardVerb.GRANT and self.fields else ""

    @classmethod
    def grant(
        cls, approval_id: str, key: str, *, full_view: bool = False, card: str = ""
    ) -> Button:
        """The button of grant choice ``key``."""
        return cls(
            approval_id=approval_id,
            verb=CardVerb.GRANT,
            full_view=full_view,
            fields=(key,),
            card=card,
        )


class Unreadable(enum.Enum):
    """A payload that is ours but cannot be read here (another format version, damaged):
    answered with :data:`UNREADABLE_BUTTON`, never a crash."""

    PAYLOAD = "payload"


class ButtonCodec:
    """Packs :class:`Button` values into payloads of at most ``budget`` bytes and back.

    An approval id that fits is carried verbatim, so a button keeps working after a restart
    and on another replica. With a 32-hex id, format 1 takes 38 bytes of Telegram's 64 for a
    decision from a full view, leaving 26 for ``fields``. A longer id (or one holding ``:``)
    is carried as a digest this process remembers; a press after a restart then reads as an
    unknown approval.
    """

    def __init__(self, budget: int = TELEGRAM_BUDGET) -> None:
        self._budget = budget
        self._long_ids: dict[str, str] = {}

    def pack(self, button: Button) -> str:
        if ":" in button.card:
            raise ValueError(f"a card id cannot hold ':': {button.card!r}")
        card = (f"@{button.card}",) if button.card else ()
        code = ":".join((_CODES[button.verb, button.full_view], *button.fields, *card))
        data = f"ap:{button.approval_id}:{code}"
        if len(data.encode()) <= self._budget and ":" not in button.approval_id:
            return data
        digest = "#" + hashlib.sha256(button.approval_id.encode()).hexdigest()[:24]
        self._long_ids[digest] = button.approval_id
        if len(self._long_ids) > _LONG_IDS_KEPT:  # the oldest cards are long decided
            self._long_ids.pop(next(iter(self._long_ids)))
        data = f"ap:{digest}:{code}"
        if len(data.encode()) > self._budget:
            raise ValueError(f"button fields do not fit {self._budget} bytes: {button.fields}")
        return data

    def unpack(self, data: str | None) -> Button | Unreadable | None:
        """The button ``data`` describes; :class:`Unreadable` for a payload of ours this
        process cannot read; None for data that is not an approval button at all."""
        if not data:
            return None
        tag, _, rest = data.partition(":")
        if tag not in _TAGS:
            return Unreadable.PAYLOAD if _later(tag) else None
        approval_id, _, code = rest.partition(":")
        verb_code, *fields = code.split(":")
        card = fields.pop()[1:] if fields and fields[-1].startswith("@") else ""
        if not approval_id or verb_code not in _VERBS:
            return Unreadable.PAYLOAD
        if approval_id.startswith("#"):
            approval_id = self._long_ids.get(approval_id, approval_id)
        verb, full_view = _VERBS[verb_code]
        return Button(
            approval_id=approval_id,
            verb=verb,
            full_view=full_view,
            fields=tuple(fields),
            card=card,
        )


def _later(tag: str) -> bool:
    return tag.startswith(_LATER) and tag[len(_LATER) :].isdigit()


# -- the full view ---------------------------------------------------------------------------

#: The file a full view too long for a platform's messages is sent as.
DOCUMENT_NAME = "full-request.txt"


@dataclass(frozen=True, slots=True, kw_only=True)
class FullViewPlan:
    """How a full view is shown: ``pages``, the request's full text in pieces of at most a
    page each (the platform frames each page), or, when it would take more pages than the
    surface allows, ``document``: the whole full view as one UTF-8 text file. With pages, a
    long diff may go as ``diff_file`` named ``diff_name`` (the pages then say so where the
    diff's lines would be); the view shows all of the request only with that file."""

    pages: tuple[str, ...] = ()
    document: bytes = b""
    diff_file: bytes = b""
    diff_name: str = ""


def diff_file_name(approval_id: str) -> str:
    """The name a full view's ``.diff`` file is sent under."""
    return f"change-{approval_id}.diff"


#: Where a full view's pages say the long diff is (``{name}``: the file's name).
DIFF_ATTACHED = "in the attached file {name}"


def _without_diff(card: ApprovalCard, body: str, name: str, where: str) -> str | None:
    """``body`` with the card's long diff replaced by a line naming the file that carries it
    (``where``, as :data:`DIFF_ATTACHED`), or None when it has none (or the text does not
    hold it)."""
    if not card.diff:
        return None
    at = body.rfind(card.diff)
    if at < 0:
        return None
    lines = card.diff.count("\n") + 1
    place = where.format(name=name)
    note = f"[the change: {lines:,} diff lines, every one of them {place}]"
    return body[:at] + note + body[at + len(card.diff) :]


Splitter = Callable[[str, int], list[str]]


def plan_full_view(
    card: ApprovalCard,
    *,
    page_chars: int,
    max_pages: int,
    split: Splitter,
    diff_where: str = DIFF_ATTACHED,
) -> FullViewPlan:
    """Page ``card``'s full text for a surface: ``split(text, page_chars)`` cuts it (the
    platform's measure and escaping; the pieces together give every character back); more
    than ``max_pages`` pieces, or no room at all, means a file instead (a surface that
    cannot send that one says the request is too long). A card with a long ``diff`` gets it
    as a ``.diff`` file beside pages of the rest (when the rest fits them), the pages saying
    where it is (``diff_where``); otherwise the pages hold the diff."""
    body = card.full_text or "\n".join(card.lines)
    name = diff_file_name(card.approval_id)
    shorter = _without_diff(card, body, name, diff_where)
    if shorter is not None and page_chars > 0:
        pieces = split(shorter, page_chars)
        if pieces and len(pieces) <= max_pages:
            diff = (card.diff + "\n").encode("utf-8", "backslashreplace")
            return FullViewPlan(pages=tuple(pieces), diff_file=diff, diff_name=name)
    pieces = split(body, page_chars) if page_chars > 0 else []
    if pieces and len(pieces) <= max_pages:
        return FullViewPlan(pages=tuple(pieces))
    return FullViewPlan(document=card.render_full_text().encode("utf-8", "backslashreplace"))
