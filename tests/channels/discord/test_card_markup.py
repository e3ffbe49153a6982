"""Values on Discord approval cards and full views show as written and ping nobody.

A request's arguments sit in code blocks (only a run of three backticks needs breaking
there); the other lines — the tool, who asked, why — are escaped. Every card, full view and
progress message is sent with ``allowed_mentions`` empty. The exact payloads the fake
received are asserted; the properties check that nothing is ever cut blind or lost.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.approval.summary import describe
from bot.channel import ApprovalCard, CardState
from bot.envelope import DeliveryTarget
from bot.store import Store
from channels.discord.cards import full_view_parts, render_card
from channels.discord.markup import escape_text
from tests.fakes.discord_approvals import EPHEMERAL, request_turn
from tests.fakes.discord_full_views import follow_ups, full_view, press, readable_text
from tests.fakes.discord_payloads import JSON
from tests.fakes.discord_server import Call, FakeDiscord
from tests.fakes.discord_setup import BOB, GENERAL, RecordingHost, make_channel, running

pytestmark = pytest.mark.usefixtures("discord_env")

HOSTILE = (
    "**bold**",
    "_italic_ __under__",
    "`tick`",
    "~~strike~~",
    "||spoiler||",
    "> quote",
    "# Heading",
    "-# subtext",
    "- item",
    "1. item",
    "[click me](https://evil.example/p)",
    "@everyone",
    "@here",
    "<@123456789012345678>",
    "<@!123456789012345678>",
    "<@&123456789012345678>",
    "<#123456789012345678>",
    "<:emoji:123456789012345678>",
    "<t:1700000000:R>",
    "```\nrm -rf /\n```",
    "\\*escaped\\*",
)
NO_MENTIONS = {"parse": []}
SUPPRESS_EMBEDS = 4
APPROVAL_ID = "Mk_1"


def card_of(arguments: dict[str, object], *, requested_by: str, cut: bool = False) -> ApprovalCard:
    view = describe(arguments)
    return ApprovalCard(
        approval_id=APPROVAL_ID,
        tool="mcp_evil_*tool*",
        lines=view.lines,
        reason="it has side effects",
        requested_by=requested_by,
        full_text=view.full,
        cut=cut or view.cut,
    )


def without_nonce(call: Call) -> JSON:
    assert call.body is not None
    return {k: v for k, v in call.body.items() if k not in ("nonce", "enforce_nonce")}


def _outside_code(content: str) -> str:
    """``content`` without its code block and the bold markers of its headline."""
    head, _, rest = content.partition("\n")
    assert head.startswith("**") and head.endswith("**")
    return head[2:-2] + "\n" + re.sub(r"```text\n.*?\n```", "", rest, flags=re.DOTALL)


def _unescaped(text: str) -> list[str]:
    """Markup characters in ``text`` not preceded by a backslash escape."""
    return re.findall(r"(?<!\\)(?:\\\\)*([*_~`|\[\]<>@#-])", text)


# -- escaping --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("**b**", "\\*\\*b\\*\\*"),
        ("@everyone <@1> <@&2> <#3>", "\\@everyone \\<\\@1\\> \\<\\@&2\\> \\<\\#3\\>"),
        ("[t](https://x.test)", "\\[t\\](https://x.test)"),
        ("-# sub", "\\-\\# sub"),
        ("1. item\n 22. item", "1\\. item\n 22\\. item"),
        ("a\\b", "a\\\\b"),
        ("plain: text (ok)", "plain: text (ok)"),
    ],
)
def test_escape_text(text: str, shown: str) -> None:
    assert escape_text(text) == shown


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_value_stays_in_the_code_block_and_other_lines_are_escaped(value: str) -> None:
    card = card_of({"command": value}, requested_by=value)
    for content in (render_card(card).content, *(p.content for p in full_view_parts(card))):
        blocks = re.findall(r"```text\n(.*?)\n```", content, flags=re.DOTALL)
        assert len(blocks) == 1 and "```" not in blocks[0]
        assert _unescaped(_outside_code(content)) == []


# -- exact payloads --------------------------------------------------------------------------


async def test_card_and_full_view_payloads_are_literal_and_ping_nobody(
    fake: FakeDiscord, store: Store
) -> None:
    card = card_of(
        {"command": "echo **hi** <@1> @everyone ```x``` [a](http://e)"},
        requested_by="<@&2> @here",
        cut=True,
    )
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    host.cards[APPROVAL_ID] = card
    channel = make_channel(fake, store, approvers=[BOB["id"]])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.cards.post_approval_card(envelope.reply_target, card)
        shown = await press(fake, fake.messages[sent.message_id], "s", BOB)
        await full_view(fake, shown)
    [post] = fake.calls_to("POST", rf"/channels/{GENERAL}/messages")[-1:]
    code = "command: echo **hi** <@1> @everyone `\u200b`\u200b`x`\u200b`\u200b` [a](http://e)"
    asked = "Asked by: \\<\\@&2\\> \\@here"
    assert without_nonce(post) == {
        "content": "\n".join(
            [
                "**🔐 Approval needed: mcp\\_evil\\_\\*tool\\***",
                "```text",
                code,
                "```",
                "Why: it has side effects",
                asked,
                "⚠ Part of this request is not shown here. Press “Show full and decide” "
                "to read all of it; it can only be approved from there.",
                "No answer within 5 min means no.",
            ]
        ),
        "components": [
            {
                "type": 1,
                "components": [
                    {
                        "type": 2,
                        "style": 1,
                        "disabled": False,
                        "label": "🔎 Show full and decide",
                        "custom_id": f"ap:{APPROVAL_ID}:s",
                    },
                    {
                        "type": 2,
                        "style": 4,
                        "disabled": False,
                        "label": "Deny",
                        "custom_id": f"ap:{APPROVAL_ID}:d",
                    },
                    {
                        "type": 2,
                        "style": 2,
                        "disabled": False,
                        "label": "✏️ Reply instead",
                        "custom_id": f"ap:{APPROVAL_ID}:r",
                    },
                ],
            }
        ],
        "tts": False,
        "flags": SUPPRESS_EMBEDS,
        "allowed_mentions": NO_MENTIONS,
    }
    [follow_up] = follow_ups(fake, shown)
    card_id = sent.message_id
    assert follow_up.body == {
        "content": "\n".join(
            [
                "**🔎 Full request: mcp\\_evil\\_\\*tool\\***",
                "```text",
                code,
                "```",
                "Why: it has side effects",
                asked,
                "That is the whole request. Decide with the buttons below.",
            ]
        ),
        "components": [
            {
                "type": 1,
                "components": [
                    {
                        "type": 2,
                        "style": style,
                        "disabled": False,
                        "label": label,
                        "custom_id": f"ap:{APPROVAL_ID}:{code_}:@{card_id}",
                    }
                    for style, label, code_ in (
                        (3, "Approve", "fa"),
                        (4, "Deny", "fd"),
                        (2, "Always", "fw"),
                    )
                ],
            }
        ],
        "tts": False,
        "flags": EPHEMERAL | SUPPRESS_EMBEDS,
        "allowed_mentions": NO_MENTIONS,
    }


async def test_a_decided_card_edit_is_literal_and_pings_nobody(
    fake: FakeDiscord, store: Store
) -> None:
    card = card_of({"command": "ls"}, requested_by="alice")
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.cards.post_approval_card(envelope.reply_target, card)
        decided = dataclasses.replace(card, state=CardState.DENIED, decided_by="@everyone **x**")
        await channel.cards.update_approval_card(sent, decided)
        [edit] = await fake.wait_for_call(
            "PATCH", rf"/channels/{GENERAL}/messages/{sent.message_id}"
        )
    assert edit.body == {
        "content": "\n".join(
            [
                "**❌ Denied: mcp\\_evil\\_\\*tool\\***",
                "```text",
                "command: ls",
                "```",
                "Why: it has side effects",
                "Asked by: alice",
                "By: \\@everyone \\*\\*x\\*\\*",
            ]
        ),
        "components": [],
        "tts": False,
        "allowed_mentions": NO_MENTIONS,
    }


async def test_progress_lines_and_their_edits_ping_nobody(fake: FakeDiscord, store: Store) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    line = "⏳ shell: echo @everyone @here <@123456789012345678> <@&123456789012345678>"
    async with running(channel, host):
        await request_turn(fake, host)
        target = DeliveryTarget(channel=channel.ref, conversation_id=GENERAL)
        [progress] = await channel.send(target, line)
        await channel.edit(progress, f"{line}\n✅ shell (0.1s)")
        [edit] = await fake.wait_for_call(
            "PATCH", rf"/channels/{GENERAL}/messages/{progress.message_id}"
        )
    [post] = fake.calls_to("POST", rf"/channels/{GENERAL}/messages")
    assert without_nonce(post) == {
        "content": line,
        "components": [],
        "tts": False,
        "allowed_mentions": NO_MENTIONS,
    }
    assert edit.body == {
        "content": f"{line}\n✅ shell (0.1s)",
        "tts": False,
        "allowed_mentions": NO_MENTIONS,
    }


# -- nothing cut blind -----------------------------------------------------------------------

_pieces = st.sampled_from(
    ["a", " ", "\n", "`", "```", "*", "_", "@everyone", "<@1>", "é", "🙂", "\u202e", "x" * 300]
)
_values = st.lists(_pieces, max_size=120).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["command", "path", "body", "k1", "k2"]), _values))
def test_a_full_view_shows_every_character_and_a_card_is_never_cut_blind(
    arguments: dict[str, str],
) -> None:
    card = card_of(dict(arguments), requested_by="alice")
    shown = render_card(card)
    assert len(shown.content) <= 2000
    if not shown.cut:  # a card that may approve shows every summary line whole
        assert all(line in shown.content.replace("\u200b", "") for line in card.lines)
    parts = full_view_parts(card)
    assert all(len(part.content) <= 2000 for part in parts)
    if parts[-1].file_name is None:
        assert readable_text([{"content": p.content} for p in parts]) == card.full_text
    else:
        assert card.full_text in parts[-1].file_text
