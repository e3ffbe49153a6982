"""A fake Slack on loopback, for driving slack-bolt / slack_sdk for real.

Serves the Web API at ``POST /api/{method}`` (JSON or form bodies, token in
``Authorization: Bearer``) and a Socket Mode websocket at ``/socket`` that
``apps.connections.open`` hands out. It records every call, can answer the next calls of a
method with ``429`` + ``Retry-After``, refuses wrong tokens with ``invalid_auth``, sends
``hello`` on connect, pushes ``events_api`` / ``interactive`` envelopes and records acks.

It keeps the messages the bot posts, as Slack does: ``chat.update`` edits only a message that
exists (``message_not_found``) and is the bot's (``cant_update_message``), with the metadata
posted with them, and ``conversations.history`` and ``conversations.replies`` read them back as
Slack does (:mod:`tests.fakes.slack_history`). Modals: :meth:`FakeSlack.press` clicks a button
on a stored message and, like Slack, gives the payload a fresh ``trigger_id``; ``views.open``
accepts each trigger once (``invalid_trigger_id`` / ``exchanged_trigger_id`` /
``expired_trigger_id``), checks the view against Slack's limits and keeps it;
:meth:`FakeSlack.submit_view` then does what Slack's client does on "Submit" (refuses an empty
required field or an over-long one, like the client) and pushes the ``view_submission``; an ack
without ``response_action: errors`` closes the view. :meth:`FakeSlack.press_in_view` presses a
button inside an open view (:meth:`FakeSlack.select_in_view` picks an option of a select in
it); ``views.update`` replaces an open view (``not_found`` once it is
closed, ``hash_conflict`` when the hash given is not the view's current one) and gives it a new
hash. Message calls are checked as Slack checks them and refused with its errors
(:mod:`tests.fakes.slack_rules`: ``channel_not_found``, ``msg_too_long``, ``no_text``,
``invalid_blocks``, ``invalid_metadata_format``), views against the view reference
(``invalid_arguments``). Who is in which conversation, and which users the app cannot DM, is
:attr:`FakeSlack.conversations` (:mod:`tests.fakes.slack_members`). Slash commands:
:meth:`FakeSlack.slash` builds one with a fresh trigger and a response URL served here
(:attr:`FakeSlack.responses`, :mod:`tests.fakes.slack_commands`). Files users share and files
the bot uploads (the external upload flow) are :attr:`FakeSlack.files`
(:mod:`tests.fakes.slack_files`). Slack's assistant surface (assistant threads, their status,
suggested prompts and title) is :attr:`FakeSlack.assistant` (:mod:`tests.fakes.slack_assistant`),
native streaming (``chat.startStream`` and the rest) :attr:`FakeSlack.streams`
(:mod:`tests.fakes.slack_streams`); ``chat.update`` keeps the metadata it is given.

Several apps on one workspace (replicas of one bot, each with a Socket Mode connection of its
own): a test gives each a base URL of its own (:meth:`FakeSlack.api_base_url_for`); its Web
API calls are then marked with its name (:attr:`ApiCall.client`), ``apps.connections.open``
hands it a socket URL of its own, and :meth:`FakeSlack.push` with ``to=`` sends an envelope
over that client's socket, as Slack spreads events over an app's connections. Without
``to``, an envelope goes over the socket connected last.

A client's Close frame is answered with the fake's own Close, as Slack does; envelopes given
to :meth:`FakeSlack.send_after_client_close` are sent in between (Slack had them on the wire
as the client closed), and with :attr:`FakeSlack.answer_close` off the Close goes unanswered
until the client drops the connection.

Also here: payload builders for events, and request signing for HTTP mode; the payloads of
presses, picks and submissions are :mod:`tests.fakes.slack_interactions` (re-exported:
:func:`block_actions`), each naming its person by the handle :meth:`FakeSlack.handle_of`
gives, as Slack does.
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

from tests.fakes.loopback import LoopbackServer
from tests.fakes.slack_assistant import AssistantThreads
from tests.fakes.slack_commands import ResponseUrls, slash_payload
from tests.fakes.slack_files import FakeFiles
from tests.fakes.slack_history import history, replies
from tests.fakes.slack_interactions import (
    block_actions,
    element_action,
    find_element,
    view_actions,
    view_submission,
)
from tests.fakes.slack_members import Conversations
from tests.fakes.slack_rules import refusal
from tests.fakes.slack_streams import Streams
from tests.fakes.slack_views import view_problems

JSON = dict[str, Any]
BOT_USER = "UBOT"
BOT_ID = "B0000000BOT"
TEAM = "T0001"


@dataclass(frozen=True, slots=True)
class ApiCall:
    method: str
    params: JSON
    status: int
    at: float = field(default_factory=time.monotonic)
    peer: str = ""  # the client's address and port: one per TCP connection
    client: str = ""  # the client's name when it called through api_base_url_for


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
        self.conversations = Conversations()
        self.acks: dict[str, JSON] = {}
        #: When each ack arrived (``time.monotonic()``), by envelope id.
        self.ack_at: dict[str, float] = {}
        self.messages: dict[tuple[str, str], JSON] = {}
        self.views: dict[str, JSON] = {}
        self.closed_views: set[str] = set()
        self.view_updates: list[JSON] = []
        self.connections = 0
        #: every call answered ``ok: false``, as (method, error), in order
        self.refused: list[tuple[str, str]] = []
        #: the calls refused for breaking Slack's rules (:mod:`tests.fakes.slack_rules`, a view's
        #: limits): never expected from hatchway; the channel tests' fixture checks it
        self.rule_refusals: list[tuple[str, str]] = []
        #: sockets closed so far (by either side)
        self.disconnections = 0
        self._triggers: dict[str, str] = {}  # trigger_id -> "fresh" | "exchanged" | "expired"
        self._trigger_ids = itertools.count(1)
        self._view_ids = itertools.count(1)
        self._limits: dict[str, list[int | None]] = {}
        self._ts = itertools.count(1)
        #: False: a client's Close frame goes unanswered (until the client drops the socket)
        self.answer_close = True
        #: envelope ids sent after a client's Close frame, before the fake's own Close
        self.sent_after_close: list[str] = []
        self._after_close: list[tuple[str | None, str, str, JSON]] = []
        self._socket: web.WebSocketResponse | None = None
        #: the open socket of each named client (api_base_url_for), by name
        self._sockets: dict[str, web.WebSocketResponse] = {}
        self._changed = asyncio.Condition()
        self.responses = ResponseUrls(self._changed)
        self.files = FakeFiles(bot_token=bot_token, team=TEAM, bot_user=BOT_USER, bot_id=BOT_ID)
        self.assistant = AssistantThreads(self.messages, bot_user=BOT_USER)
        self.streams = Streams(self.messages, bot_user=BOT_USER, bot_id=BOT_ID)
        self._server = LoopbackServer()

    async def __aenter__(self) -> FakeSlack:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_route("*", "/as/{client}/api/{method}", self._api)
        app.router.add_get("/socket", self._ws)
        app.router.add_get("/as/{client}/socket", self._ws)
        app.router.add_post("/commands/{key}", self.responses.handle)
        self.files.add_routes(app)
        await self._server.start(app)
        await self.files.start(self._server.origin)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for socket in {*self._sockets.values(), self._socket} - {None}:
            assert socket is not None
            await socket.close()
        await self.files.aclose()
        await self._server.aclose()

    @property
    def api_base_url(self) -> str:
        return self._server.url("/api/")

    def api_base_url_for(self, client: str) -> str:
        """The Web API's base URL for the client named ``client`` (module docstring)."""
        return self._server.url(f"/as/{client}/api/")

    def connected_clients(self) -> list[str]:
        """The named clients whose socket is open now, by name."""
        return sorted(name for name, ws in self._sockets.items() if not ws.closed)

    # -- test controls -------------------------------------------------------------------------

    def rate_limit_next(
        self, method: str, retry_after_s: int, times: int = 1, *, after: int = 0
    ) -> None:
        """Answer the next ``times`` calls of ``method`` (once ``after`` calls were answered
        as usual) ``ratelimited``, with ``Retry-After: retry_after_s``."""
        self._limits.setdefault(method, []).extend([None] * after + [retry_after_s] * times)

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

    async def wait_disconnected(self, disconnections: int = 1, wait_s: float = 10.0) -> None:
        await self._wait(lambda: self.disconnections >= disconnections, wait_s)

    async def push(
        self, kind: str, payload: JSON, *, retry_attempt: int = 0, to: str | None = None
    ) -> str:
        """Send one envelope over the socket (the socket of the client named ``to``: a
        ``ConnectionError`` when it has none open); returns its ``envelope_id``."""
        if to is None:
            socket = self._socket
            assert socket is not None, "no socket mode client connected"
        else:
            socket = self._sockets.get(to)
            if socket is None or socket.closed:
                raise ConnectionError(f"no socket of client {to!r} is open")
        envelope_id = uuid.uuid4().hex
        await socket.send_str(_envelope(envelope_id, kind, payload, retry_attempt))
        return envelope_id

    def send_after_client_close(self, kind: str, payload: JSON, *, to: str | None = None) -> str:
        """Send one envelope over a socket (the socket of the client named ``to``, or any)
        once its client's Close frame arrived, before the fake's own Close; returns its
        ``envelope_id`` (listed in :attr:`sent_after_close` once sent)."""
        envelope_id = uuid.uuid4().hex
        self._after_close.append((to, envelope_id, kind, payload))
        return envelope_id

    async def wait_ack(self, envelope_id: str, wait_s: float = 60.0) -> JSON:
        # wait_s bounds a failure only: Slack's 3 s ack limit is no test's stopwatch (on a
        # busy machine a run of acks, each after a SQLite write, took longer)
        await self._wait(lambda: envelope_id in self.acks, wait_s)
        return self.acks[envelope_id]

    async def drop_socket(self) -> None:
        if self._socket is not None:
            await self._socket.close()

    def add_message(self, channel: str, ts: str, *, user: str, text: str, **extra: Any) -> None:
        """A message someone else posted (the bot cannot edit it)."""
        self.messages[(channel, ts)] = {"type": "message", "ts": ts, "user": user, "text": text}
        self.messages[(channel, ts)].update(extra)

    def slash(self, text: str, *, user: str, channel: str = "C0001", **extra: Any) -> JSON:
        """The payload of ``user`` typing ``/hatchway {text}`` in ``channel``, with a fresh
        trigger and a response URL of this server (``extra``: other payload fields)."""
        url = self._server.url(f"/commands/{self.responses.issue()}")
        trigger = self.issue_trigger()
        return slash_payload(
            text,
            user=user,
            handle=self.handle_of(user),
            channel=channel,
            response_url=url,
            trigger_id=trigger,
            **extra,
        )

    async def wait_responses(
        self, response_url: str, count: int = 1, wait_s: float = 10.0
    ) -> list[JSON]:
        """Wait until ``count`` answers were posted to ``response_url``; returns them."""
        key = response_url.rsplit("/", 1)[-1]
        await self._wait(lambda: len(self.responses.to(key)) >= count, wait_s)
        return self.responses.to(key)

    def issue_trigger(self) -> str:
        trigger_id = f"{next(self._trigger_ids)}.{int(time.time())}.{uuid.uuid4().hex[:12]}"
        self._triggers[trigger_id] = "fresh"
        return trigger_id

    def expire_triggers(self) -> None:
        """Every trigger issued so far is now past Slack's 3 seconds."""
        for trigger_id, state in self._triggers.items():
            if state == "fresh":
                self._triggers[trigger_id] = "expired"

    def handle_of(self, user: str) -> str:
        """The handle interaction payloads carry for ``user``: the ``name`` of the person
        :attr:`users` holds, else the id in lower case."""
        return str(self.users.get(user, {}).get("name") or user.lower())

    def press(self, channel: str, ts: str, action_id: str, *, user: str) -> JSON:
        """The ``block_actions`` payload of ``user`` pressing the button ``action_id`` on the
        stored message at ``ts``, with the message as Slack holds it and a fresh trigger."""
        return self._act(channel, ts, action_id, None, user)

    def select(self, channel: str, ts: str, action_id: str, value: str, *, user: str) -> JSON:
        """The ``block_actions`` payload of ``user`` picking the option whose value is
        ``value`` in the ``static_select`` ``action_id`` on the stored message at ``ts``: as
        Slack sends it, with ``selected_option`` and no ``value``. The option need not be one
        the message offers (a forged payload)."""
        return self._act(channel, ts, action_id, value, user)

    def _act(self, channel: str, ts: str, action_id: str, value: str | None, user: str) -> JSON:
        message = json.loads(json.dumps(self.messages[(channel, ts)]))
        block, element = find_element(message.get("blocks") or [], action_id)
        extra = {"thread_ts": message["thread_ts"]} if message.get("thread_ts") else {}
        return block_actions(
            action_id,
            "",
            user=user,
            handle=self.handle_of(user),
            channel=channel,
            message_ts=ts,
            trigger_id=self.issue_trigger(),
            message=message,
            action=element_action(block, element, value),
            **extra,
        )

    def view_submission(self, view_id: str, *, user: str, text: str) -> JSON:
        """What Slack sends when ``user`` types ``text`` into the view's text input and
        presses Submit (see :func:`tests.fakes.slack_views.view_submission`)."""
        assert view_id not in self.closed_views, "the view is closed"
        return view_submission(
            self.views[view_id],
            user=user,
            handle=self.handle_of(user),
            text=text,
            trigger_id=self.issue_trigger(),
        )

    async def submit_view(self, view_id: str, *, user: str, text: str) -> JSON:
        """Submit the view over the socket and wait for the ack; returns the ack's payload
        (``{}`` for a plain ack). As on Slack, an ack without errors closes the view."""
        payload = self.view_submission(view_id, user=user, text=text)
        ack = await self.wait_ack(await self.push("interactive", payload))
        response = ack.get("payload") or {}
        if response.get("response_action") != "errors":
            self.closed_views.add(view_id)
        return dict(response)

    def close_view(self, view_id: str) -> None:
        """The person closes the view (the X or Cancel)."""
        self.closed_views.add(view_id)

    async def press_in_view(self, view_id: str, action_id: str, *, user: str) -> JSON:
        """``user`` presses the button ``action_id`` in the open view; returns the ack."""
        return await self._act_in_view(view_id, action_id, None, user)

    async def select_in_view(self, view_id: str, action_id: str, value: str, *, user: str) -> JSON:
        """``user`` picks the option ``value`` in the view's ``static_select`` ``action_id``
        (see :func:`tests.fakes.slack_interactions.element_action`); returns the ack."""
        return await self._act_in_view(view_id, action_id, value, user)

    async def _act_in_view(
        self, view_id: str, action_id: str, value: str | None, user: str
    ) -> JSON:
        assert view_id not in self.closed_views, "the view is closed"
        payload = view_actions(
            self.views[view_id],
            action_id,
            value=value,
            user=user,
            handle=self.handle_of(user),
            trigger_id=self.issue_trigger(),
        )
        return await self.wait_ack(await self.push("interactive", payload))

    async def wait_view(self, count: int = 1, wait_s: float = 10.0) -> JSON:
        """Wait until ``count`` views were opened; returns the last one."""
        await self._wait(lambda: len(self.views) >= count, wait_s)
        return list(self.views.values())[-1]

    # -- the socket ----------------------------------------------------------------------------

    async def _ws(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True, autoclose=False)
        await ws.prepare(request)
        self._socket = ws
        client = request.match_info.get("client")
        if client is not None:
            self._sockets[client] = ws
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1}))
        async with self._changed:
            self.connections += 1
            self._changed.notify_all()
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                data = _decode(msg.data)
                if isinstance(data, dict) and "envelope_id" in data:
                    self.ack_at[str(data["envelope_id"])] = time.monotonic()
                    async with self._changed:
                        self.acks[str(data["envelope_id"])] = data
                        self._changed.notify_all()
        if not ws.closed and ws.close_code is not None:
            await self._answer_client_close(request, ws, client)
        if client is not None and self._sockets.get(client) is ws:
            del self._sockets[client]
        async with self._changed:
            self.disconnections += 1
            self._changed.notify_all()
        return ws

    async def _answer_client_close(
        self, request: web.Request, ws: web.WebSocketResponse, client: str | None
    ) -> None:
        """The client sent its Close: send what was to follow it, then the fake's Close
        (unless :attr:`answer_close` is off: then wait until the client drops the socket)."""
        for entry in list(self._after_close):
            to, envelope_id, kind, payload = entry
            if to is None or to == client:
                self._after_close.remove(entry)
                await ws.send_str(_envelope(envelope_id, kind, payload, 0))
                self.sent_after_close.append(envelope_id)
        if not self.answer_close:
            async with asyncio.timeout(60):
                # aiohttp tells a handler nothing of a dropped connection while closing: polled
                while request.transport is not None and not request.transport.is_closing():  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
        await ws.close()

    # -- the Web API ---------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: JSON = {k: _decode(v) for k, v in request.query.items()}
        if request.method == "GET":
            pass
        elif request.content_type == "application/json":
            try:
                body = await request.json()
            except ValueError:
                return web.json_response({"ok": False, "error": "invalid_json"})
            if not isinstance(body, dict):
                return web.json_response({"ok": False, "error": "json_not_object"})
            params.update(body)
        else:
            form = await request.post()
            params.update({k: _decode(v) for k, v in form.items() if isinstance(v, str)})
        token = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        client = request.match_info.get("client", "")
        status, body = self._answer(method, params, token, client=client)
        if body.get("ok") is False:
            self.refused.append((method, str(body.get("error"))))
        async with self._changed:
            peername = request.transport.get_extra_info("peername") if request.transport else None
            peer = f"{peername[0]}:{peername[1]}" if peername else ""
            self.calls.append(
                ApiCall(method=method, params=params, status=status, peer=peer, client=client)
            )
            self._changed.notify_all()
        headers = {}
        if status == 429:
            headers["Retry-After"] = str(body.pop("retry_after"))
        return web.json_response(body, status=status, headers=headers)

    def _answer(
        self, method: str, params: JSON, token: str, *, client: str = ""
    ) -> tuple[int, JSON]:
        limits = self._limits.get(method)
        retry_after = limits.pop(0) if limits else None
        if retry_after is not None:
            return 429, {"ok": False, "error": "ratelimited", "retry_after": retry_after}
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
            socket = f"/as/{client}/socket" if client else "/socket"
            return 200, {"ok": True, "url": self._server.url(socket, scheme="ws")}
        answered = self.files.answer(method, params, ts=ts, post=self._post_file_share)
        if answered is not None:
            return answered
        if (streamed := self.streams.answer(method, params, ts=ts)) is not None:
            if streamed.broke_rules:
                self.rule_refusals.append((method, str(streamed.body["error"])))
            return 200, streamed.body
        if (assisted := self.assistant.answer(method, params)) is not None:
            if assisted.broke_rules:
                self.rule_refusals.append((method, str(assisted.body["error"])))
            return 200, assisted.body
        if refused := refusal(method, params):
            self.rule_refusals.append((method, str(refused["error"])))
            return 200, refused
        if method == "chat.postMessage":
            channel, refused = self.conversations.post_to(channel)
            if refused:
                return 200, {"ok": False, "error": refused}
            message: JSON = {
                "type": "message",
                "ts": ts,
                "user": BOT_USER,
                "bot_id": BOT_ID,
                "app_id": "A0001",
                "text": params.get("text", ""),
                "blocks": params.get("blocks") or [],
            }
            if params.get("thread_ts"):
                message["thread_ts"] = params["thread_ts"]
            if params.get("metadata") is not None:
                message["metadata"] = params["metadata"]
            self.messages[(channel, ts)] = message
            return 200, {"ok": True, "channel": channel, "ts": ts, "message": message}
        if method == "chat.update":
            return self._update(channel, params)
        if method == "conversations.replies":
            return 200, replies(self.messages, channel, params)
        if method == "conversations.history":
            return 200, history(self.messages, channel, params)
        if method == "conversations.members":
            return 200, self.conversations.page(params)
        if method == "conversations.info":
            return 200, self.conversations.info(params)
        if method == "views.open":
            return self._open_view(params)
        if method == "views.update":
            return self._update_view(params)
        if method == "chat.postEphemeral":
            return 200, {"ok": True, "message_ts": ts}
        if method == "users.info":
            user = self.users.get(str(params.get("user")))
            if user is None:
                return 200, {"ok": False, "error": "user_not_found"}
            return 200, {"ok": True, "user": user}
        return 200, {"ok": True}

    def _post_file_share(self, channel: str, message: JSON) -> str:
        """Store the message sharing an uploaded file; where it landed, or the error."""
        landed, refused = self.conversations.post_to(channel)
        if refused:
            return refused
        self.messages[(landed, str(message["ts"]))] = message
        return landed

    def _update(self, channel: str, params: JSON) -> tuple[int, JSON]:
        message = self.messages.get((channel, str(params.get("ts"))))
        if message is None:
            return 200, {"ok": False, "error": "message_not_found"}
        if message.get("user") != BOT_USER:
            return 200, {"ok": False, "error": "cant_update_message"}
        message["text"] = params.get("text", message.get("text", ""))
        if "blocks" in params:  # Slack keeps the old blocks when none are sent
            message["blocks"] = params["blocks"] or []
        if params.get("metadata") is not None:
            message["metadata"] = params["metadata"]
        message["edited"] = {"user": BOT_USER, "ts": params.get("ts")}
        return 200, {
            "ok": True,
            "channel": channel,
            "ts": params.get("ts"),
            "text": message["text"],
        }

    def _refuse_view(self, view: object) -> JSON | None:
        """Slack's answer refusing ``view`` for breaking the view reference, if it does."""
        problems = view_problems(view)
        if not problems:
            return None
        self.rule_refusals.append(("views", "invalid_arguments"))
        messages = [f"[ERROR] {p}" for p in problems]
        return {
            "ok": False,
            "error": "invalid_arguments",
            "response_metadata": {"messages": messages},
        }

    def _update_view(self, params: JSON) -> tuple[int, JSON]:
        view_id = str(params.get("view_id") or "")
        stored = self.views.get(view_id)
        if stored is None or view_id in self.closed_views:
            return 200, {"ok": False, "error": "not_found"}
        if params.get("hash") and params["hash"] != stored["hash"]:
            return 200, {"ok": False, "error": "hash_conflict"}
        view = (
            _decode(params["view"]) if isinstance(params.get("view"), str) else params.get("view")
        )
        refused = self._refuse_view(view)
        if refused is not None:
            return 200, refused
        assert isinstance(view, dict)  # view_problems refuses anything else
        updated: JSON = {
            **{k: v for k, v in stored.items() if k in ("id", "team_id", "app_id", "bot_id")},
            "hash": f"{int(time.time())}.{uuid.uuid4().hex[:8]}",
            "root_view_id": stored["root_view_id"],
            "previous_view_id": None,
            "external_id": "",
            "private_metadata": "",
            "callback_id": "",
            "state": {"values": {}},
            **view,
        }
        self.views[view_id] = updated
        self.view_updates.append(updated)
        return 200, {"ok": True, "view": updated}

    def _open_view(self, params: JSON) -> tuple[int, JSON]:
        trigger_id = str(params.get("trigger_id") or "")
        state = self._triggers.get(trigger_id)
        if state is None:
            return 200, {"ok": False, "error": "invalid_trigger_id"}
        if state != "fresh":
            return 200, {"ok": False, "error": f"{state}_trigger_id"}
        self._triggers[trigger_id] = "exchanged"
        view = params.get("view")
        if isinstance(view, str):
            view = _decode(view)
        refused = self._refuse_view(view)
        if refused is not None:
            return 200, refused
        assert isinstance(view, dict)  # view_problems refuses anything else
        view_id = f"V{next(self._view_ids):08d}"
        stored: JSON = {
            "id": view_id,
            "team_id": TEAM,
            "app_id": "A0001",
            "bot_id": BOT_ID,
            "hash": f"{int(time.time())}.{uuid.uuid4().hex[:8]}",
            "root_view_id": view_id,
            "previous_view_id": None,
            "external_id": "",
            "clear_on_close": False,
            "notify_on_close": False,
            "private_metadata": "",
            "callback_id": "",
            "state": {"values": {}},
            **view,
        }
        self.views[view_id] = stored
        return 200, {"ok": True, "view": stored}


# -- payload builders ------------------------------------------------------------------------------


def _envelope(envelope_id: str, kind: str, payload: JSON, retry_attempt: int) -> str:
    return json.dumps(
        {
            "envelope_id": envelope_id,
            "type": kind,
            "accepts_response_payload": kind != "events_api",
            "retry_attempt": retry_attempt,
            "retry_reason": "timeout" if retry_attempt else "",
            "payload": payload,
        }
    )


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
