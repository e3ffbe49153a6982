"""Shell policy: the hard deny list and the child environment.

The deny list is a tripwire for well-known destructive commands, checked before anything runs;
no approval overrides it. It is not a sandbox: a determined command (``eval``, encoded
payloads, a script file) can get past any list of patterns, which is why ``shell`` also needs
approval by default. Administrators add their own regexes with ``tools.shell.deny_patterns``.

The child environment keeps what commands need (``PATH``, ``HOME``, locale, terminal) and drops
the daemon's own configuration and every variable that looks secret by name or by value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bot.errors import ConfigError
from bot.scrub import is_secret_key, scrub_text

_RM_FLAGS = r"(?:-{1,2}[\w-]+\s+)*"
_ROOTS = r"(?:/|/\*|~/?|~/\*|\$HOME/?|\$\{HOME\}/?|/(?:bin|boot|etc|lib\w*|usr|var|home|root)/?)"
_END = r"(?=$|[\s;&|)])"
# command position: start, after a separator or substitution, optionally behind a wrapper
_CMD = (
    r"(?:^|[;&|(`\n]|\$\()\s*"
    r"(?:(?:sudo|exec|nohup|command|env)\s+(?:-\S+\s+)*)*"
    r"(?:/usr)?(?:/s?bin/)?"
)

DEFAULT_DENY_PATTERNS: tuple[tuple[str, str], ...] = (
    (
        "recursive rm of / or $HOME",
        rf"\brm\s+{_RM_FLAGS}-[\w-]*[rR][\w-]*\s+{_RM_FLAGS}{_ROOTS}{_END}",
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
        "recursive chmod/chown of /",
        rf"\bch(?:mod|own)\s+{_RM_FLAGS}-[\w-]*R[\w-]*\s+\S+\s+/\*?{_END}",
    ),
)
"""Built-in deny rules as ``(label, regex)``; matched case-insensitively against the command
with whitespace collapsed."""

KEPT_VARIABLES = frozenset(
    {
        "PATH",
        "HOME",
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_CTYPE",
        "TERM",
        "TZ",
        "USER",
        "LOGNAME",
        "SHELL",
        "TMPDIR",
    }
)
"""Variables a command keeps even when another rule would drop them."""

DROPPED_PREFIXES = (
    "HATCHWAY_",
    "OPENAI_",
    "ANTHROPIC_",
    "AWS_",
    "AZURE_",
    "GOOGLE_",
    "GCP_",
    "SLACK_",
    "DISCORD_",
    "TELEGRAM_",
)

_SECRETISH_NAME = re.compile(r"(?i)(key|pass|secret|token|cred|auth|private|cookie|session)")


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellPolicy:
    """Compiled deny rules. Build with :meth:`from_patterns`."""

    rules: tuple[tuple[str, re.Pattern[str]], ...]

    @classmethod
    def from_patterns(cls, extra: Iterable[str] = ()) -> ShellPolicy:
        """The default rules plus the administrator's ``tools.shell.deny_patterns``; a bad
        regex is a :class:`ConfigError` naming it."""
        rules = [(label, re.compile(rx, re.IGNORECASE)) for label, rx in DEFAULT_DENY_PATTERNS]
        for index, rx in enumerate(extra):
            try:
                rules.append((f"deny_patterns[{index}]", re.compile(rx, re.IGNORECASE)))
            except re.error as exc:
                raise ConfigError(
                    f"tools.shell.deny_patterns[{index}] is not a valid regex ({exc}): {rx!r}"
                ) from None
        return cls(rules=tuple(rules))

    def refusal(self, command: str) -> str | None:
        """The label of the first rule ``command`` matches, or None when it may run."""
        flat = " ".join(command.split())
        for label, pattern in self.rules:
            if pattern.search(flat) or pattern.search(command):
                return label
        return None


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a command runs with: ``environ`` without the daemon's configuration
    (``HATCHWAY_*``, provider and platform prefixes) and without any variable whose name or
    value looks secret. ``PATH``, ``HOME`` and the locale are always kept."""
    env: dict[str, str] = {}
    for name, value in environ.items():
        if name in KEPT_VARIABLES:
            env[name] = value
            continue
        upper = name.upper()
        if upper.startswith(DROPPED_PREFIXES):
            continue
        if is_secret_key(name) or _SECRETISH_NAME.search(name):
            continue
        if scrub_text(value) != value:
            continue
        env[name] = value
    return env
