"""What an approver is shown of an ``http_fetch`` that needs a yes (a POST): the request as it
will be sent, one fact a line, instead of its headers and body as one JSON value.

:func:`request_lines` gives (raw: the card masks secrets in them, escapes control and format
characters and shows at most 40 of them; a cut card is approved only from the full view,
which shows every line):

* ``request headers (N):`` and then ``  Name: value`` for every header sent, the tool's own
  included (User-Agent, Accept, Content-Type); a header whose name says it holds a secret
  (``Authorization``, ``Cookie``, ``X-Api-Key`` …) shows ``***`` and the visible marker;
* ``body: TYPE, N bytes, M lines`` and the body a line each after ``| ``, or ``body: none``.
  A JSON body is laid out with its keys in the order written (a key written twice is shown
  twice: a server may read either), values under secret keys masked and numbers as written;
  it says ``laid out``, and how many bytes the body is as sent. Any other body is shown as
  written, split at its line feeds (a CR shows as ``\\r``).

The URL and the method stay argument lines of their own (look-alike hosts are marked there).
A header the tool refuses (``Host``, a line break in a value) refuses the call before any
card, as running it would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from bot.approval.summary import MASKED_NOTE
from bot.scrub import MASK, is_secret_key
from bot.tools.laid_out import json_lines, parsed_json
from bot.tools.spec import CallPreview

#: The arguments the lines show whole: the card does not list them again.
COVERS = ("body", "content_type", "headers")
BODY_PREFIX = "| "
#: Headers whose value is a credential whatever their name's words say.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})


def _count(count: int, word: str) -> str:
    return f"{count:,} {word}{'s' if count != 1 else ''}"


def body_lines(body: str | None, content_type: str) -> list[str]:
    """The ``body:`` line and the body's lines (module docstring)."""
    if body is None:
        return ["body: none"]
    size = _count(len(body.encode("utf-8", "surrogatepass")), "byte")
    parsed = parsed_json(body) if "json" in content_type.lower() else None
    if parsed is None:
        lines = body.split("\n")  # only at line feeds: a CR or U+2028 stays visible
        head = f"body: {content_type}, {size}, {_count(len(lines), 'line')}:"
        return [head, *(BODY_PREFIX + line for line in lines)]
    laid_out, masked = json_lines(parsed)
    note = f"  {MASKED_NOTE}" if masked else ""
    head = f"body: {content_type}, {size} as sent, laid out in {_count(len(laid_out), 'line')}:"
    return [head + note, *(BODY_PREFIX + line for line in laid_out)]


def request_lines(method: str, headers: Mapping[str, str], body: str | None) -> list[str]:
    """Every line the card shows below the URL and method (module docstring): ``headers``
    as the tool will send them, and ``body`` when the method sends one."""
    lines = [f"request headers ({len(headers)}):"]
    for name, value in headers.items():
        secret = name.lower() in SECRET_HEADERS or is_secret_key(name)
        lines.append(f"  {name}: {MASK}  {MASKED_NOTE}" if secret else f"  {name}: {value}")
    if method != "POST":
        return lines
    return lines + body_lines(body, headers.get("Content-Type", ""))


async def preview(method: str, headers: Mapping[str, str], body: str | None) -> CallPreview:
    """The request's lines for the card (:func:`request_lines`), laid out in a worker thread
    (a body may be a megabyte)."""
    lines = await asyncio.to_thread(request_lines, method, headers, body)
    return CallPreview(diff=tuple(lines), covers=COVERS)
