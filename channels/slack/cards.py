"""Approval cards in Block Kit, their full view and the reply form: what Slack is sent.

**The card** says what will run (tool and argument summary), why it needs approval, who
asked, and, while pending, that no answer means no. The summary is shown literally in code
blocks (:func:`channels.slack.markup.code_blocks`), split over as many sections as it needs
and never cut; a summary too long for one message (more than :data:`MAX_CARD_CODE_BLOCKS`
blocks) is shown in part and the card then counts as cut, like one the service cut. A card
that shows the whole request has Approve / Deny / Always (Approve / Deny where Always would
make no grant: :attr:`~bot.cards.ApprovalCard.always`); a cut card "🔎 Show full and
decide" and Deny instead, and says why. Both have "✏️ Reply instead".

**Buttons.** A button's ``value`` is the core's payload (:class:`bot.cards.ButtonCodec`,
within Slack's 2,000 characters for a value: :data:`VALUE_BUDGET`); its ``action_id``
(:data:`ACTION_IDS`, at most 255 characters) names the same verb and routes the press.
Cards drawn before the payload had a format carry the bare approval id as ``value``
(:mod:`channels.slack.card_surface` still reads them).

**The full view** (:func:`full_view`, opened by "🔎 Show full and decide") is a modal
showing the tool, the card's ``full_text`` whole as literal code blocks paged by the core's
planner (:func:`bot.cards.plan_full_view`: sections of at most 3,000 characters, nothing
dropped), why and who asked, and Approve / Always / Deny whose payloads say ``full_view``.
A long diff (:attr:`~bot.cards.ApprovalCard.diff`) is not paged: it is posted as the file
``change-ID.diff`` in the card's thread (:class:`DiffFile`; the view offers Deny only until
it is there, and for good if Slack refuses it). A modal holds at most 100 blocks: when the
full text needs more even so, the view says so, offers Deny only, and points to ``hatchway
approvals list`` / ``hatchway approvals approve ID``. After a press the view is replaced with
the outcome (:func:`outcome_view`).

**The reply form** (:func:`reply_modal`, opened by "✏️ Reply instead") has one required
multi-line field. Both modals carry in ``private_metadata`` the approval id and where the
card is (:func:`place_metadata`), so an answer from them needs nothing from memory and
survives a restart while the modal is open.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.cards import (
    APPROVERS_PREFIX,
    ASKED_IN_PREFIX,
    CUT_NOTE,
    ESCALATED_PREFIX,
    MAX_REPLY_CHARS,
    QUORUM_PREFIX,
    SHOW_FULL_LABEL,
    ApprovalCard,
    Button,
    ButtonCodec,
    CardState,
    CardVerb,
    FullViewPlan,
    GrantOption,
    answer_window,
    plan_full_view,
)
from channels.slack.markup import SECTION_LIMIT, code_blocks, code_span, escape

#: Slack's limit for a button's ``value``: the byte budget of a payload (bytes ≥ characters).
VALUE_BUDGET = 2000
#: The codec of every Slack card's buttons. An approval id too long for the budget would be
#: carried as a digest this process remembers; approval ids are far shorter.
CODEC = ButtonCodec(VALUE_BUDGET)
#: Each button's ``action_id`` by its verb and whether it sits in the full view.
ACTION_IDS: dict[tuple[CardVerb, bool], str] = {
    (CardVerb.APPROVE, False): "hatchway_approve",
    (CardVerb.DENY, False): "hatchway_deny",
    (CardVerb.ALWAYS, False): "hatchway_always",
    (CardVerb.REPLY, False): "hatchway_reply",
    (CardVerb.SHOW_FULL, False): "hatchway_show_full",
    (CardVerb.APPROVE, True): "hatchway_full_approve",
    (CardVerb.ALWAYS, True): "hatchway_full_always",
    (CardVerb.DENY, True): "hatchway_full_deny",
    # the grant choices' static_select: each option's value is its choice's payload
    (CardVerb.GRANT, False): "hatchway_grant",
    (CardVerb.GRANT, True): "hatchway_full_grant",
}
#: Every button of ours, for the listener (any version's: an unknown one is refused politely).
ACTION_PATTERN = re.compile(r"^hatchway_")
REPLY_LABEL = "✏️ Reply instead"
_NOTE_BLOCK_ID = "hatchway_note"
#: The most code blocks of argument summary a card shows; beyond that it counts as cut.
MAX_CARD_CODE_BLOCKS = 10
TOO_LONG_FOR_CARD = "… the rest of the summary is not shown here."
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")
_HEADS: dict[CardState, str] = {
    CardState.PENDING: "🔐 *Approval needed:*",
    CardState.APPROVED: "✅ *Approved:*",
    CardState.DENIED: "❌ *Denied:*",
    CardState.EXPIRED: "⌛ *Expired:*",
    CardState.EDITED: "✏️ *Denied with a reply:*",
}

Block = dict[str, object]


@dataclass(frozen=True, slots=True, kw_only=True)
class CardPlace:
    """Where a card is: its conversation, its message ``ts`` (when Slack said) and its
    thread (for answering privately in the right place)."""

    channel_id: str
    message_ts: str | None = None
    thread_ts: str | None = None


def person_mrkdwn(who: str) -> str:
    """Who asked or decided: a mention for a user id, else the text shown literally."""
    return f"<@{who}>" if _USER_ID.match(who) else code_span(who)


def mrkdwn_text(text: str) -> Block:
    """A ``mrkdwn`` text object for ``text`` (already escaped or built here)."""
    # verbatim: Slack must not turn plain words into links or mentions on its own
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def mrkdwn_section(text: str) -> Block:
    """A section block showing ``text`` (``mrkdwn``, at most 3,000 characters)."""
    return {"type": "section", "text": mrkdwn_text(text)}


def _plain(text: str) -> Block:
    return {"type": "plain_text", "text": text, "emoji": True}


def _button(label: str, button: Button, style: str = "") -> Block:
    block: Block = {
        "type": "button",
        "action_id": ACTION_IDS[button.verb, button.full_view],
        "text": _plain(label),
        "value": CODEC.pack(button),
    }
    if style:
        block["style"] = style
    return block


#: What the grant choices' select reads before a pick.
CHOICE_PLACEHOLDER = "♾️ Approve with a grant…"


def _choice_select(
    approval_id: str, choices: tuple[GrantOption, ...], *, full_view: bool
) -> list[Block]:
    """The grant choices as one ``static_select`` (none when there are none): each option's
    ``value`` is the codec's payload of its choice, the ``action_id`` routes the pick."""
    if not choices:
        return []
    options = [
        {
            "text": _plain(choice.label),
            "value": CODEC.pack(Button.grant(approval_id, choice.key, full_view=full_view)),
        }
        for choice in choices
    ]
    return [
        {
            "type": "static_select",
            "action_id": ACTION_IDS[CardVerb.GRANT, full_view],
            "placeholder": _plain(CHOICE_PLACEHOLDER),
            "options": options,
        }
    ]


