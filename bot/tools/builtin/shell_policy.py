"""Shell policy: the hard deny list and the child environment.

**Deny list.** A tripwire for well-known destructive commands, checked before anything runs; no
approval overrides it. It is not a sandbox: a variable (``d=/; rm -rf $d``), ``cd / && rm -rf
*``, an encoded payload, a downloaded or written script all get past it, which is why ``shell``
also needs approval by default.

The built-in rules look at the command as ``/bin/sh`` will run it
(:mod:`bot.tools.builtin.shell_syntax`): every simple command, also inside ``$(…)``, ``sh -c``
and ``eval`` strings, as its program's argv after quotes, ``$HOME``/``~`` and wrappers such as
``sudo`` are resolved. ``rm -rf "$HOME"``, ``\\rm -r -f -- '/'``, ``sudo /bin/rm -rf //`` are
refused; the same words as data (``echo "rm -rf /"``, ``grep reboot notes``) are not.

A command that cannot be parsed (an unbalanced quote, bracket or ``fi``) is refused too:
``/bin/sh`` rejects it as well, but only after running the lines before the error, so letting
it through would run a part nobody checked. The refusal names a built-in rule when one of the
:data:`FALLBACK_DENY_PATTERNS` regexes matches the raw text, else says the command cannot be
parsed. Administrators' ``tools.shell.deny_patterns`` are regexes matched case-insensitively
against the raw command and against it with whitespace collapsed, whatever the parse says.

**Child environment.** An allow-list, not the daemon's environment minus a deny-list: a command
gets :data:`BASE_VARIABLES` and ``LC_*`` when the daemon has them, ``PWD`` set to the call's
workspace, and the variables ``tools.shell.env_passthrough`` names (exact names, or ``*``
globs such as ``PIP_*``). Nothing else: ``DATABASE_URL``, ``MYSQL_PWD``, ``SENTRY_DSN`` and
every other variable stay with the daemon unless an administrator names them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from bot.errors import ConfigError
from bot.scrub import is_secret_key
from bot.tools.builtin.shell_syntax import CommandSyntax, normalise_target, parse_command

UNPARSEABLE = "unparseable command"
"""The refusal label of a command :func:`parse_command` cannot read."""

SYSTEM_DIRECTORIES = re.compile(r"/(?:bin|boot|dev|etc|home|lib\w*|proc|root|sbin|sys|usr|var)")
"""Top-level directories a recursive ``rm``, ``chmod`` or ``chown`` may not target."""

_BLOCK_DEVICE = re.compile(r"/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-)")
_RM_FLAGS = r"(?:-{1,2}[\w-]+\s+)*"
_ROOTS = r"(?:/|/\*|~/?|~/\*|\$HOME/?|\$\{HOME\}/?|/(?:bin|boot|etc|lib\w*|usr|var|home|root)/?)"
_END = r"(?=$|[\s;&|)'\"])"
_CMD = (  # command position, optionally behind a wrapper
    r"(?:^|[;&|(`\n]|\$\()\s*"
    r"(?:(?:sudo|exec|nohup|command|env)\s+(?:-\S+\s+)*)*\\?(?:/usr)?(?:/s?bin/)?"
)

FALLBACK_DENY_PATTERNS: tuple[tuple[str, str], ...] = (
    (
        "recursive rm of /, $HOME or a system directory",
        rf"\brm\s+{_RM_FLAGS}-[\w-]*[rR][\w-]*\s+{_RM_FLAGS}['\"]?{_ROOTS}{_END}",
    ),
    ("rm --no-preserve-root", r"\brm\b.*--no-preserve-root"),
    ("fork bomb", r":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;?\s*:"),
    ("mkfs", rf"{_CMD}mkfs(?:\.\w+)?{_END}"),
    ("wipefs", rf"{_CMD}wipefs{_END}"),
    ("dd to a block device", r"\bdd\b[^;&|]*\bof=/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-)"),
    ("write to a block device", r">\s*/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk)\w*"),
    ("shutdown/reboot", rf"{_CMD}(?:shutdown|reboot|halt|poweroff){_END}"),
    ("init runlevel 0/6", r"\b(?:init|telinit)\s+[06]\b"),
    ("systemctl power action", r"\bsystemctl\s+(?:\S+\s+)*(?:poweroff|reboot|halt|kexec)\b"),
    (
        "recursive chmod/chown of / or a system directory",
        rf"\bch(?:mod|own|grp)\s+{_RM_FLAGS}-[\w-]*R[\w-]*\s+\S+\s+['\"]?/\*?{_END}",
    ),
)
"""The built-in rules as ``(label, regex)`` over the raw text, for a command that cannot be
parsed: they only choose the label of its refusal."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellPolicy:
    """The deny list: built-in rules over the parsed command plus the administrator's regexes.
    Build with :meth:`from_patterns`."""

    patterns: tuple[tuple[str, re.Pattern[str]], ...]

    @classmethod
    def from_patterns(cls, extra: Iterable[str] = ()) -> ShellPolicy:
        """The built-in rules plus ``tools.shell.deny_patterns``; a bad regex is a
        :class:`ConfigError` naming it."""
        patterns = []
        for index, rx in enumerate(extra):
            try:
                patterns.append((f"deny_patterns[{index}]", re.compile(rx, re.IGNORECASE)))
            except re.error as exc:
                raise ConfigError(
                    f"tools.shell.deny_patterns[{index}] is not a valid regex ({exc}): {rx!r}"
                ) from None
        return cls(patterns=tuple(patterns))

    def refusal(self, command: str) -> str | None:
        """The label of the first rule ``command`` breaks, or None when it may run."""
        syntax = parse_command(command)
        label = _built_in_refusal(syntax) if syntax.parsed else _fallback_refusal(command)
        if label is not None:
            return label
        flat = " ".join(command.split())
        for name, pattern in self.patterns:
            if pattern.search(flat) or pattern.search(command):
                return name
        return None if syntax.parsed else UNPARSEABLE


