"""The Slack renderers at their worst cases (:mod:`tests.fakes.worst_cases`), through the real
slack_sdk / slack-bolt and the fake Slack, which refuses what Slack refuses (``msg_too_long``,
``invalid_blocks`` for section text over 3,000 characters, over 50 blocks, repeated ids; a
view over 100 blocks): every call the adapter makes is accepted, and nothing is lost."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.channel import SHOW_FULL_LABEL, ApprovalCard, CardState
from bot.envelope import DeliveryTarget
from bot.store import Store
from channels.slack.adapter import SlackChannel
from channels.slack.cards import card_blocks, card_text
from tests.fakes.channel_health import serving as running
from tests.fakes.limits import SLACK_SECTION_TEXT, SLACK_TEXT
from tests.fakes.recording_host import RecordingHost
from tests.fakes.slack_blocks import block_problems
from tests.fakes.slack_rules import refusal
from tests.fakes.slack_server import JSON, FakeSlack
from tests.fakes.slack_setup import APPROVER, REF, channel_for, has_buttons
from tests.fakes.worst_cases import (
    ANSWER_10K,
    FULL_100KB,
    LONG_COMMAND,
    TWELVE_LONG,
    TWELVE_PLAIN,
    card_of,
)

CONVERSATION = "C0001"
THREAD = "1700000001.000200"
TARGET = DeliveryTarget(channel=REF, conversation_id=CONVERSATION, thread_id=THREAD)


@asynccontextmanager
async def connected(
    slack: FakeSlack, store: Store, card: ApprovalCard | None = None
) -> AsyncIterator[SlackChannel]:
    """The adapter running; ``card`` is what the host answers for its approval id."""
    host = RecordingHost()
    if card is not None:
        host.cards[card.approval_id] = card
    channel = channel_for(slack, store)
    async with running(channel, host):
        yield channel


def card_message(slack: FakeSlack) -> tuple[str, JSON]:
    [(ts, message)] = [(ts, m) for (_, ts), m in slack.messages.items() if has_buttons(m)]
    return ts, message


def labels(blocks: list[JSON]) -> list[str]:
    return [e["text"]["text"] for b in blocks if b["type"] == "actions" for e in b["elements"]]


def section_texts(blocks: list[JSON]) -> list[str]:
    return [b["text"]["text"] for b in blocks if b["type"] == "section" and "text" in b]


def unescape(sent: str) -> str:
    return sent.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


async def test_twelve_line_cards_of_long_arguments_are_accepted_whole(
    slack: FakeSlack, store: Store
) -> None:
    for number, arguments in enumerate((TWELVE_PLAIN, TWELVE_LONG)):
        card = card_of(arguments, approval_id=f"w0rst0case0card00000000{number}")
        assert len(card.lines) == 12 and not card.cut
        async with connected(slack, store, card) as channel:
            await channel.cards.post_approval_card(TARGET, card)

    assert slack.refused == []
    for (_, ts), message in slack.messages.items():
        texts = section_texts(message["blocks"])
        assert all(len(text) <= SLACK_SECTION_TEXT.most for text in texts), ts
        assert labels(message["blocks"])[0] == "Approve"
    shown = unescape("\n".join(section_texts(next(iter(slack.messages.values()))["blocks"])))
    assert all(line in shown for line in card_of(TWELVE_PLAIN).lines)


async def test_a_long_command_card_is_accepted_and_offers_the_full_view(
    slack: FakeSlack, store: Store
) -> None:
    card = card_of(LONG_COMMAND)
    assert card.cut
    async with connected(slack, store, card) as channel:
        await channel.cards.post_approval_card(TARGET, card)

    assert slack.refused == []
    _, message = card_message(slack)
    assert labels(message["blocks"])[0] == SHOW_FULL_LABEL
    assert "Approve" not in labels(message["blocks"])


async def test_a_ten_thousand_character_answer_is_accepted_in_pieces(
    slack: FakeSlack, store: Store
) -> None:
    async with connected(slack, store) as channel:
        sent = await channel.send(TARGET, ANSWER_10K)

    assert slack.refused == []
    texts = [str(c.params["text"]) for c in slack.calls_of("chat.postMessage")]
    assert len(texts) == len(sent) >= 1
    assert all(len(text) <= SLACK_TEXT.most for text in texts)
    shown = unescape("\n".join(texts))
    assert "wave 0:" in shown and "The end." in shown
    last_wave = max(int(n) for n in re.findall(r"wave (\d+):", ANSWER_10K))
    assert f"wave {last_wave}:" in shown


async def test_a_full_view_of_100_kb_is_accepted(slack: FakeSlack, store: Store) -> None:
    card = card_of(FULL_100KB)
    assert card.cut and len(card.full_text) >= 100_000
    async with connected(slack, store, card) as channel:
        await channel.cards.post_approval_card(TARGET, card)
        ts, _ = card_message(slack)
        press = slack.press(CONVERSATION, ts, "hatchway_show_full", user=APPROVER)
        await slack.wait_ack(await slack.push("interactive", press))
        view = await slack.wait_view()

    assert slack.refused == []
    assert len(view["blocks"]) <= 100
    assert all(len(text) <= SLACK_SECTION_TEXT.most for text in section_texts(view["blocks"]))
    assert "Deny" in labels(view["blocks"])


#: What a request's arguments are made of, markup characters and mentions among them.
PIECES = [*"ab *_`~<>&#[]()|\n-!\\😀é:@", "```", "**", "<@U1>", "<!here>", "x" * 300]
TEXT = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)


@settings(max_examples=100)
@given(
    st.dictionaries(TEXT, TEXT, max_size=20),
    st.sampled_from(list(CardState)),
    st.booleans(),
    TEXT,
)
def test_every_card_is_a_message_slack_accepts(
    arguments: dict[str, object], state: CardState, reactions: bool, name: str
) -> None:
    """Whatever the arguments and names, a card's blocks pass Block Kit's checks as the fake
    makes them (:func:`tests.fakes.slack_rules.refusal`)."""
    card = replace(card_of(arguments), state=state, requested_by=name or "Ann", decided_by=name)
    blocks = card_blocks(card, reactions=reactions)
    params = {"channel": CONVERSATION, "text": card_text(card), "blocks": blocks}
    assert refusal("chat.postMessage", params) is None, block_problems(blocks)
