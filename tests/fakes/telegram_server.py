"""A fake Telegram Bot API server on loopback, for driving python-telegram-bot for real.

Serves ``POST /bot{token}/{method}`` (form fields, each JSON-decoded when it parses) and
``GET /file/bot{token}/{path}``. It records every call, holds ``getUpdates`` until an update
is queued or the poll timeout passes, and can be told to fail the next calls of a method
(``429`` with ``retry_after``, ``409`` Conflict, ...). A wrong token gets ``401``.

Like Telegram, it keeps each message the bot sent as a Message (HTML parsed into plain text and
``entities``, the inline keyboard as ``reply_markup``; a ``sendDocument`` upload as a
``document`` with its ``caption``, a ``sendPhoto`` upload as a ``photo``, the bytes in
:attr:`FakeTelegram.files`), updates it on ``editMessageText`` and ``editMessageReplyMarkup``
(an edit without ``reply_markup`` removes the keyboard), and answers an edit that changes
neither text nor keyboard with "message is not modified". Edits follow Telegram's rules to
the word, the traps of a delivery probe included: an edit of an id that is no message of that
chat is "message to edit not found", of someone else's message "message can't be edited", of
a file's message "there is no text in the message to edit", while an edit of **another** of
the bot's messages with different text succeeds and overwrites it. Every edit that changed a
message is kept in :attr:`FakeTelegram.changed_by_edit`, marked ``blind`` when the client
process making it was never told that message's id: each ``getMe`` (a process starting)
opens a new epoch of its client (:meth:`FakeTelegram.base_url_for` names clients), and an id
is told in the epoch of the answer or update that carried it. A
progress line or a card edited by the process that posted it is not blind; an edit probe's
is, and one that changed a message is the defect a probe must never commit.

Message ids are allocated as Telegram allocates them: one counter per bot account for every
private chat and basic group, incoming and outgoing alike, and one counter per supergroup or
channel (:class:`MessageIds`). A message a test pushes with an id of its own moves its counter
past that id; :meth:`FakeTelegram.next_message_id` gives the id Telegram would give the next
message of a chat. ``getFile``, the file URL and the
checks of uploads are :attr:`FakeTelegram.file_store` (:mod:`tests.fakes.telegram_files`).
:meth:`FakeTelegram.bot_message_now` gives a message's current state, to put into a callback
query or a ``reply_to_message`` as Telegram would.

Like Telegram, it records only the update kinds the bot asked for: the last
``allowed_updates`` sent with ``getUpdates`` or ``setWebhook`` (the setting outlives the
client, as Telegram's does); before any, or after an empty list, every kind except
``chat_member``, ``message_reaction`` and ``message_reaction_count``. An update of another
kind pushed by a test is dropped, as Telegram never creates it; one already queued when the
setting changes stays queued.

Every ``getUpdates`` is kept in :attr:`FakeTelegram.poll_book` with the client that sent it
(a test gives each client a URL of its own, :meth:`FakeTelegram.base_url_for`); as on
Telegram, a poll arriving while another waits ends the older one with ``409 Conflict``
(:mod:`tests.fakes.telegram_polls`).

``forget_confirmed=False`` keeps updates the client confirmed with ``offset``; it models a
client that crashed before its confirming ``getUpdates`` reached Telegram, so only the
client's own persisted offset keeps it from seeing them again.

Every call is checked as Telegram checks it (:mod:`tests.fakes.telegram_rules`, the limits in
:mod:`tests.fakes.limits`) and refused with Telegram's own answer (``ok: false``, its
``error_code`` and exact ``description``): a missing ``chat_id`` or text, text over 4,096
UTF-16 code units after entity parsing, HTML the parse mode refuses, callback data over 64
bytes, a callback answer over 200 characters, a reaction Telegram does not offer, a command
menu it refuses, a reply to a message it does not know (pushed or sent) without
``allow_sending_without_reply``. The accepted menu is kept per scope in
:attr:`FakeTelegram.menus` and answered by ``getMyCommands``. A chat the fake was never shown
is answered as Telegram shows it (private for a positive id, a supergroup for ``-100…``, else a
group); an update pushed with a chat Telegram never sends (a type inconsistent with its id) is
a ``ValueError``.

Who is in which chat (``getChatMember``) and which users never started the bot (messages to
them get 403) is :attr:`FakeTelegram.roster` (:mod:`tests.fakes.telegram_members`).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from aiohttp import web

from tests.fakes.loopback import LoopbackServer
from tests.fakes.telegram_files import TelegramFiles
from tests.fakes.telegram_members import ChatRoster
from tests.fakes.telegram_polls import TERMINATED, PollBook
from tests.fakes.telegram_rules import (
    CANT_BE_EDITED,
    NO_TEXT_TO_EDIT,
    NOT_MODIFIED,
    TO_EDIT_NOT_FOUND,
    chat_of,
    chat_problem,
    formatted,
    is_supergroup,
    refusal,
)

BOT_ID = 7000001
BOT_USERNAME = "hatchbot"
JSON = dict[str, Any]
#: The kinds Telegram leaves out when no ``allowed_updates`` was ever given (or an empty list).
NOT_SENT_BY_DEFAULT = frozenset({"chat_member", "message_reaction", "message_reaction_count"})


@dataclass(frozen=True, slots=True)
class ApiCall:
    method: str
    params: JSON
    at: float = field(default_factory=time.monotonic)
    client: str = ""
    """The client's name when it called through :meth:`FakeTelegram.base_url_for`."""


