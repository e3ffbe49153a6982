"""Checks on the HTML the Telegram channel renders, as Telegram's parser would judge it."""

from __future__ import annotations

import re

_TAG = re.compile(r"<(/?)([a-z]+)[^>]*>")
_ALLOWED = {"b", "i", "s", "code", "pre", "a", "blockquote"}


def balanced(rendered: str) -> bool:
    """Every tag closed, in order."""
    stack: list[str] = []
    for closing, name in _TAG.findall(rendered):
        if not closing:
            stack.append(name)
        elif not stack or stack.pop() != name:
            return False
    return not stack


def well_formed(rendered: str) -> bool:
    """Only Telegram's tags, properly nested, and no bare ``<``/``>``/``&`` outside them."""
    if any(name not in _ALLOWED for _, name in _TAG.findall(rendered)):
        return False
    text = _TAG.sub("", rendered)
    bare_amp = re.search(r"&(?!amp;|lt;|gt;|quot;)", text)
    return balanced(rendered) and "<" not in text and ">" not in text and bare_amp is None
