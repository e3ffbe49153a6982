"""Approval cards behave the same on every platform: one case, three platforms, one test id.

Each case runs through the platform's real client library against its loopback fake, with
the real approval service on a SQLite file behind the adapter (:mod:`.driver`). What is
asserted is what a person sees and what the approval row says: who may decide, which view
may approve, what the reply form does, how a closed request answers. How each platform
draws a card, and how it parses its payloads, stay in its own tests.
"""

from __future__ import annotations

import pytest

from bot.cards import UNREADABLE_BUTTON, CardVerb
from bot.channel import ClickVerdict
from bot.store.approvals import ApprovalStatus
from bot.store.audit import Decision
from tests.channels.contract.driver import LONG_COMMAND, Asked, CardDriver

SHORT = {"command": "ls /tmp"}
CUT = {"command": LONG_COMMAND}
#: Within the core's limits (12 lines under 200 characters: not cut), five times longer once
#: escaped: more than a Telegram or Discord message holds.
TOO_LONG_ONCE_ESCAPED = {f"k{i:02d}": "<&>" * 65 for i in range(12)}
#: What a person is never told when their answer counted.
REFUSALS = {v.message for v in ClickVerdict if v is not ClickVerdict.ACCEPTED}
#: A card that shows everything offers the default grant choices too (as a select menu, an
#: overflow or a second row of buttons).
WHOLE_CARD = {CardVerb.APPROVE, CardVerb.DENY, CardVerb.ALWAYS, CardVerb.GRANT, CardVerb.REPLY}
DEFAULT_CHOICES = ("for 1 h", "for this conversation", "for this exact command")
CUT_CARD = {CardVerb.SHOW_FULL, CardVerb.DENY, CardVerb.REPLY}


async def status(cards: CardDriver, card: Asked) -> ApprovalStatus:
    row = await cards.store.approvals.get(card.approval_id)
    assert row is not None
    return row.status


async def still_pending(cards: CardDriver, card: Asked, before: str) -> None:
    """Nothing was decided: the row is pending and the card shows what it showed."""
    assert await status(cards, card) is ApprovalStatus.PENDING
    assert card.task is None or not card.task.done()
    assert cards.shown(card).text == before


def decided_card(cards: CardDriver, card: Asked, head: str) -> None:
    shown = cards.shown(card)
    assert head in shown.text and shown.buttons == set()


# -- who may decide ----------------------------------------------------------------------------


@pytest.mark.parametrize("verb", [CardVerb.APPROVE, CardVerb.DENY])
async def test_a_tap_by_an_approver_decides(cards: CardDriver, verb: CardVerb) -> None:
    card = await cards.ask(SHORT)
    assert cards.shown(card).buttons == WHOLE_CARD
    answer = await cards.press(card, verb, cards.approver)
    decision = await card.decision()
    expected = Decision.APPROVED if verb is CardVerb.APPROVE else Decision.DENIED
    assert (decision.verdict, decision.decided_by) == (expected, cards.approver)
    assert answer.told == ()  # the card's edit shows it
    decided_card(cards, card, "Approved" if verb is CardVerb.APPROVE else "Denied")
    audit = await cards.store.audit.since()
    assert [(a.decision, a.decided_by) for a in audit] == [(expected.value, cards.approver)]


async def test_a_decided_card_names_the_approver_by_name_and_id(cards: CardDriver) -> None:
    card = await cards.ask(SHORT)
    await cards.press(card, CardVerb.APPROVE, cards.approver)
    await card.decision()
    decided_card(cards, card, "Approved")
    assert f"{cards.approver_name} ({cards.approver})" in cards.shown(card).text
    row = await cards.store.approvals.get(card.approval_id)
    assert row is not None and row.decided_by_name == cards.approver_name


