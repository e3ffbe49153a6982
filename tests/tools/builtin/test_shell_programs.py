"""Which program a command's words run, and which script a shell is given."""

from __future__ import annotations

import pytest

from bot.tools.builtin.shell_programs import program_argv, shell_script


@pytest.mark.parametrize(
    ("words", "argv"),
    [
        ("rm -rf /", "rm -rf /"),
        ("/usr/bin/rm x", "rm x"),
        ("sudo -u root -E rm x", "rm x"),
        ("sudo -- rm x", "rm x"),
        ("env -i -u HOME A=1 B=2 rm x", "rm x"),
        ("nice -n 5 ionice -c 3 nohup rm x", "rm x"),
        ("timeout -s KILL 10 rm x", "rm x"),
        ("xargs -0 -I {} rm {}", "rm {}"),
        ("command -p busybox rm x", "rm x"),
        ("exec -a name rm x", "rm x"),
        ("sudo", ""),
        ("git rm -r x", "git rm -r x"),
    ],
)
def test_program_argv_removes_wrappers(words: str, argv: str) -> None:
    assert program_argv(words.split()) == argv.split()


@pytest.mark.parametrize(
    ("argv", "script"),
    [
        (["sh", "-c", "ls"], "ls"),
        (["bash", "-lc", "ls", "name"], "ls"),
        (["bash", "-o", "pipefail", "-ec", "ls"], "ls"),
        (["bash", "--norc", "script.sh"], None),
        (["sh"], True),
        (["sh", "-s", "arg"], True),
        (["sh", "script.sh"], None),
        (["su", "-c", "ls", "root"], "ls"),
        (["su", "root", "--command=ls"], "ls"),
        (["su", "root"], None),
        (["python3", "-c", "print()"], None),
        ([], None),
    ],
)
def test_shell_script(argv: list[str], script: str | bool | None) -> None:
    assert shell_script(argv) == script