@dataclass(slots=True)
class _Failure:
    status: int
    description: str
    parameters: JSON | None
    times: int


#: Fields that are strings whatever they hold (``text="42"`` is not the number 42).
_STRING_FIELDS = frozenset({"text", "caption", "callback_query_id", "description"})


def _decode(key: str, value: str) -> Any:
    if key in _STRING_FIELDS:
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


class MessageIds:
    """Telegram's message ids: one counter for the bot account's private chats and basic
    groups together (incoming and outgoing), one per supergroup or channel."""

    def __init__(self, first: int = 500) -> None:
        self._first = first
        self._last: dict[int | None, int] = {}

    @staticmethod
    def _counter(chat_id: int) -> int | None:
        return chat_id if is_supergroup(chat_id) else None

    def next(self, chat_id: int) -> int:
        counter = self._counter(chat_id)
        number = self._last.get(counter, self._first - 1) + 1
        self._last[counter] = number
        return number

    def taken(self, chat_id: int, message_id: int) -> None:
        """A message with this id exists (pushed by a test): the counter moves past it."""
        counter = self._counter(chat_id)
        self._last[counter] = max(self._last.get(counter, self._first - 1), message_id)


@dataclass(frozen=True, slots=True)
class EditChange:
    """An edit that changed a message: which, by which method, and what it said before."""

    chat_id: int
    message_id: int
    method: str
    before: str
    blind: bool  # the editing process was never told this message's id


@dataclass(slots=True)
class _Sent:
    """A message the bot sent: what was asked (for "not modified") and what Telegram shows."""

    raw_text: str
    markup: Any
    message: JSON