def _built_in_refusal(syntax: CommandSyntax) -> str | None:
    if syntax.forking_functions:
        return "fork bomb"
    if any(_BLOCK_DEVICE.match(normalise_target(path)) for path in syntax.written_files):
        return "write to a block device"
    for command in syntax.commands:
        for label, breaks in _ARGV_RULES:
            if breaks(command.argv):
                return label
    return None


def _fallback_refusal(command: str) -> str | None:
    flat = " ".join(command.split())
    for label, rx in FALLBACK_DENY_PATTERNS:
        if re.search(rx, flat, re.IGNORECASE) or re.search(rx, command, re.IGNORECASE):
            return label
    return None


def _options(args: Iterable[str]) -> tuple[list[str], list[str]]:
    """``(options, operands)`` as GNU tools read them: options anywhere, operands after
    ``--``."""
    options: list[str] = []
    operands: list[str] = []
    ended = False
    for arg in args:
        if not ended and arg == "--":
            ended = True
        elif not ended and arg.startswith("-") and arg != "-":
            options.append(arg)
        else:
            operands.append(arg)
    return options, operands


def _has_option(options: list[str], letters: str, long: str) -> bool:
    """A short option among ``letters`` (also in a cluster such as ``-rf``) or an unambiguous
    prefix of ``long`` (GNU accepts ``--recur``)."""
    return any(
        (opt.startswith("--") and len(opt) > 2 and long.startswith(opt.split("=", 1)[0]))
        or (not opt.startswith("--") and any(letter in opt[1:] for letter in letters))
        for opt in options
    )


def _protected(word: str, *, home: bool) -> bool:
    target = normalise_target(word)
    return target == "/" or (home and target == "~") or bool(SYSTEM_DIRECTORIES.fullmatch(target))