@pytest.mark.parametrize(
    ("who", "verdict"),
    [("requester", ClickVerdict.SELF_APPROVAL), ("stranger", ClickVerdict.NOT_AUTHORISED)],
)
async def test_a_tap_by_someone_who_may_not_decide_is_refused_and_audited(
    cards: CardDriver, who: str, verdict: ClickVerdict
) -> None:
    user = getattr(cards, who)
    card = await cards.ask(SHORT)
    before = cards.shown(card).text
    answer = await cards.press(card, CardVerb.APPROVE, user)
    assert answer.told == (verdict.message,)
    await still_pending(cards, card, before)
    audit = await cards.store.audit.since()
    assert [(a.decision, a.decided_by, a.reason) for a in audit] == [
        ("click_refused:approve", user, verdict.value)
    ]
    await cards.press(card, CardVerb.DENY, cards.approver)
    assert (await card.decision()).verdict is Decision.DENIED


# -- a cut card and its full view --------------------------------------------------------------


async def test_a_cut_card_offers_show_full_never_approve(cards: CardDriver) -> None:
    card = await cards.ask(CUT)
    assert card.record.cut
    assert cards.shown(card).buttons == CUT_CARD


@pytest.mark.parametrize("verb", [CardVerb.APPROVE, CardVerb.ALWAYS])
async def test_approving_a_cut_card_from_the_card_is_refused(
    cards: CardDriver, verb: CardVerb
) -> None:
    """A stale button (a card drawn when it still offered one) does not approve what the
    card did not show."""
    card = await cards.ask(CUT)
    before = cards.shown(card).text
    answer = await cards.press(card, verb, cards.approver)
    assert answer.told == (ClickVerdict.NEEDS_FULL_VIEW.message,)
    await still_pending(cards, card, before)


async def test_a_cut_card_may_be_denied_from_the_card(cards: CardDriver) -> None:
    card = await cards.ask(CUT)
    await cards.press(card, CardVerb.DENY, cards.approver)
    assert (await card.decision()).verdict is Decision.DENIED


@pytest.mark.parametrize(
    ("verb", "expected"),
    [(CardVerb.APPROVE, Decision.APPROVED), (CardVerb.ALWAYS, Decision.ALWAYS)],
)
async def test_show_full_shows_everything_and_approves_from_there(
    cards: CardDriver, verb: CardVerb, expected: Decision
) -> None:
    card = await cards.ask(CUT)
    answer = await cards.press(card, CardVerb.SHOW_FULL, cards.approver)
    assert answer.full_view is not None and not REFUSALS & set(answer.told)
    assert LONG_COMMAND in answer.full_view.text.replace("\n", "")
    assert await status(cards, card) is ApprovalStatus.PENDING  # showing decides nothing
    pressed = await cards.press_in_full_view(answer.full_view, verb, cards.approver)
    decision = await card.decision()
    assert (decision.verdict, decision.decided_by) == (expected, cards.approver)
    assert not REFUSALS & set(pressed.told)
    decided_card(cards, card, "Approved")


async def test_a_card_the_platform_cannot_show_whole_approves_only_from_the_full_view(
    cards: CardDriver,
) -> None:
    """The core did not cut the request; a platform that must shorten its card to fit a
    message treats it as cut. One whose message holds it draws it whole, Approve included."""
    card = await cards.ask(TOO_LONG_ONCE_ESCAPED)
    assert not card.record.cut
    if cards.fits_any_uncut_card:
        assert cards.shown(card).buttons == WHOLE_CARD
        await cards.press(card, CardVerb.APPROVE, cards.approver)
        assert (await card.decision()).verdict is Decision.APPROVED
        return
    assert cards.shown(card).buttons == CUT_CARD
    before = cards.shown(card).text
    answer = await cards.press(card, CardVerb.APPROVE, cards.approver)
    assert answer.told == (ClickVerdict.NEEDS_FULL_VIEW.message,)
    await still_pending(cards, card, before)
    shown = await cards.press(card, CardVerb.SHOW_FULL, cards.approver)
    assert shown.full_view is not None
    assert shown.full_view.text.replace("\n", "") == card.record.full_text.replace("\n", "")
    await cards.press_in_full_view(shown.full_view, CardVerb.APPROVE, cards.approver)
    assert (await card.decision()).verdict is Decision.APPROVED


