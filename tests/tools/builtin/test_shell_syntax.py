"""Reading a command as /bin/sh will run it: the simple commands, their argv, and paths."""

from __future__ import annotations

import shlex

import pytest

from bot.tools.builtin.shell_syntax import (
    HOME,
    MAX_DEPTH,
    UNKNOWN,
    normalise_target,
    parse_command,
)


def argvs(text: str) -> list[tuple[str, ...]]:
    syntax = parse_command(text)
    assert syntax.parsed
    return [command.argv for command in syntax.commands]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ls -la", [("ls", "-la")]),
        ('rm -rf "$HOME"', [("rm", "-rf", HOME)]),
        ("rm -rf '/'", [("rm", "-rf", "/")]),
        ('rm -rf "${HOME}"/', [("rm", "-rf", f"{HOME}/")]),
        ("\\rm -r -f -- ~/", [("rm", "-r", "-f", "--", f"{HOME}/")]),
        ("sudo -u root env A=1 /usr/bin/rm -rf //", [("rm", "-rf", "//")]),
        ("r''m -r\"f\" a\\ b", [("rm", "-rf", "a b")]),
        ("echo '$HOME' \"$USER\" $(date)", [("echo", "$HOME", UNKNOWN, UNKNOWN), ("date",)]),
        ("rm${IFS}-rf${IFS}/", [("rm", "-rf", "/")]),
        ('echo "${IFS}x"', [("echo", " x")]),
        ("echo /{bin,etc} '{a,b}'", [("echo", "/bin", "/etc", "{a,b}")]),
        ("echo $'\\x2f' $'a\\tb'", [("echo", "/", "a\tb")]),
        ("echo ~alice ~+ a~", [("echo", HOME, UNKNOWN, "a~")]),
        ("rm 2>/dev/null -rf /", [("rm", "-rf", "/")]),
        ("a | b && (c; d &) || { e; }", [("a",), ("b",), ("c",), ("d",), ("e",)]),
        ('echo "$(rm -rf /)"', [("echo", UNKNOWN), ("rm", "-rf", "/")]),
        ("sh -c 'reboot now'", [("sh", "-c", "reboot now"), ("reboot", "now")]),
        ('eval "halt; ls"', [("eval", "halt; ls"), ("halt",), ("ls",)]),
        ("bash <<< 'id'", [("bash",), ("id",)]),
        ("sh <<EOF\nwhoami\nEOF", [("sh",), ("whoami",)]),
        ("echo uptime | sh", [("uptime",), ("echo", "uptime"), ("sh",)]),
        ("cat <<'EOF'\nit's text\nEOF", [("cat",)]),
        ("A=1 B=2", []),
        ("echo \ud83d", [("echo", "?")]),
    ],
)
def test_simple_commands_as_their_programs_see_them(
    text: str, expected: list[tuple[str, ...]]
) -> None:
    assert argvs(text) == expected


def test_output_redirections_and_forking_functions() -> None:
    syntax = parse_command("x() { x | x & }; echo hi > /dev/sda 2>&1 >> 'log file'")
    assert syntax.written_files == ("/dev/sda", "1", "log file")
    assert syntax.forking_functions == ("x",)
    assert parse_command("f() { f; }; count() { echo 1; }").forking_functions == ()


@pytest.mark.parametrize(
    "text",
    ['echo "open', "echo 'open", "if true; then ls", "echo $(ls", "echo a; ; echo b"],
)
def test_syntax_errors_are_not_parsed(text: str) -> None:
    assert parse_command(text).parsed is False


def test_nested_syntax_errors_and_depth_count() -> None:
    assert parse_command("sh -c 'echo \"open'").parsed is False
    nested = "true"
    for _ in range(MAX_DEPTH):
        nested = f"sh -c {shlex.quote(nested)}"
    assert parse_command(nested).parsed is True
    assert parse_command(f"sh -c {shlex.quote(nested)}").parsed is False


@pytest.mark.parametrize(
    ("word", "target"),
    [
        ("/", "/"),
        ("//", "/"),
        ("/.", "/"),
        ("/./", "/"),
        ("/*", "/"),
        ("/.*", "/"),
        ("/*/", "/"),
        ("/..", "/"),
        ("/etc//", "/etc"),
        ("/usr/./local/../", "/usr"),
        ("/var/*", "/var"),
        (HOME, "~"),
        (f"{HOME}/", "~"),
        (f"{HOME}/*", "~"),
        (f"{HOME}/..", "/"),
        (f"{HOME}/build/", "~/build"),
        (f"{HOME}x", f"{HOME}x"),
        ("~", "~"),
        ("$HOME/", "~"),
        ("${HOME}/x", "~/x"),
        ("./build", "./build"),
        ("build", "build"),
        (UNKNOWN, UNKNOWN),
    ],
)
def test_normalise_target(word: str, target: str) -> None:
    assert normalise_target(word) == target
