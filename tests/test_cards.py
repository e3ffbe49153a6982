"""The button codec every platform's approval buttons use (:class:`bot.cards.ButtonCodec`)."""

from __future__ import annotations

import secrets

import pytest

from bot.cards import (
    TELEGRAM_BUDGET,
    ApprovalCard,
    Button,
    ButtonCodec,
    CardVerb,
    FullViewPlan,
    Unreadable,
    answer_window,
    plan_full_view,
)

DRAWN = [
    Button(approval_id=secrets.token_hex(16), verb=verb, full_view=full_view)
    for verb in CardVerb
    for full_view in (False, True)
    if not (full_view and verb in (CardVerb.REPLY, CardVerb.SHOW_FULL))
]


@pytest.mark.parametrize("button", DRAWN, ids=lambda b: f"{b.verb}-{b.full_view}")
def test_every_button_round_trips_within_telegrams_budget_without_memory(button: Button) -> None:
    data = ButtonCodec().pack(button)
    assert len(data.encode()) <= TELEGRAM_BUDGET
    # a new codec (a restart, another replica) reads it the same
    assert ButtonCodec().unpack(data) == button


def test_a_32_hex_id_leaves_room_for_a_grant_choice_and_a_quorum_vote() -> None:
    button = Button(
        approval_id="f" * 32, verb=CardVerb.ALWAYS, full_view=True, fields=("g" * 12, "v" * 12)
    )
    data = ButtonCodec().pack(button)
    assert len(data.encode()) == TELEGRAM_BUDGET
    assert ButtonCodec().unpack(data) == button


@pytest.mark.parametrize(
    ("data", "read"),
    [
        ("ap:apr-1:a", Button(approval_id="apr-1", verb=CardVerb.APPROVE)),
        ("ap:apr-1:fw", Button(approval_id="apr-1", verb=CardVerb.ALWAYS, full_view=True)),
        ("ap:apr-1:s", Button(approval_id="apr-1", verb=CardVerb.SHOW_FULL)),
        ("ap:apr-1:r", Button(approval_id="apr-1", verb=CardVerb.REPLY)),
        (  # a button not on the card names it (Discord's full view)
            "ap:apr-1:fd:g1:@950",
            Button(
                approval_id="apr-1", verb=CardVerb.DENY, full_view=True, fields=("g1",), card="950"
            ),
        ),
        ("v2:apr-1:a", Unreadable.PAYLOAD),  # a later format version
        ("v17:anything", Unreadable.PAYLOAD),
        ("ap:apr-1:zz", Unreadable.PAYLOAD),  # damaged
        ("ap::a", Unreadable.PAYLOAD),
        ("poll:yes", None),  # not an approval button
        ("", None),
        (None, None),
    ],
)
def test_payloads_of_format_1_are_read_and_anything_else_refused_politely(
    data: str | None, read: Button | Unreadable | None
) -> None:
    assert ButtonCodec().unpack(data) == read


def test_an_id_too_long_for_the_budget_travels_as_a_digest_this_process_knows() -> None:
    long_id = "x" * 80
    codec = ButtonCodec()
    data = codec.pack(Button(approval_id=long_id, verb=CardVerb.DENY))
    assert len(data.encode()) <= TELEGRAM_BUDGET
    assert codec.unpack(data) == Button(approval_id=long_id, verb=CardVerb.DENY)
    after_restart = ButtonCodec().unpack(data)
    assert isinstance(after_restart, Button) and after_restart.approval_id != long_id


def _lines(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def test_a_full_view_too_long_for_its_pages_is_a_file() -> None:
    """Too many pages: the whole full view as a file (Slack's modal, which cannot post that
    one, says the request is too long: tests/channels/slack)."""
    card = ApprovalCard(
        approval_id="apr-1",
        tool="shell",
        lines=("x",),
        reason="r",
        requested_by="U1",
        full_text="y" * 100,
        cut=True,
    )
    fits = plan_full_view(card, page_chars=50, max_pages=2, split=_lines)
    assert fits == FullViewPlan(pages=("y" * 50, "y" * 50))
    too_long = plan_full_view(card, page_chars=10, max_pages=2, split=_lines)
    assert too_long.pages == ()
    assert too_long.document == card.render_full_text().encode()


def _diff_card(lines: int) -> tuple[ApprovalCard, str]:
    from bot.approval.summary import describe

    diff = ("--- f (now)", "+++ f (after)", "@@ -1 +1 @@", *(f"-old {n}" for n in range(lines)))
    view = describe({"path": "f"}, diff=diff)
    card = ApprovalCard(
        approval_id="A1",
        tool="file_write",
        lines=view.lines,
        reason="r",
        requested_by="u",
        full_text=view.full,
        cut=view.cut,
        diff=view.diff_text,
    )
    return card, view.full


def _pieces(text: str, size: int) -> list[str]:
    return [text[at : at + size] for at in range(0, len(text), size)]


def test_a_long_diff_goes_as_a_file_and_the_pages_say_where() -> None:
    card, _ = _diff_card(100)
    sent = plan_full_view(card, page_chars=3000, max_pages=10, split=_pieces)
    assert sent.diff_name == "change-A1.diff"
    assert sent.diff_file.decode() == card.diff + "\n" and "-old 99" in card.diff
    paged = "".join(sent.pages)
    assert "-old 0" not in paged and paged.startswith("path: f\n")
    assert paged.endswith("every one of them in the attached file change-A1.diff]")
    # a surface that posts the file elsewhere (Slack: the card's thread) says where
    thread = "in the file {name} posted in the card's thread"
    modal = plan_full_view(card, page_chars=3000, max_pages=10, split=_pieces, diff_where=thread)
    assert modal.diff_file == sent.diff_file
    assert "".join(modal.pages).endswith("in the file change-A1.diff posted in the card's thread]")
    # pages too few for the rest: the diff stays in them, or all of it goes as one file
    tight = plan_full_view(card, page_chars=3000, max_pages=0, split=_pieces)
    assert not tight.diff_file and not tight.pages and tight.document


def test_a_short_diff_stays_in_the_pages() -> None:
    card, full = _diff_card(10)
    assert card.diff == ""  # the card shows it all
    plan = plan_full_view(card, page_chars=3000, max_pages=10, split=_pieces)
    assert not plan.diff_file and "".join(plan.pages) == full


@pytest.mark.parametrize(
    ("timeout_s", "said"),
    [
        (10, "1 min"),
        (300, "5 min"),
        (7_140, "119 min"),
        (7_200, "2 h"),
        (86_400, "24 h"),
        (169_200, "47 h"),
        (172_800, "2 days"),
        (604_800, "7 days"),
    ],
)
def test_a_card_says_how_long_it_waits_in_the_unit_that_reads(timeout_s: float, said: str) -> None:
    """Parked cards wait hours or days (approval.timeout_s defaults to a day): their last
    line says "24 h", not "1440 min"."""
    assert answer_window(timeout_s) == said