def _recursive_rm(argv: tuple[str, ...]) -> bool:
    if argv[0] != "rm":
        return False
    options, operands = _options(argv[1:])
    recursive = _has_option(options, "rR", "--recursive")
    return recursive and any(_protected(word, home=True) for word in operands)


def _no_preserve_root(argv: tuple[str, ...]) -> bool:
    options = _options(argv[1:])[0]
    return argv[0] == "rm" and any(
        len(opt) > 2 and "--no-preserve-root".startswith(opt) for opt in options
    )


def _recursive_chmod(argv: tuple[str, ...]) -> bool:
    if argv[0] not in ("chmod", "chown", "chgrp"):
        return False
    options, operands = _options(argv[1:])
    recursive = _has_option(options, "R", "--recursive")
    return recursive and any(_protected(word, home=False) for word in operands)


_ARGV_RULES: tuple[tuple[str, Callable[[tuple[str, ...]], bool]], ...] = (
    ("recursive rm of /, $HOME or a system directory", _recursive_rm),
    ("rm --no-preserve-root", _no_preserve_root),
    ("mkfs", lambda argv: bool(re.fullmatch(r"mkfs(?:\.\w+)?|mke2fs", argv[0]))),
    ("wipefs", lambda argv: argv[0] == "wipefs"),
    (
        "dd to a block device",
        lambda argv: (
            argv[0] == "dd"
            and any(a[:3] == "of=" and _BLOCK_DEVICE.match(normalise_target(a[3:])) for a in argv)
        ),
    ),
    (
        "write to a block device",
        lambda argv: (
            argv[0] == "tee" and any(_BLOCK_DEVICE.match(normalise_target(a)) for a in argv[1:])
        ),
    ),
    ("shutdown/reboot", lambda argv: argv[0] in ("shutdown", "reboot", "halt", "poweroff")),
    (
        "init runlevel 0/6",
        lambda argv: argv[0] in ("init", "telinit") and bool({"0", "6"} & set(argv[1:])),
    ),
    (
        "systemctl power action",
        lambda argv: (
            argv[0] == "systemctl"
            and bool({"poweroff", "reboot", "halt", "kexec", "soft-reboot"} & set(argv[1:]))
        ),
    ),
    ("recursive chmod/chown of / or a system directory", _recursive_chmod),
)
"""Built-in rules over one simple command's argv (``argv[0]`` a bare program name)."""

BASE_VARIABLES = frozenset(
    {"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TERM", "USER", "LOGNAME", "SHELL", "TMPDIR"}
)
"""Variables every command gets from the daemon's environment (with ``LC_*``) when set."""


def passes(name: str, passthrough: Iterable[str] = ()) -> bool:
    """Whether a command gets the variable ``name``: a base variable, ``LC_*``, or named by
    an entry of ``passthrough`` (an exact name or a ``*`` glob, case-sensitive)."""
    return (
        name in BASE_VARIABLES
        or name.startswith("LC_")
        or any(fnmatchcase(name, entry) for entry in passthrough)
    )


def child_environment(
    environ: Mapping[str, str], *, workspace: Path, passthrough: Iterable[str] = ()
) -> dict[str, str]:
    """The environment a command runs with: the variables of ``environ`` that :func:`passes`
    lets through, and ``PWD`` set to ``workspace``. Values are passed as they are."""
    entries = tuple(passthrough)
    env = {name: value for name, value in environ.items() if passes(name, entries)}
    env["PWD"] = str(workspace)
    return env


def secret_passthrough(passthrough: Iterable[str], environ: Mapping[str, str]) -> list[str]:
    """The entries of ``passthrough`` that look secret by name, and the variables of
    ``environ`` a glob entry lets through that do: what an administrator chose to expose."""
    entries = tuple(passthrough)
    found = {entry for entry in entries if is_secret_key(entry.replace("*", ""))}
    globs = [entry for entry in entries if "*" in entry]
    found.update(
        name
        for name in environ
        if is_secret_key(name) and any(fnmatchcase(name, entry) for entry in globs)
    )
    return sorted(found)