class FakeTelegram:
    """The fake server. Use as ``async with FakeTelegram(token) as tg:``."""

    def __init__(self, token: str, *, forget_confirmed: bool = True) -> None:
        #: ``getMe``'s ``can_read_all_group_messages``: privacy mode off (BotFather)
        self.reads_all_group_messages = False
        self.token = token
        self.forget_confirmed = forget_confirmed
        self.calls: list[ApiCall] = []
        self.files: dict[str, bytes] = {}
        self._updates: list[JSON] = []
        self.allowed_updates: frozenset[str] | None = None
        """The kinds the bot asked for last (``None``: never asked, Telegram's default)."""
        self._update_ids = itertools.count(1000)
        self._message_ids = MessageIds()
        self.changed_by_edit: list[EditChange] = []
        """Every edit that changed a message the bot had sent, in order."""
        self._epochs: dict[str, int] = {}  # per client: one per getMe (a process starting)
        #: (client, chat, message) -> the client's last epoch that was told the id
        self._told: dict[tuple[str, int, int], int] = {}
        self._caller = ""  # the client of the call being answered (answers hold no await)
        self._chats: dict[int, JSON] = {}
        self._sent: dict[tuple[int, int], _Sent] = {}
        self._seen: set[tuple[int, int]] = set()  # (chat, message) of messages pushed
        self._failures: dict[str, list[_Failure]] = {}
        #: called with each call (its client named) and its answer once the answer is made
        #: and before the client has it (a test cuts something off at that very moment)
        self.answered: Callable[[ApiCall, web.Response], None] | None = None
        self.roster = ChatRoster()
        self.file_store = TelegramFiles(self.files)
        """``getFile``, downloads and uploads (:mod:`tests.fakes.telegram_files`)."""
        self.menus: dict[str, list[JSON]] = {}
        """The command list of each scope (its ``type``: ``default``, ``all_group_chats``...)."""
        self.poll_book = PollBook()
        """Every ``getUpdates`` and who sent it; conflicts between live ones."""
        self.refused: list[tuple[str, str]] = []
        """Every call answered with an error, as (method, description), in order."""
        self.rule_refusals: list[tuple[str, str]] = []
        """The calls refused for breaking the Bot API's rules (:mod:`tests.fakes.telegram_rules`):
        never expected from hatchway; the channel tests' fixture checks it stays empty."""
        self.handed_out: dict[int, float] = {}
        """When each update was first handed out in a ``getUpdates`` answer (monotonic)."""
        self._changed = asyncio.Condition()
        self._server = LoopbackServer()

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> FakeTelegram:
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", self._api)
        app.router.add_post("/as/{client}/bot{token}/{method}", self._api)
        app.router.add_get("/file/bot{token}/{path:.*}", self._file)
        await self._server.start(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._server.aclose()

    @property
    def base_url(self) -> str:
        return self._server.url("/bot")

    def base_url_for(self, client: str) -> str:
        """The API's base URL for the client named ``client`` (its calls are marked so)."""
        return self._server.url(f"/as/{client}/bot")

    @property
    def file_base_url(self) -> str:
        return self._server.url("/file/bot")

    # -- test controls -----------------------------------------------------------------------

    async def push(self, update: JSON) -> int:
        """Queue an update (``update_id`` assigned here) and wake a waiting ``getUpdates``;
        an update of a kind the bot did not ask for is dropped, as Telegram never makes it."""
        update_id = next(self._update_ids)
        if not self.wants(update):
            return update_id
        for chat in _chats_in(update):
            if problem := chat_problem(chat):
                raise ValueError(f"Telegram never sends this update: {problem}")
        for value in update.values():
            if isinstance(value, dict) and isinstance(value.get("chat"), dict):
                self._chats[int(value["chat"]["id"])] = value["chat"]
                if isinstance(value.get("message_id"), int):
                    self._seen.add((int(value["chat"]["id"]), value["message_id"]))
        for shown in _messages_in(update):
            chat_id, message_id = int(shown["chat"]["id"]), int(shown["message_id"])
            self._message_ids.taken(chat_id, message_id)
            sender = shown.get("from")
            if isinstance(sender, dict) and sender.get("id") == BOT_ID:
                # a message of the bot's that a test shows (on a callback query, a reply):
                # Telegram has it, as the bot sent it
                self._sent.setdefault(
                    (chat_id, message_id),
                    _Sent(str(shown.get("text", "")), shown.get("reply_markup"), shown),
                )
            else:
                self._seen.add((chat_id, message_id))
        async with self._changed:
            self._updates.append({"update_id": update_id, **update})
            self._changed.notify_all()
        return update_id

    def wants(self, update: JSON) -> bool:
        """Whether Telegram would create ``update`` under the bot's ``allowed_updates``."""
        kinds = set(update) - {"update_id"}
        if self.allowed_updates is None:
            return not kinds & NOT_SENT_BY_DEFAULT
        return kinds <= self.allowed_updates

    def fail_next(
        self,
        method: str,
        status: int,
        description: str,
        *,
        parameters: JSON | None = None,
        times: int = 1,
    ) -> None:
        """The next ``times`` calls of ``method`` get this error answer."""
        failure = _Failure(status, description, parameters, times)
        self._failures.setdefault(method, []).append(failure)

    def next_message_id(self, chat_id: int) -> int:
        """The id Telegram gives the next message of ``chat_id`` (for a test's incoming
        message; taken from the chat's counter)."""
        return self._message_ids.next(chat_id)

    def calls_of(self, method: str) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method]

    def bot_messages(self, chat_id: int) -> list[JSON]:
        """The current state of every message the bot sent to ``chat_id``, oldest first."""
        return [
            copy.deepcopy(sent.message)
            for (chat, _), sent in sorted(self._sent.items())
            if chat == chat_id
        ]

    def bot_message_now(self, chat_id: int, message_id: int) -> JSON:
        """One message the bot sent, as Telegram shows it now (text, entities, keyboard)."""
        return copy.deepcopy(self._sent[(chat_id, message_id)].message)

    async def wait_for(
        self,
        method: str,
        where: Callable[[ApiCall], bool] = lambda _c: True,
        *,
        count: int = 1,
        wait_s: float = 10.0,
    ) -> list[ApiCall]:
        """Wait until ``count`` calls of ``method`` matching ``where`` were received."""

        def found() -> list[ApiCall]:
            return [c for c in self.calls_of(method) if where(c)]

        async with asyncio.timeout(wait_s), self._changed:
            await self._changed.wait_for(lambda: len(found()) >= count)
        return found()

    # -- HTTP --------------------------------------------------------------------------------

    async def _file(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.Response(status=401)
        return self.file_store.serve(request.match_info["path"])

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: JSON = {}
        if request.content_type == "application/json":  # the Bot API takes JSON bodies too
            try:
                body = await request.json()
            except ValueError:
                body = None
            if not isinstance(body, dict):
                return self._error(400, "Bad Request: can't parse JSON encoded request")
            params = body
        else:
            form = await request.post()
            params = {k: _decode(k, v) for k, v in form.items() if isinstance(v, str)}
            for key, value in form.items():
                if isinstance(value, web.FileField):  # an upload: its name and bytes
                    params[key] = {"file_name": value.filename, "bytes": value.file.read()}
        client = request.match_info.get("client", "")
        call = ApiCall(method, params, client=client)
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()
        response = await self._answer_call(method, params, client, request)
        if self.answered is not None:
            self.answered(call, response)
        if response.status >= 400:
            self.refused.append((method, json.loads(cast(bytes, response.body))["description"]))
        return response

    async def _answer_call(
        self, method: str, params: JSON, client: str, request: web.Request
    ) -> web.Response:
        if request.match_info["token"] != self.token:
            return self._error(401, "Unauthorized")
        self._caller = client
        queued = self._failures.get(method)
        if queued:
            failure = queued[0]
            failure.times -= 1
            if failure.times <= 0:
                queued.pop(0)
            return self._error(failure.status, failure.description, failure.parameters)
        if ruled := refusal(method, params):
            self.rule_refusals.append((method, ruled[1]))
            return self._error(*ruled)
        if refused := self.roster.refusal(method, params):
            return self._error(*refused)
        if self._reply_target_missing(params):
            return self._error(400, "Bad Request: message to be replied not found")
        if method in ("getUpdates", "setWebhook") and "allowed_updates" in params:
            asked = params["allowed_updates"]
            self.allowed_updates = frozenset(asked) if asked else None
        if method == "getUpdates":
            return await self._poll(client, request, params)
        if method in ("getFile", "sendDocument", "sendPhoto"):
            answer = self._file_call(method, params)
            return self._error(*answer) if isinstance(answer, tuple) else self._ok(answer)
        editing = method in ("editMessageText", "editMessageReplyMarkup")
        if editing and (problem := self._edit_problem(method, params)):
            return self._error(400, problem)
        return self._ok(self._answer(method, params))

    def _reply_target_missing(self, params: Mapping[str, Any]) -> bool:
        """A reply to a message Telegram does not know, without
        ``allow_sending_without_reply``."""
        reply = params.get("reply_parameters")
        if not isinstance(reply, dict) or reply.get("allow_sending_without_reply"):
            return False
        chat_id = reply.get("chat_id", params.get("chat_id"))
        key = (chat_id, reply.get("message_id"))
        return key not in self._seen and key not in self._sent

    def _edit_problem(self, method: str, params: Mapping[str, Any]) -> str | None:
        """Telegram's refusal of an edit (module docstring), or None: it changes the
        message, and is kept in :attr:`changed_by_edit`."""
        key = (int(params["chat_id"]), int(params["message_id"]))
        sent = self._sent.get(key)
        if sent is None:
            return CANT_BE_EDITED if key in self._seen else TO_EDIT_NOT_FOUND
        if method == "editMessageText" and "text" not in sent.message:
            return NO_TEXT_TO_EDIT
        same_text = str(params.get("text", sent.raw_text)) == sent.raw_text
        if same_text and bool(params.get("reply_markup") == sent.markup):
            return NOT_MODIFIED
        blind = self._told.get((self._caller, *key), -1) < self._epochs.get(self._caller, 0)
        self.changed_by_edit.append(EditChange(key[0], key[1], method, sent.raw_text, blind))
        self._tell(self._caller, key)
        return None

    def _tell(self, client: str, key: tuple[int, int]) -> None:
        """``client``'s process now knows the message ``key`` (chat, id)."""
        self._told[(client, *key)] = self._epochs.get(client, 0)

    @staticmethod
    def _ok(result: Any) -> web.Response:
        return web.json_response({"ok": True, "result": result})

    @staticmethod
    def _error(status: int, description: str, parameters: JSON | None = None) -> web.Response:
        body: JSON = {"ok": False, "error_code": status, "description": description}
        if parameters:
            body["parameters"] = parameters
        return web.json_response(body, status=status)

    async def _poll(
        self, client: str, request: web.Request, params: Mapping[str, Any]
    ) -> web.Response:
        async with self._changed:
            poll = self.poll_book.begin(client, request)
            self._changed.notify_all()  # wakes a poll it ended
        try:
            updates = await self._get_updates(params, poll.terminated)
        finally:
            self.poll_book.end(poll)
        if updates is None:
            return self._error(409, TERMINATED)
        now = time.monotonic()
        for update in updates:
            self.handed_out.setdefault(int(update["update_id"]), now)
            for shown in _messages_in(update):
                self._tell(client, (int(shown["chat"]["id"]), int(shown["message_id"])))
        return self._ok(updates)

    async def _get_updates(
        self, params: Mapping[str, Any], terminated: asyncio.Event
    ) -> list[JSON] | None:
        """The updates from ``offset``, waiting up to ``timeout`` for one; None when a newer
        poll ended this one meanwhile."""
        offset = int(params.get("offset") or 0)
        timeout = float(params.get("timeout") or 0)

        def pending() -> list[JSON]:
            return [u for u in self._updates if u["update_id"] >= offset]

        async with self._changed:
            if offset and self.forget_confirmed:
                self._updates = pending()
            if not pending() and timeout > 0:
                try:
                    async with asyncio.timeout(timeout):
                        await self._changed.wait_for(lambda: bool(pending()) or terminated.is_set())
                except TimeoutError:
                    pass
            return None if terminated.is_set() else pending()

    def _message(self, params: Mapping[str, Any], message_id: int) -> JSON:
        chat_id = int(params["chat_id"])
        text, entities = formatted(params.get("text", ""), params.get("parse_mode"))
        message: JSON = {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": self._chats.get(chat_id) or chat_of(chat_id),
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "Hatch", "username": BOT_USERNAME},
            "text": text,
        }
        if entities:
            message["entities"] = entities
        if params.get("message_thread_id"):
            message["message_thread_id"] = int(params["message_thread_id"])
            message["is_topic_message"] = True
        if params.get("reply_markup"):
            message["reply_markup"] = params["reply_markup"]
        return message

    def _file_call(self, method: str, params: Mapping[str, Any]) -> JSON | tuple[int, str]:
        """``getFile``, or an upload: a ``sendDocument`` or ``sendPhoto`` message (the file in
        :attr:`file_store`, the caption parsed), or Telegram's refusal."""
        if method == "getFile":
            return self.file_store.get_file(str(params.get("file_id", "")))
        field_name = "photo" if method == "sendPhoto" else "document"
        upload = params[field_name]
        caption = str(params.get("caption", ""))
        caption_text, entities = formatted(caption, params.get("parse_mode"))
        message_id = self._message_ids.next(int(params["chat_id"]))
        if method == "sendPhoto":
            sizes = self.file_store.photo(message_id, upload["bytes"])
            if isinstance(sizes, tuple):
                return sizes
            media: Any = sizes
        else:
            media = self.file_store.document(message_id, upload)
        message = self._message({**params, "text": caption}, message_id)
        message.pop("text")
        message.pop("entities", None)
        message["caption"] = caption_text
        if entities:
            message["caption_entities"] = entities
        message[field_name] = media
        key = (int(params["chat_id"]), message_id)
        self._sent[key] = _Sent(caption, params.get("reply_markup"), message)
        self._tell(self._caller, key)
        return message

    def _answer(self, method: str, params: Mapping[str, Any]) -> Any:
        if method == "getMe":
            self._epochs[self._caller] = self._epochs.get(self._caller, 0) + 1
            return {
                "id": BOT_ID,
                "is_bot": True,
                "first_name": "Hatch",
                "username": BOT_USERNAME,
                "can_join_groups": True,
                "can_read_all_group_messages": self.reads_all_group_messages,
                "supports_inline_queries": False,
            }
        if method == "sendMessage":
            message = self._message(params, self._message_ids.next(int(params["chat_id"])))
            key = (int(params["chat_id"]), message["message_id"])
            self._sent[key] = _Sent(str(params["text"]), params.get("reply_markup"), message)
            self._tell(self._caller, key)
            return message
        if method == "editMessageText":
            key = (int(params["chat_id"]), int(params["message_id"]))
            message = self._message(params, key[1])
            previous = self._sent.get(key)
            if previous is not None:  # an edit keeps where the message was posted
                for kept in ("message_thread_id", "is_topic_message", "date"):
                    if kept in previous.message:
                        message[kept] = previous.message[kept]
            self._sent[key] = _Sent(str(params["text"]), params.get("reply_markup"), message)
            return message
        if method == "editMessageReplyMarkup":
            key = (int(params["chat_id"]), int(params["message_id"]))
            sent = self._sent.get(key)
            if sent is None:
                return self._message({"chat_id": key[0], **params}, key[1])
            sent.markup = params.get("reply_markup")
            sent.message.pop("reply_markup", None)
            if sent.markup:
                sent.message["reply_markup"] = sent.markup
            return copy.deepcopy(sent.message)
        if method == "setMyCommands":
            self.menus[_scope_type(params)] = list(params["commands"])
            return True
        if method == "getMyCommands":
            return self.menus.get(_scope_type(params), [])
        if method == "getChatMember":
            return self.roster.member(int(params["chat_id"]), int(params["user_id"]))
        return True


