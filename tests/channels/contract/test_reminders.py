"""Reminders and escalation of an unanswered card (bot.approval.reminders), on every platform:
the real adapter against its loopback fake, the card asked for by the real approval service,
and a sweep with reminders configured, on the service's clock moved on by the test (nothing
waits for minutes)."""

from __future__ import annotations

from collections.abc import Mapping

from bot.approval.service import ApprovalService
from bot.cards import CardVerb
from bot.config import parse_settings
from bot.store.audit import Decision
from tests.channels.contract.driver import TIMEOUT_S, CardDriver

ARGS = {"command": "echo ok"}


def _service(cards: CardDriver, approval: Mapping[str, object]) -> ApprovalService:
    """A second service on the same database, channel and clock, with ``approval`` set: the
    one whose sweep reminds. The driver's own, which answers the presses, is given the same
    settings: who may decide is read from the configuration in force (an escalation
    included), and a daemon has one."""
    channel = cards.process.channel
    settings = parse_settings(
        {
            "approval": {"timeout_s": TIMEOUT_S, **approval},
            "channels": {channel.ref.kind: {channel.ref.alias: dict(cards.process.table)}},
        },
        environ={},
        require_provider=False,
    )
    cards.process.service.update_settings(settings)
    return ApprovalService(settings, cards.store, {channel.ref: channel}.get, cards.clock)


def _bot_texts(cards: CardDriver) -> list[str]:
    """Every text the bot has posted on the platform, as it reads now."""
    fake = cards.fake  # type: ignore[attr-defined]
    if cards.name == "telegram":
        from tests.channels.contract.telegram import CHAT

        return [str(m.get("text", "")) for m in fake.bot_messages(CHAT)]
    if cards.name == "slack":
        # the text, then the blocks the card is drawn with (escaped as Slack shows them)
        return [
            str(c.params.get("text", "")) + "\n" + _unescape(str(c.params.get("blocks", "")))
            for c in fake.calls_of("chat.postMessage")
        ]
    return [str(m.get("content", "")) for m in fake.messages.values()]


def _unescape(sent: str) -> str:
    return sent.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _reminders(cards: CardDriver) -> list[str]:
    return [t for t in _bot_texts(cards) if "Reminder" in t]


async def _audited(cards: CardDriver, decision: Decision) -> list[str]:
    return [e.reason for e in await cards.store.audit.since() if e.decision is decision]


async def test_reminders_are_sent_as_text_at_most_remind_max_times(cards: CardDriver) -> None:
    sweeper = _service(
        cards,
        {
            "remind_after_s": 10,
            "remind_max": 2,
            "approver_zones": {cards.approver: "Asia/Tokyo"},
        },
    )
    card = await cards.ask(ARGS)
    buttons_before = cards.shown(card).buttons
    assert await sweeper.sweep_reminders() == 0  # not due yet
    cards.clock.offset += 11
    assert await sweeper.sweep_reminders() == 1
    assert await sweeper.sweep_reminders() == 0  # once per step, however often it sweeps
    [first] = _reminders(cards)
    assert "Reminder 1/2" in first and "shell" in first
    assert "UTC" in first and "Asia/Tokyo" in first
    cards.clock.offset += 10
    assert await sweeper.sweep_reminders() == 1
    cards.clock.offset += 10
    assert await sweeper.sweep_reminders() == 0  # remind_max reached
    assert len(_reminders(cards)) == 2
    assert await _audited(cards, Decision.REMINDED) == ["reminder 1 of 2", "reminder 2 of 2"]
    # never a second set of buttons: the card is the one place to answer
    assert cards.shown(card).buttons == buttons_before
    row = await cards.store.approvals.get(card.approval_id)
    assert row is not None and row.reminders_sent == 2
    answer = await cards.press(card, CardVerb.APPROVE, cards.approver)
    assert answer.told == () or answer.told[0] != "This request has expired."
    assert (await card.decision()).allowed


async def test_no_reminders_when_off(cards: CardDriver) -> None:
    sweeper = _service(cards, {})
    await cards.ask(ARGS)
    cards.clock.offset += TIMEOUT_S - 1
    assert await sweeper.sweep_reminders() == 0
    assert _reminders(cards) == []


async def test_escalation_lets_the_further_approver_decide_and_says_so(cards: CardDriver) -> None:
    sweeper = _service(cards, {"escalate_after_s": 20, "escalate_to": [cards.stranger]})
    card = await cards.ask(ARGS)
    refused = await cards.press(card, CardVerb.DENY, cards.stranger)
    assert refused.told == ("You are not authorised to approve this.",)
    cards.clock.offset += 21
    assert await sweeper.sweep_reminders() == 1
    assert await sweeper.sweep_reminders() == 0  # escalated once
    assert f"Escalated to: {cards.stranger}" in cards.shown(card).text
    assert await _audited(cards, Decision.ESCALATED) == [f"escalated to {cards.stranger}"]
    row = await cards.store.approvals.get(card.approval_id)
    assert row is not None and row.escalated_to == (cards.stranger,)
    await cards.press(card, CardVerb.DENY, cards.stranger)
    decision = await card.decision()
    assert not decision.allowed and decision.decided_by == cards.stranger
    # a decided request is neither reminded nor escalated
    cards.clock.offset += 5
    assert await sweeper.sweep_reminders() == 0


async def test_a_tools_own_schedule_reminds_as_the_platform_receives_it(cards: CardDriver) -> None:
    # [approval] schedules nothing; its entry for shell does
    sweeper = _service(cards, {"tools": {"shell": {"remind_after_s": 30, "remind_max": 1}}})
    card = await cards.ask(ARGS)
    cards.clock.offset += 29
    assert await sweeper.sweep_reminders() == 0
    cards.clock.offset += 1
    assert await sweeper.sweep_reminders() == 1
    cards.clock.offset += 60
    assert await sweeper.sweep_reminders() == 0
    [reminder] = _reminders(cards)
    assert "Reminder 1/1" in reminder and "UTC" in reminder
    await cards.press(card, CardVerb.APPROVE, cards.approver)
    assert (await card.decision()).allowed


async def test_the_escalated_user_is_shown_the_card_where_they_can_see_it(
    cards: CardDriver,
) -> None:
    """Told in the conversation when the platform says they are in it, else a copy of the
    card in their DM, never both: the fake received one or the other."""
    sweeper = _service(cards, {"escalate_after_s": 20, "escalate_to": [cards.stranger]})
    card = await cards.ask(ARGS)
    told_before = len(_bot_texts(cards))
    cards.clock.offset += 20
    assert await sweeper.sweep_reminders() == 1
    told = [t for t in _bot_texts(cards)[told_before:] if "Escalated to" in t]
    row = await cards.store.approvals.get(card.approval_id)
    assert row is not None
    copies = [c for c in row.card_refs if c.for_user == cards.stranger]
    in_conversation = [t for t in told if t.startswith(f"⏫ Escalated to {cards.stranger}:")]
    assert (len(in_conversation), len(copies)) in ((1, 0), (0, 1)), (told, copies)
    if copies:  # the copy as the platform received it says where it was asked and escalated
        assert any("Asked in:" in t and f"Escalated to: {cards.stranger}" in t for t in told)
    # every copy of the card says it was escalated
    assert f"Escalated to: {cards.stranger}" in cards.shown(card).text
    await cards.press(card, CardVerb.APPROVE, cards.stranger)
    assert (await card.decision()).decided_by == cards.stranger