async def test_show_full_by_a_stranger_is_refused_and_shows_nothing(cards: CardDriver) -> None:
    card = await cards.ask(CUT)
    before = cards.shown(card).text
    answer = await cards.press(card, CardVerb.SHOW_FULL, cards.stranger)
    assert answer.told == (ClickVerdict.NOT_AUTHORISED.message,)
    assert answer.full_view is None
    await still_pending(cards, card, before)
    assert await cards.store.audit.since() == []  # asking to see decides nothing


async def test_a_stranger_in_the_full_view_is_refused(cards: CardDriver) -> None:
    card = await cards.ask(CUT)
    answer = await cards.press(card, CardVerb.SHOW_FULL, cards.approver)
    assert answer.full_view is not None
    pressed = await cards.press_in_full_view(answer.full_view, CardVerb.APPROVE, cards.stranger)
    assert pressed.told == (ClickVerdict.NOT_AUTHORISED.message,)
    assert await status(cards, card) is ApprovalStatus.PENDING


# -- reply instead -----------------------------------------------------------------------------


async def test_reply_instead_denies_with_the_text(cards: CardDriver) -> None:
    card = await cards.ask(SHORT)
    opened = await cards.press(card, CardVerb.REPLY, cards.approver)
    assert opened.form and opened.told == ()
    assert await status(cards, card) is ApprovalStatus.PENDING  # opening decides nothing
    answer = await cards.submit_reply(card, cards.approver, "use the staging host")
    decision = await card.decision()
    assert (decision.verdict, decision.replacement_text) == (
        Decision.EDITED,
        "use the staging host",
    )
    assert not REFUSALS & set(answer.told)
    decided_card(cards, card, "Denied with a reply")


async def test_a_blank_reply_decides_nothing(cards: CardDriver) -> None:
    """The core takes a blank reply as a plain deny; every platform refuses it earlier, in
    the form, so that an empty submission (or a sticker) never denies a call by accident."""
    card = await cards.ask(SHORT)
    before = cards.shown(card).text
    assert (await cards.press(card, CardVerb.REPLY, cards.approver)).form
    answer = await cards.submit_reply(card, cards.approver, "  \n ")
    assert len(answer.told) == 1 and not REFUSALS & set(answer.told)
    await still_pending(cards, card, before)


async def test_reply_instead_by_a_stranger_is_refused(cards: CardDriver) -> None:
    card = await cards.ask(SHORT)
    before = cards.shown(card).text
    opened = await cards.press(card, CardVerb.REPLY, cards.stranger)
    assert (opened.form, opened.told) == (False, (ClickVerdict.NOT_AUTHORISED.message,))
    await still_pending(cards, card, before)


async def test_a_reply_sent_once_the_request_was_decided_says_so(cards: CardDriver) -> None:
    """The form opened while the request was open; it was decided before the reply came."""
    card = await cards.ask(SHORT)
    assert (await cards.press(card, CardVerb.REPLY, cards.approver)).form
    await cards.press(card, CardVerb.APPROVE, cards.approver)
    assert (await card.decision()).verdict is Decision.APPROVED
    answer = await cards.submit_reply(card, cards.approver, "use the staging host")
    assert answer.told == (ClickVerdict.ALREADY_DECIDED.message,)
    assert await status(cards, card) is ApprovalStatus.APPROVED
    decided_card(cards, card, "Approved")


# -- reactions ---------------------------------------------------------------------------------


async def test_a_reaction_by_an_approver_decides(cards: CardDriver) -> None:
    card = await cards.ask(SHORT)
    answer = await cards.react(card, CardVerb.APPROVE, cards.approver)
    decision = await card.decision()
    assert (decision.verdict, decision.decided_by) == (Decision.APPROVED, cards.approver)
    assert answer.told == ()
    decided_card(cards, card, "Approved")


async def test_an_approve_reaction_on_a_cut_card_counts_for_nothing(cards: CardDriver) -> None:
    card = await cards.ask(CUT)
    before = cards.shown(card).text
    answer = await cards.react(card, CardVerb.APPROVE, cards.approver)
    expected = (ClickVerdict.NEEDS_FULL_VIEW.message,) if cards.tells_reactions else ()
    assert answer.told == expected
    await still_pending(cards, card, before)