def _chats_in(payload: Any) -> list[JSON]:
    """Every chat object inside ``payload`` (an update: its message, the message a callback
    query is on, the message replied to...)."""
    if isinstance(payload, list):
        return [chat for item in payload for chat in _chats_in(item)]
    if not isinstance(payload, dict):
        return []
    found = [payload["chat"]] if isinstance(payload.get("chat"), dict) else []
    return found + [chat for value in payload.values() for chat in _chats_in(value)]


def _messages_in(payload: Any) -> list[JSON]:
    """Every message object inside ``payload`` (one with a ``chat`` and a ``message_id``)."""
    if isinstance(payload, list):
        return [found for item in payload for found in _messages_in(item)]
    if not isinstance(payload, dict):
        return []
    found = (
        [payload]
        if isinstance(payload.get("chat"), dict) and isinstance(payload.get("message_id"), int)
        else []
    )
    return found + [m for value in payload.values() for m in _messages_in(value)]


def _scope_type(params: Mapping[str, Any]) -> str:
    scope = params.get("scope")
    return str(scope.get("type", "default")) if isinstance(scope, dict) else "default"


# -- payload builders -----------------------------------------------------------------------

_dates = itertools.count(1_700_000_000)


def user(user_id: int, first_name: str = "Ann", *, is_bot: bool = False) -> JSON:
    return {
        "id": user_id,
        "is_bot": is_bot,
        "first_name": first_name,
        "username": first_name.lower(),
    }


