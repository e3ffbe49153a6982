"""The value of one shell word: unquoting, home, unknown expansions, fields and braces."""

from __future__ import annotations

import pytest

from bot.tools.builtin.shell_words import (
    FIELD_BREAK,
    HOME,
    UNKNOWN,
    ansi_c_text,
    double_quoted_text,
    expansion_value,
    split_fields,
    unquoted_text,
)


@pytest.mark.parametrize(
    ("text", "tilde", "value"),
    [
        ("\\rm", True, "rm"),
        ("a\\ b", True, "a b"),
        ("line\\\ncontinued", True, "linecontinued"),
        ("~", True, HOME),
        ("~/x", True, f"{HOME}/x"),
        ("~root/x", True, f"{HOME}/x"),
        ("~+/x", True, f"{UNKNOWN}/x"),
        ("~/x", False, "~/x"),
        ("x~", True, "x~"),
    ],
)
def test_unquoted_text(text: str, tilde: bool, value: str) -> None:
    assert split_fields(unquoted_text(text, tilde=tilde)) == [value]


@pytest.mark.parametrize(
    ("text", "quoted", "value"),
    [
        ("$HOME", False, HOME),
        ("${HOME}", True, HOME),
        ("${HOME:?}", False, HOME),
        ("${HOME%/}", False, HOME),
        ("${#HOME}", False, UNKNOWN),
        ("$HOMEDIR", False, UNKNOWN),
        ("$IFS", False, FIELD_BREAK),
        ("${IFS}", True, " "),
        ("$1", False, UNKNOWN),
    ],
)
def test_expansion_value(text: str, quoted: bool, value: str) -> None:
    assert expansion_value(text, quoted=quoted) == value


def test_double_quoted_escapes() -> None:
    assert double_quoted_text('a\\$b \\"c\\" \\\\ \\n') == 'a$b "c" \\ \\n'


@pytest.mark.parametrize(
    ("body", "value"),
    [("\\x2f", "/"), ("\\057", "/"), ("\\u002F", "/"), ("a\\tb", "a\tb"), ("\\q", "\\q")],
)
def test_ansi_c_text(body: str, value: str) -> None:
    assert ansi_c_text(body) == value


def test_fields_and_braces() -> None:
    assert split_fields(f"rm{FIELD_BREAK}-rf{FIELD_BREAK}{FIELD_BREAK}/") == ["rm", "-rf", "/"]
    nested = split_fields(unquoted_text("/{bin,{etc,usr}}", tilde=True))
    assert set(nested) == {"/bin", "/etc", "/usr"}  # inner groups first: /bin comes twice
    assert split_fields(unquoted_text("{x}", tilde=True)) == ["{x}"]
    assert split_fields(unquoted_text("\\{a,b}", tilde=True)) == ["{a,b}"]
    assert len(split_fields(unquoted_text("{a,b}" * 20, tilde=True))) == 64
