"""A fake Slack on loopback, for driving slack-bolt / slack_sdk for real.

Serves the Web API at ``POST /api/{method}`` (JSON or form bodies, token in
``Authorization: Bearer``) and a Socket Mode websocket at ``/socket`` that
``apps.connections.open`` hands out. It records every call, can answer the next calls of a
method with ``429`` + ``Retry-After``, refuses wrong tokens with ``invalid_auth``, sends
``hello`` on connect, pushes ``events_api`` / ``interactive`` envelopes and records acks.

Also here: payload builders for events and clicks, request signing for HTTP mode, and
:class:`RecordingHost`, a real :class:`~bot.channel.ChannelHost` that records what it gets.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web
from slack_sdk.signature import SignatureVerifier

JSON = dict[str, Any]
BOT_USER = "UBOT"
BOT_ID = "BBOT"
TEAM = "T0001"


@dataclass(frozen=True, slots=True)
class ApiCall:
    method: str
    params: JSON
    status: int
    at: float = field(default_factory=time.monotonic)


def _decode(value: str) -> Any:
    """JSON-decode form fields that hold objects or arrays (``blocks``); keep the rest."""
    if not value.startswith(("{", "[")):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


class FakeSlack:
    """The fake server. Use as ``async with FakeSlack(bot_token, app_token) as slack:``."""

    def __init__(self, bot_token: str, app_token: str) -> None:
        self.bot_token = bot_token
        self.app_token = app_token
        self.calls: list[ApiCall] = []
        self.users: dict[str, JSON] = {}
        self.acks: dict[str, JSON] = {}
        self.connections = 0
        self._limits: dict[str, list[int]] = {}
        self._ts = itertools.count(1)
        self._socket: web.WebSocketResponse | None = None
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def __aenter__(self) -> FakeSlack:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/socket", self._ws)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    # -- test controls -------------------------------------------------------------------------

    def rate_limit_next(self, method: str, retry_after_s: int, times: int = 1) -> None:
        self._limits.setdefault(method, []).extend([retry_after_s] * times)

    def calls_of(self, method: str, status: int = 200) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method and c.status == status]

    async def _wait(self, ready: Callable[[], bool], wait_s: float) -> None:
        async with asyncio.timeout(wait_s), self._changed:
            await self._changed.wait_for(ready)

    async def wait_for(
        self,
        method: str,
        count: int = 1,
        where: Callable[[JSON], bool] = lambda _: True,
        wait_s: float = 10.0,
        status: int = 200,
    ) -> list[ApiCall]:
        """Wait until ``count`` calls of ``method`` answered with ``status`` (successful by
        default) and matching ``where`` arrived."""

        def found() -> list[ApiCall]:
            return [c for c in self.calls_of(method, status) if where(c.params)]

        await self._wait(lambda: len(found()) >= count, wait_s)
        return found()

    async def wait_connected(self, connections: int = 1, wait_s: float = 10.0) -> None:
        await self._wait(lambda: self.connections >= connections, wait_s)

    async def push(self, kind: str, payload: JSON, *, retry_attempt: int = 0) -> str:
        """Send one envelope over the socket; returns its ``envelope_id``."""
        assert self._socket is not None, "no socket mode client connected"
        envelope_id = uuid.uuid4().hex
        await self._socket.send_str(
            json.dumps(
                {
                    "envelope_id": envelope_id,
                    "type": kind,
                    "accepts_response_payload": kind != "events_api",
                    "retry_attempt": retry_attempt,
                    "retry_reason": "timeout" if retry_attempt else "",
                    "payload": payload,
                }
            )
        )
        return envelope_id

    async def wait_ack(self, envelope_id: str, wait_s: float = 3.0) -> JSON:
        await self._wait(lambda: envelope_id in self.acks, wait_s)
        return self.acks[envelope_id]

    async def drop_socket(self) -> None:
        if self._socket is not None:
            await self._socket.close()

    # -- the socket ----------------------------------------------------------------------------

    async def _ws(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._socket = ws
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1}))
        async with self._changed:
            self.connections += 1
            self._changed.notify_all()
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                data = _decode(msg.data)
                if isinstance(data, dict) and "envelope_id" in data:
                    async with self._changed:
                        self.acks[str(data["envelope_id"])] = data
                        self._changed.notify_all()
        return ws

    # -- the Web API ---------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: JSON = {k: _decode(v) for k, v in request.query.items()}
        if request.method == "GET":
            pass
        elif request.content_type == "application/json":
            params.update(await request.json())
        else:
            form = await request.post()
            params.update({k: _decode(v) for k, v in form.items() if isinstance(v, str)})
        token = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        status, body = self._answer(method, params, token)
        async with self._changed:
            self.calls.append(ApiCall(method=method, params=params, status=status))
            self._changed.notify_all()
        headers = {}
        if status == 429:
            headers["Retry-After"] = str(body.pop("retry_after"))
        return web.json_response(body, status=status, headers=headers)

    def _answer(self, method: str, params: JSON, token: str) -> tuple[int, JSON]:
        limits = self._limits.get(method)
        if limits:
            return 429, {"ok": False, "error": "ratelimited", "retry_after": limits.pop(0)}
        wanted = self.app_token if method == "apps.connections.open" else self.bot_token
        if token != wanted:
            return 200, {"ok": False, "error": "invalid_auth"}
        ts = f"{1700000000 + next(self._ts)}.000100"
        channel = params.get("channel", "")
        if method == "auth.test":
            return 200, {
                "ok": True,
                "url": "https://fake.slack.com/",
                "team": "Fake",
                "user": "hatchway",
                "team_id": TEAM,
                "user_id": BOT_USER,
                "bot_id": BOT_ID,
            }
        if method == "apps.connections.open":
            return 200, {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket"}
        if method == "chat.postMessage":
            return 200, {"ok": True, "channel": channel, "ts": ts, "message": {"ts": ts}}
        if method == "chat.update":
            return 200, {"ok": True, "channel": channel, "ts": params.get("ts")}
        if method == "chat.postEphemeral":
            return 200, {"ok": True, "message_ts": ts}
        if method == "users.info":
            user = self.users.get(str(params.get("user")))
            if user is None:
                return 200, {"ok": False, "error": "user_not_found"}
            return 200, {"ok": True, "user": user}
        return 200, {"ok": True}


# -- payload builders ------------------------------------------------------------------------------


def person(user_id: str, display_name: str) -> JSON:
    return {"id": user_id, "name": display_name.lower(), "profile": {"display_name": display_name}}


def event_callback(event: JSON, *, event_id: str | None = None) -> JSON:
    return {
        "token": "verification",
        "team_id": TEAM,
        "api_app_id": "A0001",
        "type": "event_callback",
        "event_id": event_id or f"Ev{uuid.uuid4().hex[:10].upper()}",
        "event_time": 1700000000,
        "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
        "event": event,
    }


def message_event(
    text: str,
    *,
    user: str = "UANN",
    channel: str = "C0001",
    ts: str = "1700000001.000200",
    kind: str = "message",
    **extra: Any,
) -> JSON:
    event: JSON = {"type": kind, "user": user, "text": text, "ts": ts, "channel": channel}
    if kind == "message":
        event["channel_type"] = {"D": "im", "G": "group"}.get(channel[:1], "channel")
    event.update(extra)
    return event


def block_actions(
    action_id: str, approval_id: str, *, user: str, channel: str, message_ts: str, **extra: Any
) -> JSON:
    return {
        "type": "block_actions",
        "team": {"id": TEAM},
        "user": {"id": user, "team_id": TEAM},
        "api_app_id": "A0001",
        "token": "verification",
        "trigger_id": "1.2.3",
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel, **extra},
        "channel": {"id": channel},
        "message": {"ts": message_ts, "type": "message", "text": "card"},
        "response_url": "https://hooks.invalid/actions",
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": "hatchway_approval",
                "value": approval_id,
                "action_ts": "1700000100.1",
            }
        ],
    }


def signed_headers(
    secret: str, body: str, *, timestamp: int | None = None, retry: int | None = None
) -> dict[str, str]:
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": str(signature),
    }
    if retry is not None:
        headers["X-Slack-Retry-Num"] = str(retry)
        headers["X-Slack-Retry-Reason"] = "http_timeout"
    return headers


def params_match(expected: Mapping[str, Any]) -> Callable[[JSON], bool]:
    """A ``where`` for :meth:`FakeSlack.wait_for`: every expected key has that value."""
    return lambda params: all(params.get(k) == v for k, v in expected.items())