# -- a request no longer open ------------------------------------------------------------------


@pytest.mark.parametrize("verb", [CardVerb.APPROVE, CardVerb.SHOW_FULL, CardVerb.REPLY])
async def test_a_tap_on_an_expired_card_says_it_expired(cards: CardDriver, verb: CardVerb) -> None:
    card = await cards.ask(SHORT if verb is not CardVerb.SHOW_FULL else CUT)
    cards.clock.pass_deadline()
    answer = await cards.press(card, verb, cards.approver)
    assert answer.told == (ClickVerdict.UNKNOWN.message,)
    assert answer.full_view is None and not answer.form
    assert (await card.decision()).verdict is Decision.EXPIRED
    decided_card(cards, card, "Expired")


@pytest.mark.parametrize(
    "verb", [CardVerb.APPROVE, CardVerb.DENY, CardVerb.REPLY, CardVerb.SHOW_FULL]
)
async def test_a_tap_on_a_decided_card_says_so(cards: CardDriver, verb: CardVerb) -> None:
    card = await cards.ask(SHORT if verb is not CardVerb.SHOW_FULL else CUT)
    await cards.press(card, CardVerb.DENY, cards.approver)
    assert (await card.decision()).verdict is Decision.DENIED
    answer = await cards.press(card, verb, cards.approver)  # a client showing it still open
    assert answer.told == (ClickVerdict.ALREADY_DECIDED.message,)
    assert answer.full_view is None and not answer.form
    assert await status(cards, card) is ApprovalStatus.DENIED
    decided_card(cards, card, "Denied")


async def test_a_press_in_a_full_view_once_the_request_was_decided_says_so(
    cards: CardDriver,
) -> None:
    card = await cards.ask(CUT)
    shown = await cards.press(card, CardVerb.SHOW_FULL, cards.approver)
    assert shown.full_view is not None
    await cards.press(card, CardVerb.DENY, cards.approver)
    assert (await card.decision()).verdict is Decision.DENIED
    answer = await cards.press_in_full_view(shown.full_view, CardVerb.APPROVE, cards.approver)
    assert answer.told == (ClickVerdict.ALREADY_DECIDED.message,)
    assert await status(cards, card) is ApprovalStatus.DENIED


async def test_a_late_tap_on_a_copy_shows_the_decision_there(cards: CardDriver) -> None:
    """A copy of the card whose place the service never stored (so the decision's edit
    missed it): a tap on it turns it into the decision."""
    card = await cards.ask(SHORT)
    copy = await cards.copy_of(card)
    await cards.press(card, CardVerb.APPROVE, cards.approver)
    assert (await card.decision()).verdict is Decision.APPROVED
    assert cards.shown(copy).buttons == WHOLE_CARD  # the decision's edit missed it
    answer = await cards.press(copy, CardVerb.DENY, cards.approver)
    assert answer.told == (ClickVerdict.ALREADY_DECIDED.message,)
    assert cards.shown(copy) == cards.shown(card)


# -- a restart ---------------------------------------------------------------------------------


async def test_a_card_left_by_a_crash_shows_it_expired_when_tapped(cards: CardDriver) -> None:
    """The process died right after posting the card: the next one expires the request but
    cannot edit the card it never heard of. A tap on the card can."""
    card = await cards.left_pending(SHORT)
    await cards.restart()
    assert await cards.service.expire_pending() == 1
    # a row the dead process stored by hand, not through an ask: it offers no grant choice
    assert cards.shown(card).buttons == WHOLE_CARD - {CardVerb.GRANT}
    answer = await cards.press(card, CardVerb.APPROVE, cards.approver)
    assert answer.told == (ClickVerdict.UNKNOWN.message,)
    assert await status(cards, card) is ApprovalStatus.EXPIRED
    decided_card(cards, card, "Expired")


