"""Names of files the bot sends: nothing in them can make them read as another name."""

from __future__ import annotations

import pytest

from bot.attachments.naming import sent_file_name


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("report.pdf", "report.pdf"),
        ("report\u202efdp.exe", "report_fdp.exe"),  # shown as "reportexe.pdf" otherwise
        ("a\u2066b\u2069.txt", "a_b_.txt"),  # isolates
        ("zero\u200bwidth\ufeff.csv", "zero_width_.csv"),
        ("two\nlines\r.txt", "two_lines_.txt"),
        ("../../etc/passwd", "_.._etc_passwd"),
        ("..\\evil.bat", "_evil.bat"),
        ("filler\u3164name.txt", "filler_name.txt"),
        ("naïve résumé.pdf", "naïve résumé.pdf"),
        ("  .hidden  ", "hidden"),
        ("\u202e", "_"),
        ("", ""),
    ],
)
def test_sent_names_are_cleaned_of_what_could_make_them_lie(name: str, shown: str) -> None:
    assert sent_file_name(name) == shown


def test_sent_names_are_cut() -> None:
    assert sent_file_name("x" * 500, limit=200) == "x" * 200
