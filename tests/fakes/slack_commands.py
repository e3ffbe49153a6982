"""Slash commands on the fake Slack: payloads as Slack sends them, and response URLs.

:class:`ResponseUrls` serves ``POST /commands/{key}`` like Slack's ``hooks.slack.com``
response URLs: a JSON body with ``text``, at most five posts per URL (then ``404
used_url``), ``404 expired_url`` once expired (:meth:`ResponseUrls.expire_all`), and every
post recorded. :func:`slash_payload` is the flat payload of one invocation (a form over HTTP,
the envelope's ``payload`` over Socket Mode).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from tests.fakes.slack_blocks import block_problems

JSON = dict[str, Any]

#: What Slack allows per response URL.
USES = 5


@dataclass(frozen=True, slots=True)
class ResponsePost:
    key: str
    body: JSON


class ResponseUrls:
    """The response URLs handed out with slash commands, and what was posted to them."""

    def __init__(self, changed: asyncio.Condition) -> None:
        self.posts: list[ResponsePost] = []
        self.refused: list[str] = []
        self._uses: dict[str, int] = {}
        self._expired: set[str] = set()
        self._changed = changed

    def issue(self) -> str:
        key = uuid.uuid4().hex
        self._uses[key] = 0
        return key

    def expire_all(self) -> None:
        self._expired.update(self._uses)

    def to(self, key: str) -> list[JSON]:
        return [p.body for p in self.posts if p.key == key]

    async def handle(self, request: web.Request) -> web.Response:
        key = request.match_info["key"]
        if key not in self._uses:
            return await self._refuse(key, 404, "invalid_url")
        if key in self._expired:
            return await self._refuse(key, 404, "expired_url")
        if self._uses[key] >= USES:
            return await self._refuse(key, 404, "used_url")
        if not request.content_type.startswith("application/json"):
            return await self._refuse(key, 400, "invalid_payload")
        body = await request.json()
        if not isinstance(body, dict) or not str(body.get("text") or "").strip():
            return await self._refuse(key, 400, "no_text")
        if body.get("blocks") and block_problems(body["blocks"]):
            return await self._refuse(key, 400, "invalid_blocks")
        self._uses[key] += 1
        async with self._changed:
            self.posts.append(ResponsePost(key=key, body=body))
            self._changed.notify_all()
        return web.Response(text="ok")

    async def _refuse(self, key: str, status: int, word: str) -> web.Response:
        async with self._changed:
            self.refused.append(key)
            self._changed.notify_all()
        return web.Response(status=status, text=word)


def slash_payload(
    text: str,
    *,
    user: str,
    channel: str,
    response_url: str,
    trigger_id: str,
    channel_name: str = "",
    handle: str = "",
    command: str = "/hatchway",
    team_id: str = "T0001",
    api_app_id: str = "A0001",
) -> JSON:
    """What Slack sends when ``user`` types ``{command} {text}`` in ``channel``; its
    ``user_name`` is their handle (``handle``, else the id in lower case), not the name Slack
    shows for them."""
    if not channel_name:
        channel_name = {"D": "directmessage", "G": "privategroup"}.get(channel[:1], "general")
    return {
        "token": "verification",
        "team_id": team_id,
        "team_domain": "fake",
        "channel_id": channel,
        "channel_name": channel_name,
        "user_id": user,
        "user_name": handle or user.lower(),
        "command": command,
        "text": text,
        "api_app_id": api_app_id,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id,
    }


def as_form(payload: JSON) -> str:
    """The payload as Slack posts it to a request URL (``x-www-form-urlencoded``)."""
    return urlencode({k: v if isinstance(v, str) else json.dumps(v) for k, v in payload.items()})