# -- the card ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _Shown:
    """What a card shows: its ``mrkdwn`` sections, and whether the summary did not fit."""

    sections: tuple[str, ...]
    overflow: bool


def _pack(parts: list[str], limit: int = SECTION_LIMIT) -> tuple[str, ...]:
    """``parts`` joined by line breaks into as few texts of at most ``limit`` as they fit."""
    texts: list[str] = []
    for part in parts:
        if texts and len(texts[-1]) + 1 + len(part) <= limit:
            texts[-1] = f"{texts[-1]}\n{part}"
        else:
            texts.append(part)
    return tuple(texts)


def _asked(card: ApprovalCard) -> str:
    asked = f"*Why:* {escape(card.reason)}\n*Asked by:* {person_mrkdwn(card.requested_by)}"
    if card.asked_in:
        asked += f"\n{escape(ASKED_IN_PREFIX + card.asked_in)}"
    if card.escalated_to:
        asked += f"\n{escape(ESCALATED_PREFIX + card.escalated_to)}"
    if card.approvers and card.state is CardState.PENDING:
        asked += f"\n{escape(APPROVERS_PREFIX + card.approvers)}"
    if card.quorum:
        asked += f"\n{escape(QUORUM_PREFIX + card.quorum)}"
    return asked


def _shown(card: ApprovalCard) -> _Shown:
    """The card's text: the head, the argument summary as code blocks (split, never cut),
    why and who asked. A summary needing more than :data:`MAX_CARD_CODE_BLOCKS` blocks is
    shown in part, with a note, and the card counts as cut."""
    code = code_blocks("\n".join(card.lines))
    overflow = len(code) > MAX_CARD_CODE_BLOCKS
    if overflow:
        code = [*code[:MAX_CARD_CODE_BLOCKS], escape(TOO_LONG_FOR_CARD)]
    head = f"{_HEADS[card.state]} {code_span(card.tool)}"
    return _Shown(sections=_pack([head, *code, _asked(card)]), overflow=overflow)


