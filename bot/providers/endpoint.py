"""A provider's endpoint as people are shown it: the chat banner, ``daemon_ready``, the line
a user reads when the provider cannot be reached.

:func:`shown_url` keeps what identifies the server (scheme, host, port, path) and drops what
a URL may carry that is not for showing: a user name and password, the query (some
gateways take the key there) and the fragment.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

#: Where a provider of each kind is reached when ``base_url`` is not set.
DEFAULT_ENDPOINTS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}


def shown_url(url: str) -> str:
    """``url`` without credentials, query or fragment; "" for what is not a URL at all."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return ""
    if not parts.scheme or not host:
        return ""
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
