"""What a page says after an action: Post/Redirect/Get.

Every form that changes something posts, acts, and answers ``303 See Other`` back to its page
with ``?done=<what>&ref=<which>``, so a reload never posts twice. The page then shows one of
its own fixed sentences for ``done`` with ``ref`` filled in (a grant's id, a job's id, a
pairing code): a link cannot make a page say anything else, and the value is escaped like any
other text.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode

from aiohttp import web

from bot.visible_text import visible
from bot.webconsole.sessions import PREFIX
from bot.webconsole.sign_in import see_other

MAX_REF_CHARS = 80


def done(path: str, what: str, ref: str = "") -> web.Response:
    """The answer to a POST: back to ``PREFIX + path``, saying ``what`` about ``ref``."""
    query = {"done": what, **({"ref": ref[:MAX_REF_CHARS]} if ref else {})}
    return see_other(f"{PREFIX}{path}?{urlencode(query)}")


def notice(request: web.Request, sentences: Mapping[str, str]) -> str | None:
    """The sentence the request's ``done`` names, with its ``ref``; None for none."""
    sentence = sentences.get(request.query.get("done", ""))
    if sentence is None:
        return None
    return sentence.format(ref=visible(request.query.get("ref", "")[:MAX_REF_CHARS]))
