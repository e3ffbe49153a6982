"""CSV cells of the audit export: nothing a spreadsheet would run, nothing invisible."""

from __future__ import annotations

import pytest

from bot.webconsole.audit_export import spreadsheet_cell


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=1+2", "'=1+2"),
        ("+1", "'+1"),
        ("-2", "'-2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
        ("plain", "plain"),
        ("a=b", "a=b"),
        (12, "12"),
        (-1.5, "'-1.5"),
        ("", ""),
    ],
)
def test_a_formula_start_gets_a_quote(value: object, cell: str) -> None:
    assert spreadsheet_cell(value) == cell


@pytest.mark.parametrize("value", ["\t=1+2", "\r=1+2", "\u202e=1+2", "\n@x", "  =1+2"])
def test_an_invisible_first_character_is_shown_and_hides_no_formula(value: str) -> None:
    cell = spreadsheet_cell(value)
    assert cell.startswith("'") or not cell.lstrip(" ").startswith(("=", "+", "-", "@"))
    assert not any(ch in cell for ch in "\t\r\n\u202e")
