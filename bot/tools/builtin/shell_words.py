"""Shell words: the text one word of a command stands for once ``/bin/sh`` has expanded it.

:mod:`bot.tools.builtin.shell_syntax` finds the words; the functions here give their values.
Values the shell knows only when the command runs are markers from Unicode's private use area,
so no real text is mistaken for them: :data:`HOME` for the home directory (``~``, ``~user``,
``$HOME``, ``${HOME}``, ``${HOME:-…}``), :data:`UNKNOWN` for any other expansion or
substitution. An unquoted ``$IFS`` splits the word into fields; unquoted ``{a,b}`` expands as
bash expands it (dash would not; reading more errs on the safe side).
"""

from __future__ import annotations

import re

HOME = "\ue000"
"""Stands for the home directory of the user the command runs as."""
UNKNOWN = "\ue001"
"""Stands for a value known only when the command runs."""
FIELD_BREAK = "\ue002"
"""Where an unquoted ``$IFS`` splits a word."""
BRACE_OPEN, BRACE_COMMA, BRACE_CLOSE = "\ue003", "\ue004", "\ue005"
"""Unquoted ``{ , }``: only these take part in brace expansion."""

MAX_BRACE_FIELDS = 64

_UNQUOTED_ESCAPE = re.compile(r"\\(\n|.)", re.DOTALL)
_DOUBLE_QUOTED_ESCAPE = re.compile(r'\\([$`"\\\n])')
_HOME_EXPANSION = re.compile(r"\$(?:HOME|\{HOME(?:[:%#?=+-][^}]*)?\})")
_IFS_EXPANSION = re.compile(r"\$(?:IFS|\{IFS\})")
_LOGIN = re.compile(r"[A-Za-z0-9._-]*")
_NOT_BRACE = f"[^{BRACE_OPEN}{BRACE_CLOSE}]*"
_BRACES = re.compile(f"{BRACE_OPEN}({_NOT_BRACE}{BRACE_COMMA}{_NOT_BRACE}){BRACE_CLOSE}")
_ANSI_C_ESCAPE = re.compile(
    r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.DOTALL
)
_ANSI_C_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def unquoted_text(text: str, *, tilde: bool) -> str:
    """An unquoted word: backslash escapes resolved, a leading ``~`` or ``~user`` read as
    :data:`HOME` when ``tilde`` (the word starts an argument), unquoted braces marked."""
    prefix = ""
    if tilde and text.startswith("~"):
        login, slash, rest = text[1:].partition("/")
        if login in ("+", "-"):  # $PWD and $OLDPWD
            prefix, text = UNKNOWN, slash + rest
        elif _LOGIN.fullmatch(login):
            prefix, text = HOME, slash + rest
    marked = text.replace("{", BRACE_OPEN).replace(",", BRACE_COMMA).replace("}", BRACE_CLOSE)
    return prefix + _UNQUOTED_ESCAPE.sub(_unescape_unquoted, marked)


def _unescape_unquoted(match: re.Match[str]) -> str:
    char = match.group(1)
    if char == "\n":
        return ""
    # an escaped brace or comma is literal: take it out of brace expansion
    return {BRACE_OPEN: "{", BRACE_COMMA: ",", BRACE_CLOSE: "}"}.get(char, char)


def double_quoted_text(text: str) -> str:
    """Literal text inside ``"…"``: only ``\\$ \\` \\" \\\\`` and line continuations escape."""
    return _DOUBLE_QUOTED_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def expansion_value(text: str, *, quoted: bool) -> str:
    """``$NAME`` or ``${…}``: :data:`HOME`, a field break for unquoted ``$IFS``, else
    :data:`UNKNOWN`. ``${HOME%/}`` and ``${HOME:-/}`` count as home."""
    if _HOME_EXPANSION.fullmatch(text):
        return HOME
    if _IFS_EXPANSION.fullmatch(text):
        return " " if quoted else FIELD_BREAK
    return UNKNOWN


def ansi_c_text(body: str) -> str:
    """The value of bash's ``$'…'`` from the text between the quotes."""
    return _ANSI_C_ESCAPE.sub(_ansi_c_char, body)


def _ansi_c_char(match: re.Match[str]) -> str:
    escape = match.group(1)
    if escape[0] in "xuU" and len(escape) > 1:
        code = int(escape[1:], 16)
        return chr(code) if code <= 0x10FFFF else ""
    if escape[0] in "01234567":
        return chr(int(escape, 8))
    if escape[0] == "c" and len(escape) == 2:
        return chr(ord(escape[1]) & 0x1F)
    return _ANSI_C_SIMPLE.get(escape, "\\" + escape)


def split_fields(value: str) -> list[str]:
    """The fields a word's value becomes: split at unquoted ``$IFS``, braces expanded."""
    if FIELD_BREAK in value:
        fields = [field for field in value.split(FIELD_BREAK) if field]
    else:
        fields = [value]
    return [_literal_braces(item) for field in fields for item in _expand_braces(field)]


def _expand_braces(field: str) -> list[str]:
    fields = [field]
    for _ in range(8):  # at most eight brace groups in one word are expanded
        expanded: list[str] = []
        for item in fields:
            match = _BRACES.search(item)
            if match is None:
                expanded.append(item)
                continue
            head, tail = item[: match.start()], item[match.end() :]
            expanded.extend(head + part + tail for part in match.group(1).split(BRACE_COMMA))
        if expanded == fields:
            break
        fields = expanded[:MAX_BRACE_FIELDS]
    return fields


def _literal_braces(field: str) -> str:
    return field.replace(BRACE_OPEN, "{").replace(BRACE_COMMA, ",").replace(BRACE_CLOSE, "}")
