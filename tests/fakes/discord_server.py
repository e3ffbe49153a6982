"""A loopback fake of Discord's REST API and gateway, for driving the real discord.py.

The fake serves ``/api/v10/...`` REST routes and a ``/gateway`` WebSocket on 127.0.0.1. It
records every REST call (method, path, JSON body) and offers :meth:`FakeDiscord.wait_for_call`;
tests push gateway events with :meth:`FakeDiscord.dispatch` and the payload builders below.

Facts discord.py 2.7 relies on (see ``docs/design/channels.md``): REST replies carry
``Content-Type: application/json`` exactly; gateway frames are text; IDENTIFY is answered with
READY and then one GUILD_CREATE per guild; heartbeats (op 1) get op 11; an interaction
callback answers with an ``{"interaction": …, "resource": …}`` body.

Checks the real Discord makes and this fake makes too (a 400 with code 50035 or 40060): an
interaction is answered once, and only if it was dispatched; a MODAL callback (type 9) is
refused for a MODAL_SUBMIT and must carry a title (≤ 45), a ``custom_id`` (≤ 100) and one to
five text inputs (in a Label, type 18, or an action row); message components keep to five
per row, labels to 80 characters and unique ``custom_id`` s of at most 100.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from aiohttp import WSMsgType, web

from bot.channel import Channel, ChannelHost, HealthState
from tests.fakes.channel_health import wait_for_health
from tests.fakes.recording_host import RecordingHost as SharedRecordingHost
from tests.fakes.recording_host import approver_verdict

JSON = dict[str, Any]
TIMESTAMP = "2025-01-01T00:00:00.000000+00:00"
BOT_TOKEN = "fake-discord-token"


def _json(data: object, status: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"}
    )


def _invalid(message: str, code: int = 50035) -> web.Response:
    return _json({"message": message, "code": code}, 400)


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
    at: float = field(default_factory=time.monotonic)


@dataclass(slots=True, kw_only=True)
class FakeGuild:
    id: str
    name: str = "hatchway-test"
    channels: dict[str, str] = field(default_factory=dict)  # id -> name
    roles: dict[str, str] = field(default_factory=dict)  # id -> name (besides @everyone)
    threads: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (parent, owner)


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
        self.application_id = "900000000000000002"
        self.guilds: list[FakeGuild] = []
        self.calls: list[Call] = []
        self.messages: dict[str, JSON] = {}
        self.interactions: dict[str, int] = {}  # dispatched interaction id -> type
        self.modals: dict[str, JSON] = {}  # interaction id -> the modal it was answered with
        self._answered: set[str] = set()
        self.identify_close_code: int | None = None
        self.rate_limits: list[float] = []  # retry_after of the next REST replies, as 429s
        self.identifies = 0
        self.resumes = 0
        self.resume_gate = asyncio.Event()  # cleared by a test to hold RESUME unanswered
        self.resume_gate.set()
        self.base_url = ""
        self.gateway_url = ""
        self._ids = itertools.count(950_000_000_000_000_000)
        self._seq = itertools.count(1)
        self._ws: web.WebSocketResponse | None = None
        self._ws_ready = asyncio.Event()
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None

    # lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> FakeDiscord:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = cast(Any, site._server)
        port = server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/api/v10"
        self.gateway_url = f"ws://127.0.0.1:{port}/gateway"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

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
                "d": self.guild_payload(guild),
            }
            await ws.send_str(json.dumps(frame))
        self._ws_ready.set()

    # REST ------------------------------------------------------------------------------

    async def _rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        body: JSON | None = None
        if request.can_read_body:
            raw = await request.read()
            body = cast(JSON, json.loads(raw)) if raw else None
        self.calls.append(
            Call(method=request.method, path=path, body=body, query=dict(request.query))
        )
        try:
            if request.headers.get("Authorization") != f"Bot {self.token}" and not path.startswith(
                "/interactions/"
            ):
                return _json({"message": "401: Unauthorized", "code": 0}, 401)
            if self.rate_limits:
                return _rate_limited(self.rate_limits.pop(0))
            response = self._route(request.method, path, body or {})
            if response.status == 201 and path.endswith("/threads"):
                # Discord tells the creator's gateway about the new thread, as it does here.
                thread = json.loads(cast(bytes, response.body))
                await self.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
            return response
        finally:
            await self._notify()

    def _route(self, method: str, path: str, body: JSON) -> web.Response:
        if (method, path) == ("GET", "/users/@me"):
            return _json(self.bot_user)
        if (method, path) == ("GET", "/oauth2/applications/@me"):
            return _json(self.application_payload())
        if (m := re.fullmatch(r"/channels/(\d+)/messages", path)) and method == "POST":
            if problem := components_problem(body.get("components")):
                return _invalid(problem)
            return _json(self._store_message(m[1], body))
        if m := re.fullmatch(r"/channels/(\d+)/messages/(\d+)", path):
            stored = self.messages.get(m[2])
            if stored is None or stored["channel_id"] != m[1]:
                return _json({"message": "Unknown Message", "code": 10008}, 404)
            if method == "PATCH":
                if problem := components_problem(body.get("components")):
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
        return _json({"message": f"fake has no route {method} {path}", "code": 0}, 404)

    def _interaction_callback(self, interaction_id: str, body: JSON) -> web.Response:
        kind = self.interactions.get(interaction_id)
        if kind is None:
            return _json({"message": "Unknown interaction", "code": 10062}, 404)
        if interaction_id in self._answered:
            return _invalid("Interaction has already been acknowledged.", 40060)
        data = body.get("data")
        if body.get("type") == 9:
            if kind == 5:
                return _invalid("Invalid Form Body: a modal cannot answer a modal submit")
            if problem := modal_problem(data):
                return _invalid(problem)
            assert isinstance(data, dict)
            self.modals[interaction_id] = data
        self._answered.add(interaction_id)
        resource: JSON = {"type": body.get("type")}
        if isinstance(data, dict) and body.get("type") in (4, 7):
            resource["message"] = self._message_payload("0", data)
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

    # payloads --------------------------------------------------------------------------

    def application_payload(self) -> JSON:
        return {
            "id": self.application_id,
            "name": "hatchway",
            "icon": None,
            "description": "",
            "rpc_origins": [],
            "bot_public": True,
            "bot_require_code_grant": False,
            "verify_key": "0" * 64,
            "flags": 0,
            "team": None,
            "owner": {k: self.bot_user[k] for k in ("id", "username", "discriminator", "avatar")},
        }

    def guild_payload(self, guild: FakeGuild) -> JSON:
        everyone = {
            "id": guild.id,
            "name": "@everyone",
            "permissions": "0",
            "position": 0,
            "color": 0,
            "hoist": False,
            "managed": False,
            "mentionable": False,
        }
        roles: list[JSON] = [everyone] + [
            {**everyone, "id": rid, "name": name, "position": i + 1}
            for i, (rid, name) in enumerate(guild.roles.items())
        ]
        channels: list[JSON] = [
            {
                "id": cid,
                "type": 0,
                "name": name,
                "position": i,
                "guild_id": guild.id,
                "permission_overwrites": [],
                "nsfw": False,
                "parent_id": None,
            }
            for i, (cid, name) in enumerate(guild.channels.items())
        ]
        threads = [
            thread_payload(tid, parent, owner, guild.id)
            for tid, (parent, owner) in guild.threads.items()
        ]
        return {
            "id": guild.id,
            "name": guild.name,
            "owner_id": "1",
            "roles": roles,
            "channels": channels,
            "threads": threads,
            "emojis": [],
            "stickers": [],
            "features": [],
            "member_count": 2,
            "large": False,
            "unavailable": False,
            "voice_states": [],
            "presences": [],
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "premium_tier": 0,
            "preferred_locale": "en-US",
            "nsfw_level": 0,
            "joined_at": TIMESTAMP,
            "members": [
                {
                    "user": self.bot_user,
                    "roles": [],
                    "joined_at": TIMESTAMP,
                    "deaf": False,
                    "mute": False,
                    "flags": 0,
                }
            ],
        }


def components_problem(rows: object) -> str | None:
    """Why Discord would refuse these message components (action rows of buttons), or None."""
    if rows is None:
        return None
    if not isinstance(rows, list) or len(rows) > 5:
        return "components: at most 5 action rows"
    seen: set[str] = set()
    for row in rows:
        children = row.get("components") if isinstance(row, dict) else None
        if row.get("type") != 1 or not isinstance(children, list) or not 1 <= len(children) <= 5:
            return "components: an action row holds 1 to 5 components"
        for child in children:
            custom_id = child.get("custom_id")
            if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= 100:
                return "components: custom_id must be 1 to 100 characters"
            if custom_id in seen:
                return "components: custom_id values must be unique"
            seen.add(custom_id)
            if len(str(child.get("label") or "")) > 80:
                return "components: a button label is at most 80 characters"
    return None


def _text_input_problem(field: object, *, labelled: bool) -> str | None:
    if not isinstance(field, dict) or field.get("type") != 4:
        return "a modal field must be a text input (type 4)"
    custom_id = field.get("custom_id")
    if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= 100:
        return "a text input needs a custom_id of 1 to 100 characters"
    if field.get("style") not in (1, 2):
        return "a text input style is 1 (short) or 2 (paragraph)"
    if not 0 <= int(field.get("min_length", 0)) <= int(field.get("max_length", 4000)) <= 4000:
        return "text input lengths must satisfy 0 <= min_length <= max_length <= 4000"
    if not labelled and not 1 <= len(str(field.get("label") or "")) <= 45:
        return "a text input outside a Label needs a label of 1 to 45 characters"
    return None


def modal_problem(data: object) -> str | None:
    """Why Discord would refuse this MODAL callback ``data``, or None."""
    if not isinstance(data, dict):
        return "a modal callback needs data"
    custom_id, title = data.get("custom_id"), data.get("title")
    if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= 100:
        return "modal custom_id must be 1 to 100 characters"
    if not isinstance(title, str) or not 1 <= len(title) <= 45:
        return "modal title must be 1 to 45 characters"
    components = data.get("components")
    if not isinstance(components, list) or not 1 <= len(components) <= 5:
        return "a modal holds 1 to 5 components"
    for component in components:
        kind = component.get("type") if isinstance(component, dict) else None
        if kind == 18:
            if not 1 <= len(str(component.get("label") or "")) <= 45:
                return "a Label needs a label of 1 to 45 characters"
            problem = _text_input_problem(component.get("component"), labelled=True)
        elif kind == 1 and len(component.get("components") or []) == 1:
            problem = _text_input_problem(component["components"][0], labelled=False)
        else:
            problem = "a modal component is a Label (18) or an action row (1) of one input"
        if problem:
            return problem
    return None


def thread_payload(thread_id: str, parent_id: str, owner_id: str, guild_id: str | None) -> JSON:
    """A public thread channel object."""
    return {
        "id": thread_id,
        "type": 11,
        "parent_id": parent_id,
        "name": "thread",
        "owner_id": owner_id,
        "guild_id": guild_id,
        "message_count": 0,
        "member_count": 1,
        "rate_limit_per_user": 0,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": TIMESTAMP,
            "locked": False,
        },
    }


def user_payload(user_id: str, name: str, *, bot: bool = False) -> JSON:
    return {
        "id": user_id,
        "username": name,
        "discriminator": "0",
        "global_name": name,
        "avatar": None,
        "bot": bot,
    }


def message_payload(
    *,
    id: str,
    channel_id: str,
    author: JSON,
    content: str,
    guild_id: str | None = None,
    mentions: list[JSON] | None = None,
    member_roles: list[str] | None = None,
    referenced: JSON | None = None,
    attachments: list[JSON] | None = None,
) -> JSON:
    """A MESSAGE_CREATE payload (and the shape of REST message replies)."""
    payload: JSON = {
        "id": id,
        "channel_id": channel_id,
        "author": author,
        "content": content,
        "timestamp": TIMESTAMP,
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": mentions or [],
        "mention_roles": [],
        "attachments": attachments or [],
        "embeds": [],
        "pinned": False,
        "type": 0,
        "flags": 0,
        "components": [],
    }
    if guild_id is not None:
        payload["guild_id"] = guild_id
        payload["member"] = {
            "roles": member_roles or [],
            "joined_at": TIMESTAMP,
            "deaf": False,
            "mute": False,
            "flags": 0,
        }
    if referenced is not None:
        payload["type"] = 19
        payload["referenced_message"] = referenced
        payload["message_reference"] = {
            "message_id": referenced["id"],
            "channel_id": referenced["channel_id"],
        }
    return payload


def component_interaction(
    *,
    id: str,
    message: JSON,
    custom_id: str,
    user: JSON,
    guild_id: str | None = None,
    roles: list[str] | None = None,
    application_id: str = "900000000000000002",
) -> JSON:
    """An INTERACTION_CREATE payload for a button (type 3, component_type 2) on ``message``."""
    data: JSON = {"custom_id": custom_id, "component_type": 2}
    return _interaction(
        id=id,
        kind=3,
        channel_id=message["channel_id"],
        message=message,
        data=data,
        user=user,
        guild_id=guild_id,
        roles=roles,
        application_id=application_id,
    )


def modal_submit_interaction(
    *,
    id: str,
    custom_id: str,
    values: Mapping[str, str],
    user: JSON,
    channel_id: str,
    message: JSON | None = None,
    guild_id: str | None = None,
    roles: list[str] | None = None,
    in_labels: bool = True,
    application_id: str = "900000000000000002",
) -> JSON:
    """An INTERACTION_CREATE payload for a submitted modal (type 5): one text input per value,
    each in a Label (type 18, ``in_labels``) or an action row (type 1). ``message`` is the
    message whose button opened the modal (Discord includes it in that case)."""
    components: list[JSON] = []
    for n, (field_id, value) in enumerate(values.items()):
        text: JSON = {"type": 4, "id": 2 * n + 2, "custom_id": field_id, "value": value}
        if in_labels:
            components.append({"type": 18, "id": 2 * n + 1, "component": text})
        else:
            components.append({"type": 1, "id": 2 * n + 1, "components": [text]})
    return _interaction(
        id=id,
        kind=5,
        channel_id=channel_id,
        message=message,
        data={"custom_id": custom_id, "components": components},
        user=user,
        guild_id=guild_id,
        roles=roles,
        application_id=application_id,
    )


def _interaction(
    *,
    id: str,
    kind: int,
    channel_id: str,
    message: JSON | None,
    data: JSON,
    user: JSON,
    guild_id: str | None,
    roles: list[str] | None,
    application_id: str,
) -> JSON:
    channel_type = 0 if guild_id else 1
    payload: JSON = {
        "id": id,
        "application_id": application_id,
        "type": kind,
        "token": f"itoken{id}",
        "version": 1,
        "channel_id": channel_id,
        "channel": {"id": channel_id, "type": channel_type},
        "data": data,
        "locale": "en-US",
        "app_permissions": "0",
        "entitlements": [],
        "authorizing_integration_owners": {},
        "attachment_size_limit": 8_388_608,
    }
    if message is not None:
        payload["message"] = message
    if guild_id is not None:
        payload["guild_id"] = guild_id
        payload["guild_locale"] = "en-US"
        payload["member"] = {
            "user": user,
            "roles": roles or [],
            "joined_at": TIMESTAMP,
            "deaf": False,
            "mute": False,
            "permissions": "0",
            "flags": 0,
        }
    else:
        payload["user"] = user
    return payload


def reaction_add(
    *,
    message: JSON,
    user: JSON,
    emoji: str,
    guild_id: str | None = None,
    roles: list[str] | None = None,
) -> JSON:
    """A MESSAGE_REACTION_ADD payload for a unicode ``emoji`` on ``message``."""
    payload: JSON = {
        "user_id": user["id"],
        "channel_id": message["channel_id"],
        "message_id": message["id"],
        "emoji": {"id": None, "name": emoji},
        "burst": False,
        "type": 0,
    }
    if guild_id is not None:
        payload["guild_id"] = guild_id
        payload["member"] = {
            "user": user,
            "roles": roles or [],
            "joined_at": TIMESTAMP,
            "deaf": False,
            "mute": False,
            "flags": 0,
        }
    return payload


# test-side helpers -------------------------------------------------------------------------


class RecordingHost(SharedRecordingHost):
    """The shared recording host, answering clicks like the approval rules would: ACCEPTED
    for configured approvers (user id or role) on a pending id, NOT_AUTHORISED for others,
    UNKNOWN for ids it does not hold."""

    def __init__(
        self,
        *,
        approvers: Sequence[str] = (),
        approver_roles: Sequence[str] = (),
        pending: Sequence[str] = (),
    ) -> None:
        super().__init__(
            approver_verdict(approvers=approvers, approver_roles=approver_roles, pending=pending)
        )


@asynccontextmanager
async def running(channel: Channel, host: ChannelHost) -> AsyncIterator[asyncio.Task[None]]:
    """Run ``channel`` until the block ends (then cancel it and wait for it to stop)."""
    task = asyncio.create_task(channel.run(host))
    try:
        await wait_for_health(channel, HealthState.CONNECTED, HealthState.FAILED)
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
