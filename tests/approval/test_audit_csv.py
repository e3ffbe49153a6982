"""CSV cells of the audit exports (``hatchway audit --format csv`` and the console's):
nothing a spreadsheet would run, nothing invisible."""

from __future__ import annotations

import csv
import io

import pytest

from bot.approval.audit import spreadsheet_cell, to_csv
from bot.store.audit import AuditEntry, Decision


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


def test_the_cli_export_quotes_a_formula_requester() -> None:
    entry = AuditEntry(
        id=3,
        at=1_700_000_000.0,
        channel="telegram.main",
        conversation_id="-100",
        requester='=HYPERLINK("http://evil.example","x")',
        tool="deploy",
        summary='["version: v2"]',
        fingerprint="f" * 64,
        decision=Decision.APPROVED,
        decided_by="@admin",
        reason="click",
    )
    [row] = list(csv.DictReader(io.StringIO(to_csv([entry]))))
    assert row["requester"] == "'" + '=HYPERLINK("http://evil.example","x")'
    assert row["decided_by"] == "'@admin"
    assert (row["tool"], row["decision"], row["id"]) == ("deploy", "approved", "3")