async def test_a_card_from_before_a_restart_still_opens_its_full_view(cards: CardDriver) -> None:
    """The full view is built from the row, not from the memory of the process that drew
    the card; approving there decides."""
    card = await cards.left_pending(CUT)
    await cards.restart()
    answer = await cards.press(card, CardVerb.SHOW_FULL, cards.approver)
    assert answer.full_view is not None
    assert LONG_COMMAND in answer.full_view.text.replace("\n", "")
    await cards.press_in_full_view(answer.full_view, CardVerb.APPROVE, cards.approver)
    row = await cards.store.approvals.get(card.approval_id)
    assert row is not None and (row.status, row.decided_by) == (
        ApprovalStatus.APPROVED,
        cards.approver,
    )


async def test_a_reply_form_opened_before_a_restart_still_counts(cards: CardDriver) -> None:
    card = await cards.left_pending(SHORT)
    assert (await cards.press(card, CardVerb.REPLY, cards.approver)).form
    await cards.restart()
    await cards.submit_reply(card, cards.approver, "later, not now")
    row = await cards.store.approvals.get(card.approval_id)
    assert row is not None and (row.status, row.reply) == (ApprovalStatus.EDITED, "later, not now")


async def test_always_grants_the_tool_in_the_conversation(cards: CardDriver) -> None:
    card = await cards.ask(SHORT)
    await cards.press(card, CardVerb.ALWAYS, cards.approver)
    assert (await card.decision()).verdict is Decision.ALWAYS
    grants = await cards.store.grants.list(now=0)
    assert [(g.tool, g.scope, g.granted_by) for g in grants] == [
        ("shell", "conversation", cards.approver)
    ]
    assert grants[0].scope_key.startswith(card.record.channel)


# -- payloads this process cannot read ---------------------------------------------------------


async def test_a_button_of_a_later_format_is_answered_politely(cards: CardDriver) -> None:
    card = await cards.ask(SHORT)
    before = cards.shown(card).text
    answer = await cards.press_unreadable(card, cards.approver)
    assert answer.told == (UNREADABLE_BUTTON,)
    await still_pending(cards, card, before)


# -- grants chosen at click time ---------------------------------------------------------------


async def test_a_pick_of_for_1_h_approves_with_an_hour_long_grant(cards: CardDriver) -> None:
    card = await cards.ask(SHORT)
    assert cards.shown(card).choices == DEFAULT_CHOICES
    answer = await cards.pick(card, "for 1 h", cards.approver)
    decision = await card.decision()
    assert (decision.verdict, decision.decided_by) == (Decision.ALWAYS, cards.approver)
    assert not set(answer.told) & REFUSALS
    (grant,) = await cards.store.grants.list(now=cards.clock())
    assert (grant.tool, grant.size, grant.granted_by) == ("shell", "for 1 h", cards.approver)
    assert grant.expires_at is not None and grant.expires_at - grant.created_at == 3600
    assert cards.shown(card).buttons == set()


@pytest.mark.parametrize("forged", ["zz", "chan", ""])
async def test_a_forged_grant_choice_is_refused_privately(cards: CardDriver, forged: str) -> None:
    card = await cards.ask(SHORT)
    before = cards.shown(card).text
    answer = await cards.pick(card, "for 1 h", cards.approver, forged_key=forged or "x" * 8)
    assert ClickVerdict.CHOICE_NOT_OFFERED.message in answer.told
    await still_pending(cards, card, before)
    assert await cards.store.grants.list(now=cards.clock(), include_inactive=True) == []


async def test_a_stranger_picking_a_grant_choice_is_refused(cards: CardDriver) -> None:
    card = await cards.ask(SHORT)
    before = cards.shown(card).text
    answer = await cards.pick(card, "for this conversation", cards.stranger)
    assert ClickVerdict.NOT_AUTHORISED.message in answer.told
    await still_pending(cards, card, before)


async def test_a_cut_card_offers_no_grant_choice_on_the_card(cards: CardDriver) -> None:
    card = await cards.ask(CUT)
    assert cards.shown(card).choices == ()