def approvable_on_card(card: ApprovalCard) -> bool:
    """True when the card itself offers Approve / Always: pending, and it shows the whole
    request (not cut by the service, and its summary fit the message)."""
    return card.approvable_here and not _shown(card).overflow


def card_text(card: ApprovalCard) -> str:
    """The message's plain ``text`` (notifications and clients without blocks): the head
    line only, escaped, so nothing in it can mention anyone."""
    return escape(card.render_text().split("\n", 1)[0])


def _buttons(
    approval_id: str,
    *,
    approvable: bool,
    choices: tuple[GrantOption, ...] = (),
    always: bool = True,
) -> list[Block]:
    def button(label: str, verb: CardVerb, style: str = "") -> Block:
        return _button(label, Button(approval_id=approval_id, verb=verb), style)

    deny = button("Deny", CardVerb.DENY, "danger")
    reply = button(REPLY_LABEL, CardVerb.REPLY)
    if not approvable:
        return [button(SHOW_FULL_LABEL, CardVerb.SHOW_FULL, "primary"), deny, reply]
    approve = button("Approve", CardVerb.APPROVE, "primary")
    if not always:  # a grant would not be made here (a quorum's approval)
        return [approve, deny, reply]
    choice = _choice_select(approval_id, choices, full_view=False)
    return [approve, deny, button("Always", CardVerb.ALWAYS), *choice, reply]


def _note(card: ApprovalCard, *, approvable: bool, reactions: bool) -> str:
    note = f"No answer within {answer_window(card.timeout_s)} means no."
    if reactions:
        if approvable:
            note += " Approvers may also react with :white_check_mark: or :x:."
        else:
            note += " Approvers may also react with :x: to deny."
    return note if approvable else f"{escape(CUT_NOTE)}\n{note}"


def card_blocks(card: ApprovalCard, *, reactions: bool = False) -> list[Block]:
    """The blocks of ``card``: buttons while pending, the outcome once decided. A cut card
    offers "🔎 Show full and decide" in place of Approve / Always."""
    shown = _shown(card)
    blocks: list[Block] = [mrkdwn_section(text) for text in shown.sections]
    if card.state is CardState.PENDING:
        approvable = card.approvable_here and not shown.overflow
        note = _note(card, approvable=approvable, reactions=reactions)
        blocks.append(
            {"type": "context", "block_id": _NOTE_BLOCK_ID, "elements": [mrkdwn_text(note)]}
        )
        blocks.append(
            {
                "type": "actions",
                "block_id": f"hatchway_approval:{card.approval_id}"[:255],
                "elements": _buttons(
                    card.approval_id,
                    approvable=approvable,
                    choices=card.grant_choices,
                    always=card.always,
                ),
            }
        )
    elif card.decided_by:
        blocks.append(
            {"type": "context", "elements": [mrkdwn_text(f"By {person_mrkdwn(card.decided_by)}")]}
        )
    return blocks


# -- the modals ----------------------------------------------------------------------------------

