"""A loopback fake of Discord's REST API and gateway, for driving the real discord.py.

The fake serves ``/api/v10/...`` REST routes and a ``/gateway`` WebSocket on 127.0.0.1. It
records every REST call (method, path, JSON body) and offers :meth:`FakeDiscord.wait_for_call`;
tests push gateway events with :meth:`FakeDiscord.dispatch`.

Facts discord.py 2.7 relies on (see ``docs/design/channels.md``): REST replies carry
``Content-Type: application/json`` exactly; gateway frames are text; IDENTIFY is answered with
READY and then one GUILD_CREATE per guild; heartbeats (op 1) get op 11; an interaction
callback answers with an ``{"interaction": …, "resource": …}`` body.

Interaction follow-ups (``POST /webhooks/<application>/<interaction token>``, tokens are
``itoken<interaction id>``) are taken once the interaction was answered (or deferred, type
5); every follow-up is kept, in order, in :attr:`FakeDiscord.follow_ups`, and the ephemeral
ones (flag 64, or the first after an ephemeral deferral, which takes its place) with the
ephemeral responses in :attr:`FakeDiscord.ephemerals`. A follow-up is edited, and a
deferred response deleted (:attr:`FakeDiscord.deleted_responses`), through
``/webhooks/<application>/<token>/messages/<id or @original>``. Multipart uploads are read
into ``payload_json`` and :attr:`Call.files`.

Application commands: a bulk overwrite (``PUT /applications/<id>/commands``, or
``…/guilds/<guild>/commands``) is checked like Discord checks it and kept in
:attr:`FakeDiscord.commands` by guild id (None for the global ones).

Checks the real Discord makes and this fake makes too (a 400 with code 50035 or 40060, a 404
with 10015): an interaction is answered once, and only if it was dispatched; a follow-up
only after the answer; a MODAL callback (type 9) is refused for a MODAL_SUBMIT; content,
components and modals keep to :mod:`tests.fakes.discord_limits`.
Payload builders are in :mod:`tests.fakes.discord_payloads`; guild members, channel lookups,
private thread members and DMs with users are :attr:`FakeDiscord.people`
(:mod:`tests.fakes.discord_members`). :attr:`FakeDiscord.failing` makes every call to
matching paths fail with a status (503: discord.py does not retry it).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

from aiohttp import WSMsgType, web

from tests.fakes.discord_limits import commands_problem, message_problem, modal_problem
from tests.fakes.discord_members import People
from tests.fakes.discord_payloads import (
    APPLICATION_ID,
    JSON,
    TIMESTAMP,
    FakeGuild,
    application_payload,
    guild_payload,
    message_payload,
    registered_command,
    thread_payload,
)
from tests.fakes.loopback import LoopbackServer

BOT_TOKEN = "fake-discord-token"
EPHEMERAL = 64  # message flag


def _json(data: object, status: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"}
    )


def _invalid(message: str, code: int = 50035) -> web.Response:
    return _json({"message": message, "code": code}, 400)


async def _read_body(request: web.Request) -> tuple[JSON | None, dict[str, bytes]]:
    """The JSON body; for a multipart upload its ``payload_json`` and the files by name."""
    if not request.can_read_body:
        return None, {}
    if request.content_type.startswith("multipart/"):
        form = await request.post()
        files = {f.filename: f.file.read() for f in form.values() if isinstance(f, web.FileField)}
        payload = form.get("payload_json")
        return (cast(JSON, json.loads(str(payload))) if payload else None), files
    raw = await request.read()
    return (cast(JSON, json.loads(raw)) if raw else None), {}


def _rate_limited(retry_after: float) -> web.Response:
    body = {"message": "You are being rate limited.", "retry_after": retry_after, "global": False}
    headers = {"Content-Type": "application/json", "Via": "1.1 google", "X-RateLimit-Scope": "user"}
    return web.Response(body=json.dumps(body).encode(), status=429, headers=headers)


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One REST request the fake received, and when (``time.monotonic()``, once its body was
    read)."""

    method: str
    path: str
    body: JSON | None
    query: Mapping[str, str]
    files: Mapping[str, bytes] = field(default_factory=dict)  # multipart uploads, by name
    at: float = field(default_factory=time.monotonic)


