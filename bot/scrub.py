"""Secret scrubbing: nothing secret reaches logs, events, audit rows, cards or progress lines.

Two rules: values under secret-looking keys are masked whole, and secret-looking substrings
(bearer tokens, platform tokens, API keys, and every secret value the daemon loaded from its
environment) are masked wherever they appear in text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

MASK = "***"

_SECRET_KEY = re.compile(
    r"(pass(word|wd|phrase)?|secret|token|api[_-]?key|apikey|auth(orization)?|credential|"
    r"private[_-]?key|cookie|session[_-]?id|signature|access[_-]?key)",
    re.IGNORECASE,
)

_SECRET_PATTERNS = [
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\bsk-(?:ant-)?[A-Za-z0-9_-]{12,}"),  # OpenAI / Anthropic keys
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{8,}"),  # Slack bot/user tokens
    re.compile(r"\bxapp-[A-Za-z0-9-]{8,}"),  # Slack app tokens
    re.compile(r"\b\d{6,12}:[A-Za-z0-9_-]{30,}"),  # Telegram bot tokens
    re.compile(r"\b[A-Za-z0-9_-]{24,28}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}"),  # Discord
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub tokens
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
    re.compile(
        r"(?i)\b[A-Za-z0-9_.-]*(password|passwd|secret|token|api[_-]?key)\s*[=:]\s*['\"]?"
        r"[^\s'\"&]{4,}"
    ),
]

_known_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a secret value the daemon loaded (tokens, keys) so it is masked anywhere."""
    if value and len(value) >= 6:
        _known_secrets.add(value)


def register_secrets(values: Iterable[str | None]) -> None:
    for value in values:
        register_secret(value)


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def scrub_text(text: str) -> str:
    """Mask secret-looking substrings and known secret values in free text."""
    for secret in _known_secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(_mask_match, text)
    return text


def _mask_match(match: re.Match[str]) -> str:
    found = match.group(0)
    # keep the key name of "key=value" forms so the text stays readable
    for sep in ("=", ":"):
        if sep in found and not found.lower().startswith("bearer"):
            head = found.split(sep, 1)[0]
            if is_secret_key(head):
                return f"{head}{sep}{MASK}"
    if found.lower().startswith("bearer"):
        return f"Bearer {MASK}"
    return MASK


def scrub_value(value: object, *, key: str = "") -> object:
    """Scrub a JSON-like value: secret keys masked whole, strings scrubbed, containers walked."""
    if key and is_secret_key(key) and value not in (None, "", [], {}):
        return MASK
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, Mapping):
        return {str(k): scrub_value(v, key=str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_value(v) for v in value]
    return value


def scrub_mapping(arguments: Mapping[str, object]) -> dict[str, object]:
    return {str(k): scrub_value(v, key=str(k)) for k, v in arguments.items()}
