"""What the fake Discord's REST routes read and answer, in Discord's shapes: a JSON body (or a
multipart upload's ``payload_json`` and files), a JSON answer with exactly
``Content-Type: application/json`` (discord.py checks it), Discord's 400 for a form it refuses
(code 50035, :class:`~tests.fakes.discord_limits.FormError`), for a body that is not JSON
(code 50109) and its 429.
"""

from __future__ import annotations

import json
from typing import cast

from aiohttp import web

from tests.fakes.discord_limits import FormError
from tests.fakes.discord_payloads import JSON


def json_answer(data: object, status: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"}
    )


def invalid(problem: FormError) -> web.Response:
    """Discord's 400 for a form it refuses (code 50035 and the field's errors)."""
    return json_answer(problem.body(), 400)


class InvalidJson(ValueError):
    """A body Discord cannot read as JSON (its 400, code 50109)."""


def _loads(raw: str | bytes) -> JSON | None:
    try:
        return cast(JSON, json.loads(raw)) if raw else None
    except ValueError as error:
        raise InvalidJson(str(error)) from error


async def read_body(request: web.Request) -> tuple[JSON | None, dict[str, bytes]]:
    """The JSON body; for a multipart upload its ``payload_json`` and the files by name.
    Raises :class:`InvalidJson` for a body that is not JSON."""
    if not request.can_read_body:
        return None, {}
    if request.content_type.startswith("multipart/"):
        form = await request.post()
        files = {f.filename: f.file.read() for f in form.values() if isinstance(f, web.FileField)}
        payload = form.get("payload_json")
        return (_loads(str(payload)) if payload else None), files
    return _loads(await request.read()), {}


def rate_limited(retry_after: float) -> web.Response:
    body = {"message": "You are being rate limited.", "retry_after": retry_after, "global": False}
    headers = {"Content-Type": "application/json", "Via": "1.1 google", "X-RateLimit-Scope": "user"}
    return web.Response(body=json.dumps(body).encode(), status=429, headers=headers)