def private_chat(user_id: int) -> JSON:
    return {"id": user_id, "type": "private", "first_name": "Ann"}


def forum_chat(chat_id: int = -100200300) -> JSON:
    return {"id": chat_id, "type": "supergroup", "title": "team", "is_forum": True}


def message(
    chat: JSON,
    sender: JSON,
    text: str,
    *,
    message_id: int,
    thread_id: int | None = None,
    reply_to: JSON | None = None,
    entities: list[JSON] | None = None,
    **extra: Any,
) -> JSON:
    """A Message payload; ``text=""`` leaves the text out (for captions and media)."""
    payload: JSON = {
        "message_id": message_id,
        "date": next(_dates),
        "chat": chat,
        "from": sender,
        **extra,
    }
    if text:
        payload["text"] = text
    if thread_id is not None:
        payload["message_thread_id"] = thread_id
        payload["is_topic_message"] = True
    if reply_to is not None:
        payload["reply_to_message"] = reply_to
    if entities:
        payload["entities"] = entities
    return payload


def edit_of(original: JSON, text: str, *, entities: list[JSON] | None = None) -> JSON:
    """An ``edited_message`` update: ``original`` (a :func:`message` payload) as Telegram
    sends it after its author changed the text: same ``message_id``, chat, sender and
    ``date``, the new text and entities, and an ``edit_date``."""
    edited: JSON = {k: v for k, v in original.items() if k not in ("text", "entities")}
    edited["text"] = text
    edited["edit_date"] = next(_dates)
    if entities:
        edited["entities"] = entities
    return {"edited_message": edited}