FULL_VIEW_CALLBACK_ID = "hatchway_full_view"
FULL_VIEW_TITLE = "Full request"
_FULL_VIEW_ACTIONS = "hatchway_full_actions"
#: Slack's limit of blocks in a modal.
MAX_VIEW_BLOCKS = 100
#: Blocks besides the code blocks: head, why and who asked, note, buttons.
_FRAME_BLOCKS = 4
TOO_LONG = (
    "⚠ This request is too long to show in Slack ({chars:,} characters), so it cannot be "
    "approved here. An operator can read all of it with `hatchway approvals list` and "
    "decide with `hatchway approvals approve {approval_id}`. You can deny it here."
)
REPLY_CALLBACK_ID = "hatchway_reply"
#: The input block's ``block_id``: the key Slack expects in ``response_action: errors``.
INPUT_BLOCK_ID = "hatchway_reply"
INPUT_ACTION_ID = "text"
EMPTY_REPLY = "Write what the assistant should be told, or close this and press Deny."
TOO_LONG_REPLY = f"Keep the reply to at most {MAX_REPLY_CHARS} characters."


class _Metadata(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    approval_id: str = Field(min_length=1)
    channel_id: str = Field(min_length=1)
    message_ts: str | None = None
    thread_ts: str | None = None


def place_metadata(approval_id: str, place: CardPlace) -> str:
    """A modal's ``private_metadata``: what an answer from the modal needs to find its
    approval and card, without anything kept in memory."""
    metadata = _Metadata(
        approval_id=approval_id,
        channel_id=place.channel_id,
        message_ts=place.message_ts,
        thread_ts=place.thread_ts,
    )
    return metadata.model_dump_json()


def read_metadata(text: str) -> tuple[str, CardPlace] | None:
    """The approval id and place :func:`place_metadata` wrote, or None when ``text`` is not
    one."""
    try:
        metadata = _Metadata.model_validate_json(text)
    except ValidationError:
        return None
    place = CardPlace(
        channel_id=metadata.channel_id,
        message_ts=metadata.message_ts or None,
        thread_ts=metadata.thread_ts or None,
    )
    return metadata.approval_id, place


def _modal(callback_id: str, title: str, metadata: str, blocks: list[Block]) -> Block:
    return {
        "type": "modal",
        "callback_id": callback_id,
        "title": _plain(title),
        "close": _plain("Close"),
        "private_metadata": metadata,
        "blocks": blocks,
    }


class DiffFile(enum.Enum):
    """Where the long diff of a full view stands (:func:`full_view`): it goes as a file in
    the card's thread, and only a view whose diff is there approves."""

    #: Being posted: the view offers Deny only, and says so.
    POSTING = "posting"
    #: Posted: the view decides.
    POSTED = "posted"
    #: Slack refused it: Deny only, and the CLI for all of it.
    FAILED = "failed"


#: Where the full view's pages say a long diff is (``{name}``: the file's name).
DIFF_IN_THREAD = "in the file {name} posted in the card's thread"
DIFF_POSTING = (
    "The change is being posted as the file {name} in the card's thread; Approve is offered "
    "here once it is there."
)
DIFF_NOT_POSTED = (
    "⚠ The change could not be posted as the file {name} in the card's thread, so this "
    "request cannot be approved here. An operator can read all of it with `hatchway "
    "approvals list` and decide with `hatchway approvals approve {approval_id}`. You can "
    "deny it here."
)


def full_view_plan(card: ApprovalCard) -> FullViewPlan:
    """How the full view shows ``card``: its full text in sections of at most 3,000
    characters, a long diff as a ``.diff`` file for the card's thread (the pages say so
    where it was); no pages when even that needs more blocks than a modal holds."""
    plan = plan_full_view(
        card,
        page_chars=SECTION_LIMIT,
        max_pages=MAX_VIEW_BLOCKS - _FRAME_BLOCKS,
        split=code_blocks,
        diff_where=DIFF_IN_THREAD,
    )
    return plan if plan.pages else FullViewPlan()


def full_view(card: ApprovalCard, place: CardPlace, *, diff: DiffFile = DiffFile.POSTING) -> Block:
    """The modal for ``views.open``: every character of ``card.full_text`` and the buttons
    that decide it, or (when it needs more blocks than a modal holds) a note and Deny. With
    a long diff (:func:`full_view_plan`) the pages point to its file, and only ``diff``
    :attr:`DiffFile.POSTED` decides: before, and when it could not be posted, Deny only."""
    plan = full_view_plan(card)

    def button(label: str, verb: CardVerb, style: str = "") -> Block:
        return _button(
            label, Button(approval_id=card.approval_id, verb=verb, full_view=True), style
        )

    deny = button("Deny", CardVerb.DENY, "danger")
    window = f"No answer within {answer_window(card.timeout_s)} means no."
    if plan.pages and plan.diff_file and diff is not DiffFile.POSTED:
        body = [mrkdwn_section(piece) for piece in plan.pages]
        waiting = DIFF_POSTING if diff is DiffFile.POSTING else DIFF_NOT_POSTED
        note = f"{escape(waiting.format(name=plan.diff_name, approval_id=card.approval_id))} "
        note += window
        buttons = [deny]
    elif plan.pages:
        body = [mrkdwn_section(piece) for piece in plan.pages]
        with_file = f", with the change in the file {plan.diff_name}" if plan.diff_file else ""
        note = f"This is everything the call will run with{escape(with_file)}. {window}"
        always = [button("Always", CardVerb.ALWAYS)] if card.always else []
        buttons = [
            button("Approve", CardVerb.APPROVE, "primary"),
            *always,
            deny,
            *_choice_select(card.approval_id, card.grant_choices, full_view=True),
        ]
    else:
        chars = len(card.full_text or "\n".join(card.lines))
        body = [mrkdwn_section(escape(TOO_LONG.format(chars=chars, approval_id=card.approval_id)))]
        note = "Approve is only offered where the whole request can be shown."
        buttons = [deny]
    head = f"🔎 *Full request:* {code_span(card.tool)}"
    blocks: list[Block] = [
        mrkdwn_section(head),
        *body,
        mrkdwn_section(_asked(card)),
        {"type": "context", "elements": [mrkdwn_text(note)]},
        {"type": "actions", "block_id": _FULL_VIEW_ACTIONS, "elements": buttons},
    ]
    metadata = place_metadata(card.approval_id, place)
    return _modal(FULL_VIEW_CALLBACK_ID, FULL_VIEW_TITLE, metadata, blocks)


def outcome_view(text: str, metadata: str) -> Block:
    """The full view after a press: what happened (or why not), and no buttons; its
    ``private_metadata`` is kept."""
    blocks = [mrkdwn_section(escape(text))]
    return _modal(FULL_VIEW_CALLBACK_ID, FULL_VIEW_TITLE, metadata, blocks)


def reply_modal(approval_id: str, place: CardPlace) -> Block:
    """The "Deny with a reply" modal for ``views.open``."""
    note = "The tool will not run; the assistant is told your reply instead."
    field = {
        "type": "input",
        "block_id": INPUT_BLOCK_ID,
        "optional": False,
        "label": _plain("What should the assistant be told instead?"),
        "element": {
            "type": "plain_text_input",
            "action_id": INPUT_ACTION_ID,
            "multiline": True,
            "max_length": MAX_REPLY_CHARS,
        },
    }
    blocks: list[Block] = [{"type": "context", "elements": [mrkdwn_text(note)]}, field]
    metadata = place_metadata(approval_id, place)
    modal = _modal(REPLY_CALLBACK_ID, "Deny with a reply", metadata, blocks)
    return {**modal, "submit": _plain("Send"), "close": _plain("Cancel")}


def reply_error(text: str) -> str | None:
    """Why the (stripped) ``text`` cannot be sent (shown under the field), or None when it can.

    Whitespace-only counts as empty: Slack's ``optional: false`` refuses an empty field in
    the client but lets whitespace through, and a blank reply would tell the model nothing.
    The length check only matters for a payload not made by Slack's client, which enforces
    ``max_length`` itself.
    """
    if not text:
        return EMPTY_REPLY
    if len(text) > MAX_REPLY_CHARS:
        return TOO_LONG_REPLY
    return None