class FakeDiscord:
    """The fake platform. Use as ``async with FakeDiscord() as fake``."""

    def __init__(self, *, token: str = BOT_TOKEN, bot_id: str = "900000000000000001") -> None:
        self.token = token
        self.bot_user: JSON = {
            "id": bot_id,
            "username": "hatchway",
            "discriminator": "0",
            "global_name": None,
            "avatar": None,
            "bot": True,
        }
        self.application_id = APPLICATION_ID
        self.guilds: list[FakeGuild] = []
        self.calls: list[Call] = []
        self.messages: dict[str, JSON] = {}
        self.interactions: dict[str, int] = {}  # dispatched interaction id -> type
        self.interaction_channels: dict[str, str] = {}  # dispatched interaction id -> channel
        #: Messages only the interaction's user sees (ephemeral responses and follow-ups), in
        #: order, by interaction id.
        self.ephemerals: dict[str, list[JSON]] = {}
        self.modals: dict[str, JSON] = {}  # interaction id -> the modal it was answered with
        #: Every follow-up message, in order, by interaction id.
        self.follow_ups: dict[str, list[JSON]] = {}
        self.deferred: dict[str, int] = {}  # interaction id -> flags of its deferral (type 5)
        self.deleted_responses: set[str] = set()  # interaction ids whose response was deleted
        #: Registered application commands by guild id (None: global), as the last bulk
        #: overwrite set them.
        self.commands: dict[str | None, list[JSON]] = {}
        self._answered: set[str] = set()
        self.identify_close_code: int | None = None
        self.rate_limits: list[float] = []  # retry_after of the next REST replies, as 429s
        self.failing: dict[str, int] = {}  # path regex -> HTTP status every such call gets
        self.people = People(self.new_id)
        self.identifies = 0
        self.resumes = 0
        self.resume_gate = asyncio.Event()  # cleared by a test to hold RESUME unanswered
        self.resume_gate.set()
        self._ids = itertools.count(950_000_000_000_000_000)
        self._seq = itertools.count(1)
        self._ws: web.WebSocketResponse | None = None
        self._ws_ready = asyncio.Event()
        self._changed = asyncio.Condition()
        self._server = LoopbackServer()

    # lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> FakeDiscord:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        await self._server.start(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._ws is not None:
            await self._ws.close()
        await self._server.aclose()

    @property
    def base_url(self) -> str:
        return self._server.url("/api/v10")

    @property
    def gateway_url(self) -> str:
        return self._server.url("/gateway", scheme="ws")

    def new_id(self) -> str:
        return str(next(self._ids))

    def add_guild(
        self,
        *,
        channels: Mapping[str, str],
        roles: Mapping[str, str] | None = None,
        threads: Mapping[str, tuple[str, str]] | None = None,
        guild_id: str | None = None,
    ) -> FakeGuild:
        guild = FakeGuild(
            id=guild_id or self.new_id(),
            channels=dict(channels),
            roles=dict(roles or {}),
            threads=dict(threads or {}),
        )
        self.guilds.append(guild)
        return guild

    # waiting ---------------------------------------------------------------------------

    async def wait_for_call(
        self, method: str, path_regex: str, *, count: int = 1, within: float = 10.0
    ) -> list[Call]:
        """Wait until ``count`` calls matching method and path (regex, full match) arrived."""
        pattern = re.compile(path_regex)

        def matching() -> list[Call]:
            return [c for c in self.calls if c.method == method and pattern.fullmatch(c.path)]

        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: len(matching()) >= count)
        return matching()

    async def wait_until(self, predicate: Callable[[], bool], *, within: float = 10.0) -> None:
        """Wait until ``predicate`` holds; it is re-checked after every REST call."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(predicate)

    def posted(self, channel_id: str) -> list[str]:
        """The contents of every message posted to ``channel_id``, in order."""
        return [
            str(c.body.get("content"))
            for c in self.calls_to("POST", rf"/channels/{channel_id}/messages")
            if c.body is not None
        ]

    def calls_to(self, method: str, path_regex: str) -> list[Call]:
        pattern = re.compile(path_regex)
        return [c for c in self.calls if c.method == method and pattern.fullmatch(c.path)]

    async def wait_for_gateway(self, *, identifies: int = 1, within: float = 10.0) -> None:
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: self.identifies >= identifies)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # gateway ---------------------------------------------------------------------------

    async def dispatch(self, event: str, data: JSON) -> None:
        """Send one DISPATCH (op 0) event to the connected client."""
        await asyncio.wait_for(self._ws_ready.wait(), 10)
        assert self._ws is not None
        if event == "INTERACTION_CREATE":
            self.interactions[str(data["id"])] = int(data["type"])
            self.interaction_channels[str(data["id"])] = str(data["channel_id"])
        frame = {"op": 0, "s": next(self._seq), "t": event, "d": data}
        await self._ws.send_str(json.dumps(frame))

    async def drop_connection(self, code: int = 4000) -> None:
        """Close the gateway socket with ``code`` (4000: unknown error, resumable)."""
        ws = self._ws
        self._ws_ready.clear()
        if ws is not None:
            await ws.close(code=code)

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._ws = ws
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 45_000}}))
        async for msg in ws:
            if msg.type is not WSMsgType.TEXT:
                continue
            payload = json.loads(msg.data)
            op = payload.get("op")
            if op == 1:
                await ws.send_str(json.dumps({"op": 11}))
            elif op == 2:
                await self._identify(ws, payload["d"])
            elif op == 6:
                await self.resume_gate.wait()
                self.resumes += 1
                self._ws_ready.set()
                frame = {"op": 0, "s": next(self._seq), "t": "RESUMED", "d": {}}
                await ws.send_str(json.dumps(frame))
                await self._notify()
        return ws

    async def _identify(self, ws: web.WebSocketResponse, data: JSON) -> None:
        self.identifies += 1
        await self._notify()
        if data.get("token") != self.token or self.identify_close_code is not None:
            await ws.close(code=self.identify_close_code or 4004)
            return
        ready = {
            "v": 10,
            "user": self.bot_user,
            "session_id": "fake-session",
            "resume_gateway_url": self.gateway_url,
            "shard": [0, 1],
            "guilds": [{"id": g.id, "unavailable": True} for g in self.guilds],
            "application": {"id": self.application_id, "flags": 0},
        }
        await ws.send_str(json.dumps({"op": 0, "s": next(self._seq), "t": "READY", "d": ready}))
        for guild in self.guilds:
            frame = {
                "op": 0,
                "s": next(self._seq),
                "t": "GUILD_CREATE",
                "d": guild_payload(guild, self.bot_user),
            }
            await ws.send_str(json.dumps(frame))
        self._ws_ready.set()

    # REST ------------------------------------------------------------------------------

    async def _rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        body, files = await _read_body(request)
        self.calls.append(
            Call(
                method=request.method, path=path, body=body, query=dict(request.query), files=files
            )
        )
        try:
            # Interaction callbacks and follow-ups are authorised by the interaction token.
            by_token = path.startswith(("/interactions/", "/webhooks/"))
            if request.headers.get("Authorization") != f"Bot {self.token}" and not by_token:
                return _json({"message": "401: Unauthorized", "code": 0}, 401)
            if self.rate_limits:
                return _rate_limited(self.rate_limits.pop(0))
            failing = [status for rx, status in self.failing.items() if re.fullmatch(rx, path)]
            if failing:
                return _json({"message": "Service Unavailable", "code": 0}, failing[0])
            commands = re.fullmatch(
                rf"/applications/{self.application_id}(?:/guilds/(\d+))?/commands", path
            )
            if commands is not None and request.method == "PUT":
                return self._overwrite_commands(commands[1], body)  # a list, not an object
            response = self._route(request.method, path, body or {}, request.query)
            if response.status == 201 and path.endswith("/threads"):
                # Discord tells the creator's gateway about the new thread, as it does here.
                thread = json.loads(cast(bytes, response.body))
                await self.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
            return response
        finally:
            await self._notify()

    def _route(self, method: str, path: str, body: JSON, query: Mapping[str, str]) -> web.Response:
        if (answer := self.people.route(method, path, body, self.guilds)) is not None:
            return _json(answer[1], answer[0])
        if (method, path) == ("GET", "/users/@me"):
            return _json(self.bot_user)
        if (method, path) == ("GET", "/oauth2/applications/@me"):
            return _json(application_payload(self.application_id, self.bot_user))
        if (m := re.fullmatch(r"/channels/(\d+)/messages", path)) and method == "POST":
            if problem := message_problem(body):
                return _invalid(problem)
            return _json(self._store_message(m[1], body))
        if m := re.fullmatch(r"/channels/(\d+)/messages/(\d+)", path):
            stored = self.messages.get(m[2])
            if stored is None or stored["channel_id"] != m[1]:
                return _json({"message": "Unknown Message", "code": 10008}, 404)
            if method == "PATCH":
                if problem := message_problem(body):
                    return _invalid(problem)
                stored.update({k: body[k] for k in ("content", "components") if k in body})
                stored["edited_timestamp"] = TIMESTAMP
            return _json(stored)
        if re.fullmatch(r"/channels/\d+/messages/\d+/reactions/[^/]+/@me", path):
            return web.Response(status=204)
        if re.fullmatch(r"/channels/\d+/typing", path):
            return web.Response(status=204)
        if m := re.fullmatch(r"/channels/(\d+)/messages/(\d+)/threads", path):
            thread = thread_payload(m[2], m[1], self.bot_user["id"], self.guild_of(m[1]))
            for guild in self.guilds:
                if m[1] in guild.channels:
                    guild.threads[m[2]] = (m[1], self.bot_user["id"])
            return _json({**thread, "name": body.get("name", "")}, 201)
        if m := re.fullmatch(r"/interactions/(\d+)/[^/]+/callback", path):
            return self._interaction_callback(m[1], body)
        if (m := re.fullmatch(r"/webhooks/\d+/itoken(\d+)", path)) and method == "POST":
            return self._follow_up(m[1], body, wait=query.get("wait") in ("1", "true"))
        if m := re.fullmatch(r"/webhooks/\d+/itoken(\d+)/messages/(\d+|@original)", path):
            return self._webhook_message(method, m[1], m[2], body)
        return _json({"message": f"fake has no route {method} {path}", "code": 0}, 404)

    def _interaction_callback(self, interaction_id: str, body: JSON) -> web.Response:
        kind = self.interactions.get(interaction_id)
        if kind is None:
            return _json({"message": "Unknown interaction", "code": 10062}, 404)
        if interaction_id in self._answered:
            return _invalid("Interaction has already been acknowledged.", 40060)
        data = body.get("data")
        is_message = isinstance(data, dict) and body.get("type") in (4, 7)
        if is_message and (problem := message_problem(data)):
            return _invalid(problem)
        if body.get("type") == 9:
            if kind == 5:
                return _invalid("Invalid Form Body: a modal cannot answer a modal submit")
            if problem := modal_problem(data):
                return _invalid(problem)
            assert isinstance(data, dict)
            self.modals[interaction_id] = data
        self._answered.add(interaction_id)
        if body.get("type") == 5:
            self.deferred[interaction_id] = int((data or {}).get("flags", 0))
        resource: JSON = {"type": body.get("type")}
        if isinstance(data, dict) and body.get("type") in (4, 7):
            resource["message"] = self._message_payload("0", data)
        if isinstance(data, dict) and body.get("type") == 4 and data.get("flags", 0) & EPHEMERAL:
            self._keep_ephemeral(interaction_id, data)
        return _json(
            {
                "interaction": {
                    "id": interaction_id,
                    "type": kind,
                    "response_message_ephemeral": bool(
                        isinstance(data, dict) and data.get("flags", 0) & 64
                    ),
                },
                "resource": resource,
            }
        )

    def _follow_up(self, interaction_id: str, body: JSON, *, wait: bool) -> web.Response:
        """A follow-up message: only after the interaction was answered (or deferred)."""
        if interaction_id not in self._answered:
            return _json({"message": "Unknown Webhook", "code": 10015}, 404)
        if problem := message_problem(body):
            return _invalid(problem)
        first = interaction_id not in self.follow_ups
        deferral = self.deferred.get(interaction_id, 0) if first else 0
        if (int(body.get("flags", 0)) | deferral) & EPHEMERAL:
            message = self._keep_ephemeral(interaction_id, {**body, "flags": EPHEMERAL})
        else:
            channel_id = self.interaction_channels.get(interaction_id, "0")
            message = self._store_message(channel_id, body)
        self.follow_ups.setdefault(interaction_id, []).append(message)
        return _json(message) if wait else web.Response(status=204)

    def _webhook_message(
        self, method: str, interaction_id: str, message_id: str, body: JSON
    ) -> web.Response:
        """Edit a follow-up, or delete the original (deferred) response."""
        if interaction_id not in self._answered:
            return _json({"message": "Unknown Webhook", "code": 10015}, 404)
        if method == "DELETE" and message_id == "@original":
            self.deleted_responses.add(interaction_id)
            return web.Response(status=204)
        sent = [m for m in self.follow_ups.get(interaction_id, []) if m["id"] == message_id]
        if method != "PATCH" or not sent:
            return _json({"message": "Unknown Message", "code": 10008}, 404)
        if problem := message_problem(body):
            return _invalid(problem)
        sent[0].update({k: body[k] for k in ("content", "components") if k in body})
        sent[0]["edited_timestamp"] = TIMESTAMP
        return _json(sent[0])

    def _overwrite_commands(self, guild_id: str | None, body: object) -> web.Response:
        if problem := commands_problem(body):
            return _invalid(problem)
        assert isinstance(body, list)
        registered = [
            registered_command(c, self.application_id, self.new_id(), guild_id) for c in body
        ]
        self.commands[guild_id] = registered
        return _json(registered)

    def _keep_ephemeral(self, interaction_id: str, body: JSON) -> JSON:
        channel_id = self.interaction_channels.get(interaction_id, "0")
        message = self._message_payload(channel_id, body)
        message["flags"] = int(body.get("flags", 0))
        message["attachments"] = [
            {"id": str(n), "filename": a.get("filename", "")}
            for n, a in enumerate(body.get("attachments") or [])
        ]
        self.ephemerals.setdefault(interaction_id, []).append(message)
        return message

    def _store_message(self, channel_id: str, body: JSON) -> JSON:
        message = self._message_payload(channel_id, body)
        self.messages[message["id"]] = message
        return message

    def _message_payload(self, channel_id: str, body: JSON) -> JSON:
        payload = message_payload(
            id=self.new_id(),
            channel_id=channel_id,
            author=self.bot_user,
            content=str(body.get("content") or ""),
            guild_id=self.guild_of(channel_id),
        )
        payload["components"] = body.get("components") or []
        return payload

    def guild_of(self, channel_id: str) -> str | None:
        for guild in self.guilds:
            if channel_id in guild.channels or channel_id in guild.threads:
                return guild.id
        return None