def mention(text: str, username: str = BOT_USERNAME) -> list[JSON]:
    """The ``mention`` entity of ``@username`` in ``text`` (ASCII text assumed)."""
    handle = f"@{username}"
    return [{"type": "mention", "offset": text.index(handle), "length": len(handle)}]


def command(text: str) -> list[JSON]:
    """The ``bot_command`` entity Telegram marks at the start of ``text`` (``/stop@bot``)."""
    word = text.split(maxsplit=1)[0]
    return [{"type": "bot_command", "offset": 0, "length": len(word)}]


def callback(query_id: str, sender: JSON, data: str, on_message: JSON) -> JSON:
    return {
        "callback_query": {
            "id": query_id,
            "from": sender,
            "chat_instance": "ci",
            "data": data,
            "message": on_message,
        }
    }


def reaction(chat: JSON, message_id: int, sender: JSON, emoji: str) -> JSON:
    """A ``message_reaction`` update: ``sender`` adds ``emoji`` to the message."""
    return {
        "message_reaction": {
            "chat": chat,
            "message_id": message_id,
            "user": sender,
            "date": 1,
            "old_reaction": [],
            "new_reaction": [{"type": "emoji", "emoji": emoji}],
        }
    }


def bot_message(chat: JSON, message_id: int, text: str = "card") -> JSON:
    return message(chat, user(BOT_ID, "Hatch", is_bot=True), text, message_id=message_id)
