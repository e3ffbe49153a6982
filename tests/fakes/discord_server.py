"""A loopback fake of Discord's REST API and gateway, for driving the real discord.py.

The fake serves ``/api/v10/...`` REST routes and a ``/gateway`` WebSocket on 127.0.0.1. It
records every REST call (method, path, JSON body) and offers :meth:`FakeDiscord.wait_for_call`;
tests push gateway events with :meth:`FakeDiscord.dispatch`.

Facts discord.py 2.7 relies on (see ``docs/design/channels.md``): REST replies carry
``Content-Type: application/json`` exactly; gateway frames are text; IDENTIFY is answered with
READY and then one GUILD_CREATE per guild; heartbeats (op 1) get op 11; an interaction
callback answers with an ``{"interaction": …, "resource": …}`` body.

Files (:mod:`tests.fakes.discord_files`, :attr:`FakeDiscord.cdn`): attachments at signed
URLs that expire, served on the fake's own origin (404 once expired or revoked), renewed by
fetching their message again; a message the bot posts with files (multipart) keeps them as
attachments there, over the guild's upload limit it is refused (413, code 40005), and an
empty message without a file is refused (code 50006).

Interactions (callbacks, follow-ups kept in :attr:`FakeDiscord.follow_ups`, ephemeral
messages in :attr:`FakeDiscord.ephemerals`, deleted responses) are
:mod:`tests.fakes.discord_interactions`'s. Multipart uploads are read into ``payload_json``
and :attr:`Call.files`.

Application commands: a bulk overwrite (``PUT /applications/<id>/commands``, or
``…/guilds/<guild>/commands``) is checked like Discord checks it and kept in
:attr:`FakeDiscord.commands` by guild id (None for the global ones).

Content, nonces, embeds, components and modals keep to :mod:`tests.fakes.discord_limits` (the
limits in :mod:`tests.fakes.limits`); anything else gets Discord's 400 with code 50035,
``Invalid Form Body`` and the field's ``errors``. A message of embeds alone is accepted; a
reply to a message the fake does not know is refused unless ``fail_if_not_exists`` is false.
Payload builders are in :mod:`tests.fakes.discord_payloads`; guild members, channel lookups,
private thread members and DMs with users are :attr:`FakeDiscord.people`
(:mod:`tests.fakes.discord_members`). :attr:`FakeDiscord.failing` makes every call to matching
paths fail with a status (503: discord.py does not retry it).

Messages and sessions (:mod:`tests.fakes.discord_history`): ids are snowflakes of their
moment; every message created (by REST, or dispatched as MESSAGE_CREATE, or
:meth:`FakeDiscord.post`) is in its channel's history (``GET /channels/{id}/messages``) and
counts for the channel's ``last_message_id``; a message without a guild opens its DM
channel. A create with a nonce Discord has seen from the bot lately returns the earlier
message. Each IDENTIFY starts a session; events of :meth:`FakeDiscord.post`,
:meth:`~FakeDiscord.edit_message` and :meth:`~FakeDiscord.delete_message` made while no
client is connected are replayed to a session that RESUMEs, and lost to a new one, as
with Discord; :meth:`FakeDiscord.drop_session` ends the session, so the client's RESUME is
answered INVALID_SESSION (op 9, not resumable) and it must IDENTIFY again.

Gateway clients may be told apart by a URL of their own (:meth:`FakeDiscord.gateway_url_for`):
:attr:`FakeDiscord.identified_by` names the client of each IDENTIFY, and
:attr:`FakeDiscord.most_sockets_at_once` is the most gateway sockets ever open together
(Discord would send every event to each of them).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import cast

from aiohttp import WSMsgType, web

from tests.fakes.discord_files import UPLOAD_LIMITS, FakeCdn
from tests.fakes.discord_history import Nonces, Snowflakes, history_page
from tests.fakes.discord_interactions import Interactions
from tests.fakes.discord_limits import (
    FormError,
    commands_problem,
    is_empty,
    message_problem,
    unsent_problem,
)
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
    user_payload,
)
from tests.fakes.discord_rest import InvalidJson, invalid, json_answer, rate_limited, read_body
from tests.fakes.loopback import LoopbackServer

BOT_TOKEN = "fake-discord-token"
#: Discord's codes for a request that breaks its rules: an invalid form, an empty message,
#: a body that is not JSON.
_RULES = frozenset({50035, 50006, 50109})


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
        self.bot_user: JSON = user_payload(bot_id, "hatchway", bot=True)
        self.application_id = APPLICATION_ID
        self.guilds: list[FakeGuild] = []
        self.calls: list[Call] = []
        #: every REST call answered 400, with the answer's body, in order
        self.refused: list[tuple[Call, JSON]] = []
        self.messages: dict[str, JSON] = {}
        self.interactions = Interactions(make=self._message_payload, store=self._store_message)
        # (the interactions' records, by interaction id, under their old names)
        self.ephemerals = self.interactions.ephemerals
        self.follow_ups = self.interactions.follow_ups
        self.deleted_responses = self.interactions.deleted_responses
        #: Registered application commands by guild id (None: global), as the last bulk
        #: overwrite set them.
        self.commands: dict[str | None, list[JSON]] = {}
        self.identify_close_code: int | None = None
        self.rate_limits: list[float] = []  # retry_after of the next REST replies, as 429s
        self.failing: dict[str, int] = {}  # path regex -> HTTP status every such call gets
        self.people = People(self.new_id)
        self.cdn = FakeCdn(lambda: self._server.origin, self.new_id)
        self.identifies = 0
        self.resumes = 0
        self.resume_gate = asyncio.Event()  # cleared by a test to hold RESUME unanswered
        self.resume_gate.set()
        self.login_gate = asyncio.Event()  # cleared by a test to hold the login unanswered
        self.login_gate.set()
        self.invalid_sessions = 0  # RESUMEs answered with INVALID_SESSION
        self.identified_by: list[str] = []  # the client of each IDENTIFY ("" by default URL)
        self.open_sockets = 0
        self.most_sockets_at_once = 0
        self._session: str | None = None  # the session a RESUME may continue
        self._missed: list[tuple[str, JSON]] = []  # events made while no client was connected
        self._ids = Snowflakes()
        self._nonces = Nonces()
        self._seq = itertools.count(1)
        self._ws: web.WebSocketResponse | None = None
        self._ws_ready = asyncio.Event()
        self._changed = asyncio.Condition()
        self._server = LoopbackServer()

    # lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> FakeDiscord:
        # Bodies up to the largest upload Discord takes (aiohttp's default is 1 MiB).
        app = web.Application(client_max_size=max(UPLOAD_LIMITS.values()) + 2**20)
        app.router.add_get("/gateway", self._gateway)
        app.router.add_get("/gateway/{client}", self._gateway)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        app.router.add_get("/attachments/{channel}/{attachment}/{name}", self.cdn.serve)
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

    def gateway_url_for(self, client: str) -> str:
        """The gateway URL of the client named ``client`` (its IDENTIFYs are marked so)."""
        return self._server.url(f"/gateway/{client}", scheme="ws")

    def new_id(self) -> str:
        return self._ids.next()

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
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: len(self.calls_to(method, path_regex)) >= count)
        return self.calls_to(method, path_regex)

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
        """Send one DISPATCH (op 0) event to the connected client (waiting for one). A
        MESSAGE_CREATE's message is kept in its channel's history too. A message Discord
        never sends (ids not snowflake strings, no author) is a ``ValueError``. An interaction
        outside a guild makes its channel the bot's DM with its user, as a message there does."""
        if event in ("MESSAGE_CREATE", "MESSAGE_UPDATE") and (problem := unsent_problem(data)):
            raise ValueError(f"Discord never sends this {event}: {problem}")
        if event == "MESSAGE_CREATE":
            self._keep(data)
        await asyncio.wait_for(self._ws_ready.wait(), 10)
        assert self._ws is not None
        if event == "INTERACTION_CREATE":
            self.interactions.dispatched(data)
            if "guild_id" not in data and (channel := data.get("channel_id")):
                # used in the bot's DM with the user: that DM channel exists
                user = data.get("user") or {}
                self.people.dm_channels.setdefault(str(channel), str(user.get("id", "")))
        frame = {"op": 0, "s": next(self._seq), "t": event, "d": data}
        await self._ws.send_str(json.dumps(frame))

    async def post(self, message: JSON) -> None:
        """Someone posts ``message`` (a MESSAGE_CREATE payload): kept in the history, and
        sent to the client when one is connected (else replayed only to a resumed session)."""
        self._keep(message)
        await self._event("MESSAGE_CREATE", message)

    async def edit_message(self, message_id: str, content: str) -> JSON:
        """Its author edits a message: the stored message changes, MESSAGE_UPDATE (the
        whole message, with its edit time) goes out like :meth:`post`'s event."""
        message = self.messages[message_id]
        message["content"] = content
        message["mentions"] = [  # Discord reads them from the new text
            self.bot_user if uid == self.bot_user["id"] else self.people.user(uid)
            for uid in dict.fromkeys(re.findall(r"<@!?(\d+)>", content))
        ]
        message["edited_timestamp"] = datetime.now(UTC).isoformat()
        await self._event("MESSAGE_UPDATE", dict(message))
        return message

    async def delete_message(self, message_id: str) -> None:
        """A message is deleted: gone from the history; MESSAGE_DELETE goes out."""
        message = self.messages.pop(message_id)
        data = {"id": message_id, "channel_id": message["channel_id"]}
        if "guild_id" in message:
            data["guild_id"] = message["guild_id"]
        await self._event("MESSAGE_DELETE", data)

    async def _event(self, event: str, data: JSON) -> None:
        if self._ws_ready.is_set():
            await self.dispatch(event, data)
        else:
            self._missed.append((event, data))

    async def drop_session(self) -> None:
        """End the client's session and drop its connection: Discord will not resume it."""
        self._session = None
        await self.drop_connection()

    async def drop_connection(self, code: int = 4000) -> None:
        """Close the gateway socket with ``code`` (4000: unknown error, resumable)."""
        ws = self._ws
        self._ws_ready.clear()
        if ws is not None:
            await ws.close(code=code)

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        client = request.match_info.get("client", "")
        self._ws = ws
        self.open_sockets += 1
        self.most_sockets_at_once = max(self.most_sockets_at_once, self.open_sockets)
        try:
            await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 45_000}}))
            async for msg in ws:
                if msg.type is not WSMsgType.TEXT:
                    continue
                payload = json.loads(msg.data)
                op = payload.get("op")
                if op == 1:
                    await ws.send_str(json.dumps({"op": 11}))
                elif op == 2:
                    self.identified_by.append(client)
                    await self._identify(ws, payload["d"])
                elif op == 6:
                    await self._resume(ws, payload["d"])
        finally:
            self.open_sockets -= 1
        if self._ws is ws:
            self._ws_ready.clear()
        return ws

    async def _resume(self, ws: web.WebSocketResponse, data: JSON) -> None:
        await self.resume_gate.wait()
        if self._session is None or data.get("session_id") != self._session:
            self.invalid_sessions += 1
            await ws.send_str(json.dumps({"op": 9, "d": False}))
            await self._notify()
            return
        self.resumes += 1
        self._ws_ready.set()
        frame = {"op": 0, "s": next(self._seq), "t": "RESUMED", "d": {}}
        await ws.send_str(json.dumps(frame))
        missed, self._missed = self._missed, []
        for event, event_data in missed:
            await self.dispatch(event, event_data)
        await self._notify()

    async def _identify(self, ws: web.WebSocketResponse, data: JSON) -> None:
        self.identifies += 1
        await self._notify()
        if data.get("token") != self.token or self.identify_close_code is not None:
            await ws.close(code=self.identify_close_code or 4004)
            return
        self._session = f"fake-session-{self.identifies}"
        self._missed = []  # a new session hears nothing of what happened before it
        ready = {
            "v": 10,
            "user": self.bot_user,
            "session_id": self._session,
            "resume_gateway_url": self.gateway_url,
            "shard": [0, 1],
            "guilds": [{"id": g.id, "unavailable": True} for g in self.guilds],
            "application": {"id": self.application_id, "flags": 0},
        }
        await ws.send_str(json.dumps({"op": 0, "s": next(self._seq), "t": "READY", "d": ready}))
        for guild in self.guilds:
            payload = guild_payload(guild, self.bot_user)
            for channel in [*payload["channels"], *payload["threads"]]:
                channel["last_message_id"] = self._last_message_id(channel["id"])
            frame = {"op": 0, "s": next(self._seq), "t": "GUILD_CREATE", "d": payload}
            await ws.send_str(json.dumps(frame))
        self._ws_ready.set()

    # REST ------------------------------------------------------------------------------

    async def _rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        if (request.method, path) == ("GET", "/users/@me"):
            await self.login_gate.wait()  # discord.py's login: the gateway comes after it
        try:
            body, files = await read_body(request)
        except InvalidJson:
            body = {"message": "The request body contains invalid JSON.", "code": 50109}
            return json_answer(body, 400)
        self.calls.append(
            Call(
                method=request.method, path=path, body=body, query=dict(request.query), files=files
            )
        )
        try:
            # Interaction callbacks and follow-ups are authorised by the interaction token.
            by_token = path.startswith(("/interactions/", "/webhooks/"))
            if request.headers.get("Authorization") != f"Bot {self.token}" and not by_token:
                return json_answer({"message": "401: Unauthorized", "code": 0}, 401)
            if self.rate_limits:
                return rate_limited(self.rate_limits.pop(0))
            failing = [status for rx, status in self.failing.items() if re.fullmatch(rx, path)]
            if failing:
                return json_answer({"message": "Service Unavailable", "code": 0}, failing[0])
            commands = re.fullmatch(
                rf"/applications/{self.application_id}(?:/guilds/(\d+))?/commands", path
            )
            if commands is not None and request.method == "PUT":
                response = self._overwrite_commands(commands[1], body)  # a list, not an object
                if response.status == 400:
                    self.refused.append((self.calls[-1], json.loads(cast(bytes, response.body))))
                return response
            if body is not None and not isinstance(body, dict):
                shape = FormError(
                    "", "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType"
                )
                return invalid(shape)
            response = self._route(request.method, path, body or {}, request.query, files)
            if response.status == 400:
                self.refused.append((self.calls[-1], json.loads(cast(bytes, response.body))))
            if response.status == 201 and path.endswith("/threads"):
                # Discord tells the creator's gateway about the new thread, as it does here.
                thread = json.loads(cast(bytes, response.body))
                await self.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
            return response
        finally:
            await self._notify()

    def _route(
        self,
        method: str,
        path: str,
        body: JSON,
        query: Mapping[str, str],
        files: Mapping[str, bytes],
    ) -> web.Response:
        if (answer := self.people.route(method, path, body, self.guilds)) is not None:
            if answer[0] == 200 and re.fullmatch(r"/channels/\d+", path):
                channel_id = path.rsplit("/", 1)[1]
                return json_answer(
                    {**answer[1], "last_message_id": self._last_message_id(channel_id)}
                )
            return json_answer(answer[1], answer[0])
        if (method, path) == ("GET", "/users/@me"):
            return json_answer(self.bot_user)
        if (method, path) == ("GET", "/oauth2/applications/@me"):
            return json_answer(application_payload(self.application_id, self.bot_user))
        if (m := re.fullmatch(r"/channels/(\d+)/messages", path)) and method == "POST":
            if problem := message_problem(body):
                return invalid(problem)
            if is_empty(body, files):
                return json_answer({"message": "Cannot send an empty message", "code": 50006}, 400)
            if problem := self._reference_problem(body):
                return invalid(problem)
            if sum(map(len, files.values())) > self.upload_limit(m[1]):
                return json_answer({"message": "Request entity too large", "code": 40005}, 413)
            return json_answer(self._create_message(m[1], body, files))
        if (m := re.fullmatch(r"/channels/(\d+)/messages", path)) and method == "GET":
            if self.guild_of(m[1]) is None and m[1] not in self.people.dm_channels:
                return json_answer({"message": "Unknown Channel", "code": 10003}, 404)
            page = history_page(self.messages.values(), m[1], query)
            return invalid(page) if isinstance(page, FormError) else json_answer(page)
        if m := re.fullmatch(r"/channels/(\d+)/messages/(\d+)", path):
            stored = self.messages.get(m[2])
            if stored is None or stored["channel_id"] != m[1]:
                return json_answer({"message": "Unknown Message", "code": 10008}, 404)
            if method == "PATCH":
                if problem := message_problem(body):
                    return invalid(problem)
                kept = ("content", "components", "embeds")
                stored.update({k: body[k] for k in kept if k in body})
                stored["edited_timestamp"] = TIMESTAMP
            return json_answer(self.cdn.renew(stored) if method == "GET" else stored)
        if re.fullmatch(r"/channels/\d+/messages/\d+/reactions/[^/]+/@me", path):
            return web.Response(status=204)
        if re.fullmatch(r"/channels/\d+/typing", path):
            return web.Response(status=204)
        if m := re.fullmatch(r"/channels/(\d+)/messages/(\d+)/threads", path):
            thread = thread_payload(m[2], m[1], self.bot_user["id"], self.guild_of(m[1]))
            for guild in self.guilds:
                if m[1] in guild.channels:
                    guild.threads[m[2]] = (m[1], self.bot_user["id"])
            return json_answer({**thread, "name": body.get("name", "")}, 201)
        if (by_token := self.interactions.route(method, path, body, query)) is not None:
            status, data = by_token
            return web.Response(status=204) if data is None else json_answer(data, status)
        return json_answer({"message": f"fake has no route {method} {path}", "code": 0}, 404)

    def _overwrite_commands(self, guild_id: str | None, body: object) -> web.Response:
        if problem := commands_problem(body):
            return invalid(problem)
        assert isinstance(body, list)
        registered = [
            registered_command(c, self.application_id, self.new_id(), guild_id) for c in body
        ]
        self.commands[guild_id] = registered
        return json_answer(registered)

    @property
    def rule_refusals(self) -> list[tuple[Call, JSON]]:
        """The calls refused for breaking Discord's rules (an invalid form, an empty message,
        a body that is not JSON): never expected from hatchway; the channel tests' fixture
        checks it stays empty."""
        return [(call, body) for call, body in self.refused if body.get("code") in _RULES]

    def upload_limit(self, channel_id: str) -> int:
        """The most a message posted in ``channel_id`` may carry in files."""
        guild_id = self.guild_of(channel_id)
        tiers = [g.premium_tier for g in self.guilds if g.id == guild_id]
        return UPLOAD_LIMITS[tiers[0] if tiers else None]

    def _create_message(
        self, channel_id: str, body: JSON, files: Mapping[str, bytes] | None = None
    ) -> JSON:
        """A message the bot posts: one it made with the same nonce lately, under
        ``enforce_nonce``, instead of a second; a reply when it names one; its files as
        attachments on the fake's CDN."""
        nonce = str(body["nonce"]) if body.get("nonce") is not None else None
        author = str(self.bot_user["id"])
        if nonce is not None and body.get("enforce_nonce"):
            earlier = self._nonces.earlier(channel_id, author, nonce)
            if earlier is not None and earlier in self.messages:
                return self.messages[earlier]
        message = self._store_message(channel_id, body)
        message["attachments"] = self.cdn.uploaded(channel_id, files or {})
        reference = body.get("message_reference")
        known = isinstance(reference, dict) and str(reference.get("message_id")) in self.messages
        if isinstance(reference, dict) and known:
            referenced_id = str(reference["message_id"])
            message["type"] = 19
            message["message_reference"] = {"message_id": referenced_id, "channel_id": channel_id}
            if referenced_id in self.messages:
                message["referenced_message"] = self.messages[referenced_id]
        if nonce is not None:
            message["nonce"] = nonce
            self._nonces.remember(channel_id, author, nonce, message["id"])
        return message

    def _reference_problem(self, body: JSON) -> FormError | None:
        """A reply to a message Discord does not know is refused, unless the body says
        ``fail_if_not_exists: false`` (then it is posted as a plain message)."""
        reference = body.get("message_reference")
        if not isinstance(reference, dict) or reference.get("message_id") is None:
            return None
        if str(reference["message_id"]) in self.messages:
            return None
        if reference.get("fail_if_not_exists", True) is False:
            return None
        return FormError(
            "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message"
        )

    def _keep(self, message: JSON) -> None:
        """A message someone posted, into the history (a replay keeps the first copy); a
        message without a guild is in a DM channel with its author."""
        self.messages.setdefault(str(message["id"]), message)
        channel_id = str(message["channel_id"])
        if "guild_id" not in message and self.guild_of(channel_id) is None:
            self.people.dm_channels.setdefault(channel_id, str(message["author"]["id"]))

    def _last_message_id(self, channel_id: str) -> str | None:
        ids = [int(m["id"]) for m in self.messages.values() if m["channel_id"] == channel_id]
        return str(max(ids)) if ids else None

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
        payload["embeds"] = body.get("embeds") or []
        return payload

    def guild_of(self, channel_id: str) -> str | None:
        for guild in self.guilds:
            if channel_id in guild.channels or channel_id in guild.threads:
                return guild.id
        return None
