"""Shell programs: which program a command's words run, and what script a shell is given.

``sudo rm -rf /`` runs ``rm``: :func:`program_argv` removes the wrappers that run the command
named by their operands (``sudo``, ``doas``, ``env``, ``exec``, ``nohup``, ``command``,
``nice``, ``timeout``, ``xargs``, ``busybox`` …, with their options and ``NAME=value``
assignments) and reduces ``/usr/bin/rm`` to ``rm``. :func:`shell_script` finds the script a
shell runs (``sh -c``, ``bash -lc``, ``su -c``) so it can be read in turn. Both work on words
already unquoted by :mod:`bot.tools.builtin.shell_syntax`.
"""

from __future__ import annotations

import re
from typing import Literal

# Programs that run the command named by their operands, and their options that take a value.
_WRAPPERS: dict[str, frozenset[str]] = {
    name: frozenset(valued.split())
    for name, valued in {
        "sudo": "-u -g -C -D -h -p -r -t -T -U --user --group --chdir --host --prompt --role",
        "doas": "-u -C",
        "pkexec": "--user",
        "env": "-u -C --unset --chdir",
        "exec": "-a",
        "nohup": "",
        "command": "",
        "builtin": "",
        "time": "-f -o --format --output",
        "nice": "-n --adjustment",
        "ionice": "-c -n -p -P -u --class --classdata",
        "setsid": "",
        "stdbuf": "-i -o -e --input --output --error",
        "timeout": "-s -k --signal --kill-after",
        "xargs": "-a -d -E -I -L -n -P -s --arg-file --delimiter --max-args --max-procs",
        "busybox": "",
        "toybox": "",
    }.items()
}
_POSITIONALS = {"timeout": 1}  # timeout DURATION COMMAND
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "posh", "yash", "rbash"})
_SHELL_VALUED = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def program_argv(words: list[str]) -> list[str]:
    """``words`` without the wrappers in front of the program (``sudo -u x env A=1 nice rm`` →
    ``rm``), with ``argv[0]`` reduced to its last path part."""
    argv = words
    for _ in range(16):
        if not argv:
            return argv
        name = argv[0].rsplit("/", 1)[-1] if "/" in argv[0] else argv[0]
        argv = [name, *argv[1:]]
        valued = _WRAPPERS.get(name)
        if valued is None:
            return argv
        index = 1
        while index < len(argv) and argv[index].startswith("-") and argv[index] != "-":
            if argv[index] == "--":
                index += 1
                break
            index += 2 if argv[index] in valued else 1
        while index < len(argv) and _ASSIGNMENT.match(argv[index]):
            index += 1
        argv = argv[index + _POSITIONALS.get(name, 0) :]
    return argv


def shell_script(argv: list[str]) -> str | Literal[True] | None:
    """For a shell (``sh``, ``bash`` …): the script text given with ``-c``, True when it reads
    its script from stdin, None when it runs a script file; ``su``/``runuser -c`` count too.
    None for any other program."""
    if not argv:
        return None
    if argv[0] in ("su", "runuser"):
        for index, arg in enumerate(argv[1:-1], start=1):
            if arg in ("-c", "--command") or (
                arg[:1] == "-" and arg[1:2] != "-" and arg.endswith("c")
            ):
                return argv[index + 1]
        return next((arg.split("=", 1)[1] for arg in argv if arg.startswith("--command=")), None)
    if argv[0] not in _SHELLS:
        return None
    index, from_option, from_stdin = 1, False, False
    while index < len(argv) and argv[index][:1] in ("-", "+") and len(argv[index]) > 1:
        arg = argv[index]
        if arg == "--":
            index += 1
            break
        if arg in _SHELL_VALUED:
            index += 2
            continue
        short = "" if arg.startswith("--") else arg[1:]
        from_option, from_stdin = from_option or "c" in short, from_stdin or "s" in short
        index += 1
    if from_option:
        return argv[index] if index < len(argv) else None
    return True if from_stdin or index >= len(argv) else None
