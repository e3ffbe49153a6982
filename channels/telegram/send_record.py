"""The record of every message the bot sends on Telegram, kept so a send cut off by a crash
can be checked later (:mod:`channels.telegram.delivery_check`).

Every message (text, card, full-view page, file) is recorded before its request is made,
with what the request says (the text, its parse mode and the keyboard as JSON), and sends to
one chat are serialised: a chat has at most one message whose id is unknown. The rows, in
``store.channel_state`` under the channel's ``kind.alias``:

* ``tg-sending:<chat>`` — the chat's one message whose request may have been made and whose
  id is not known (:class:`Pending`). Claimed before the request (one statement, so another
  process sending to the chat waits for it too) and deleted once the id is known, or once
  Telegram answered that it made no message;
* ``tg-last:<chat>`` — the id of the bot's latest message in the chat whose id is known, or
  ``fence`` after a check that could not decide (:data:`FENCE`): every other message of the
  bot's in the chat has a smaller id, so a check never looks at it;
* ``tg-reply:<key>:<part>`` — the id of part ``part`` of the reply ``key``, or ``?`` when a
  check could not decide whether it was delivered; kept :data:`REPLY_KEEP_S`;
* ``tg-alive:<owner>`` — with several processes over one database, when the process that
  claims rows as ``owner`` last said it lives: the rows of a process silent for
  :data:`GONE_AFTER_S` were left behind, and another may check them.

A request that failed so that Telegram may have made the message anyway (a timeout, a lost
connection, a server error, a cancellation) leaves its ``tg-sending`` row: the next send to
that chat, or the background check, first settles it (:meth:`SendRecord.settle_left`).

The record also remembers, in memory, the highest message id it has seen in each of
Telegram's counters (one for the account's private chats and basic groups, one per
supergroup or channel) and the ids of this process's own messages in each: a check's range
begins above the first and ends at the second (:mod:`channels.telegram.delivery_check`).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, replace

import structlog

from bot.errors import StorageError
from bot.store.channel_state import ChannelState
from bot.store.outage import OutageLog

log = structlog.get_logger(__name__)

SENDING = "tg-sending:"
LAST = "tg-last:"
REPLY = "tg-reply:"
#: ``tg-last`` after a check that could not decide: the chat's range starts nowhere until
#: the next message's id is known.
FENCE = "fence"
#: ``tg-reply`` of a part a check could not decide.
UNDECIDED = "?"
#: How long the ids of a reply's parts are kept (recovery asks within minutes).
REPLY_KEEP_S = 7 * 24 * 3600.0
#: How often a send waits again for a chat another live process is sending to.
BUSY_WAIT_S = 0.05
ALIVE = "tg-alive:"
#: How often a process sharing the database says it lives, and after how long without a
#: word (clocks of several hosts differ a little) its rows count as left behind.
ALIVE_EVERY_S = 2.0
GONE_AFTER_S = 15.0
#: The own sends remembered per counter (claim time and id), the latest kept.
OWN_SENDS = 256
#: The counters and own ids remembered (the least recently used are forgotten).
REMEMBERED = 4096
#: Supergroups and channels have ids of the form -100…; they count their own messages.
_SUPERGROUP_BELOW = -1_000_000_000_000


def counter_of(chat: int) -> int | None:
    """The message-id counter a chat's messages take their ids from: the chat's own for a
    supergroup or channel, the account's (None) for private chats and basic groups."""
    return chat if chat <= _SUPERGROUP_BELOW else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Pending:
    """A message whose request may have been made and whose id is not known."""

    chat: int
    key: str
    part: int
    text: str | None  # None: a file's message, which a check does not probe
    parse_mode: str | None
    markup: str | None  # the inline keyboard as JSON
    floor: int  # the highest id seen in the chat's counter before the request (0: none)
    owner: str  # the process that made it (SendRecord.owner)
    at: float  # wall clock at the claim

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @staticmethod
    def from_json(value: str) -> Pending:
        return Pending(**json.loads(value))


Settle = Callable[[Pending], Awaitable[None]]
"""Settles a pending row left by a request that may have been made (the delivery check)."""


class Slot:
    """One message being sent: its row is claimed; say how its request ended."""

    def __init__(self, record: SendRecord, pending: Pending) -> None:
        self._record = record
        self.pending = pending
        self.done = False

    async def retext(self, text: str, parse_mode: str | None) -> None:
        """The next attempt sends ``text`` (the last one made no message: Telegram refused
        it): the row says so before the request is made."""
        self.pending = replace(self.pending, text=text, parse_mode=parse_mode)
        name = SENDING + str(self.pending.chat)
        await self._record.state.set(self._record.ref, name, self.pending.to_json())

    async def sent(self, message_id: int) -> None:
        """The request made message ``message_id``."""
        await self._record.settled(self.pending, message_id)
        self.done = True

    async def refused(self) -> None:
        """Telegram answered that it made no message."""
        await self._record.state.delete(self._record.ref, SENDING + str(self.pending.chat))
        self.done = True


class SendRecord:
    """The rows of the module docstring, per-chat serialisation, and what was seen."""

    def __init__(
        self, state: ChannelState, ref: str, *, shared: bool, bound_after_s: float = 5.0
    ) -> None:
        self.state = state
        self.ref = ref
        #: an own send bounds another process's request only when it was claimed this long
        #: after that request's claim (its flight, and the clocks of two hosts)
        self._bound_after_s = bound_after_s
        #: this process (rows it left behind are its own to settle)
        self.owner = uuid.uuid4().hex
        #: several processes over one database: a row of another owner may be in flight
        self.shared = shared
        self._locks: dict[int, asyncio.Lock] = {}
        self._users: dict[int, int] = {}
        self._seen: OrderedDict[int | None, int] = OrderedDict()
        self._own: OrderedDict[int | None, deque[tuple[float, int]]] = OrderedDict()
        self._known: OrderedDict[tuple[int | None, int], None] = OrderedDict()
        self._news = asyncio.Event()
        self.settle_left: Settle | None = None

    # -- what was seen ----------------------------------------------------------------------

    def saw(self, chat: int, message_id: int) -> None:
        """A message of ``chat`` with this id exists and is not one whose id is unknown:
        someone's message in an update, or a send's answer. (Never a message shown inside
        another, such as the one a user replied to: that may be the bot's unknown one.)"""
        counter = counter_of(chat)
        self._known[(counter, message_id)] = None
        self._known.move_to_end((counter, message_id))
        while len(self._known) > REMEMBERED:
            self._known.popitem(last=False)
        if message_id > self._seen.get(counter, 0):
            self._seen[counter] = message_id
            self._seen.move_to_end(counter)
            while len(self._seen) > REMEMBERED:
                self._seen.popitem(last=False)
            self._wake()

    def is_known(self, chat: int, message_id: int) -> bool:
        """Whether this process saw that id in ``chat``'s counter (:meth:`saw`)."""
        return (counter_of(chat), message_id) in self._known

    def highest_seen(self, chat: int) -> int:
        """The highest id seen in ``chat``'s counter by this process (0: none)."""
        return self._seen.get(counter_of(chat), 0)

    def bound_for(self, left: Pending) -> int | None:
        """The lowest id of a message this process sent in ``left``'s counter and claimed
        at least ``bound_after_s`` after ``left`` was: Telegram made it after whatever
        ``left``'s request made (None: no such send yet)."""
        after = left.at + self._bound_after_s
        sends = self._own.get(counter_of(left.chat), ())
        return min((number for at, number in sends if at >= after), default=None)

    async def changed(self) -> None:
        """Wait until something new was seen."""
        await self._news.wait()

    def _wake(self) -> None:
        self._news.set()
        self._news = asyncio.Event()

    def _own_sent(self, chat: int, at: float, message_id: int) -> None:
        counter = counter_of(chat)
        sends = self._own.get(counter)
        if sends is None:
            sends = self._own[counter] = deque(maxlen=OWN_SENDS)
        sends.append((at, message_id))
        self._own.move_to_end(counter)
        while len(self._own) > REMEMBERED:
            self._own.popitem(last=False)

    # -- serialised sends -------------------------------------------------------------------

    @asynccontextmanager
    async def chat(self, chat: int) -> AsyncIterator[None]:
        """Hold ``chat``: no other send or check of this process touches it meanwhile."""
        lock = self._locks.get(chat)
        if lock is None:
            lock = self._locks[chat] = asyncio.Lock()
        self._users[chat] = self._users.get(chat, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[chat] -= 1
            if not self._users[chat]:
                del self._users[chat]
                del self._locks[chat]

    @asynccontextmanager
    async def sending(
        self,
        chat: int,
        *,
        key: str,
        part: int,
        text: str | None,
        parse_mode: str | None,
        markup: str | None,
    ) -> AsyncIterator[Slot]:
        """Record a message before its request (the chat held meanwhile); the caller says
        through the :class:`Slot` how the request ended. Leaving the block without saying
        so keeps the row: the request may have made the message."""
        async with self.chat(chat):
            pending = Pending(
                chat=chat,
                key=key,
                part=part,
                text=text,
                parse_mode=parse_mode,
                markup=markup,
                floor=self.highest_seen(chat),
                owner=self.owner,
                at=time.time(),
            )
            await self._claim(pending)
            slot = Slot(self, pending)
            try:
                yield slot
            finally:
                if not slot.done:
                    log.warning("telegram_send_unknown", channel=self.ref, chat=chat, key=key)

    async def _claim(self, pending: Pending) -> None:
        name = SENDING + str(pending.chat)
        while not await self.state.claim(self.ref, name, pending.to_json()):
            value = await self.state.get(self.ref, name)
            if value is None:
                continue
            left = Pending.from_json(value)
            if await self.may_settle(left):
                if self.settle_left is None:
                    raise AssertionError("no delivery check to settle a row left behind")
                await self.settle_left(left)
            else:
                await asyncio.sleep(BUSY_WAIT_S)

    async def may_settle(self, left: Pending) -> bool:
        """Whether this process may check ``left``: its own, or left by a process that is
        gone (with one process over the database, any other; with several, one whose
        ``tg-alive`` row, or the claim itself when it has none, is older than
        :data:`GONE_AFTER_S`)."""
        if left.owner == self.owner or not self.shared:
            return True
        alive = await self.state.get(self.ref, ALIVE + left.owner)
        seen = float(alive) if alive else left.at
        return time.time() - seen > GONE_AFTER_S

    async def keep_alive(self) -> None:
        """With several processes: say every :data:`ALIVE_EVERY_S` that this one lives (its
        rows are in flight, not left behind); until cancelled."""
        if not self.shared:
            return
        outage = OutageLog("telegram_alive", quiet=(StorageError,))
        while True:
            try:
                await self.state.set(self.ref, ALIVE + self.owner, repr(time.time()))
            except StorageError as exc:
                outage.failed(exc)
            else:
                outage.succeeded()
            await asyncio.sleep(ALIVE_EVERY_S)

    async def settled(self, pending: Pending, message_id: int) -> None:
        """``pending`` is message ``message_id``: its row goes, the chat's latest id and the
        reply's part are written, in one transaction."""
        put = {LAST + str(pending.chat): str(message_id)}
        if pending.key:
            put[f"{REPLY}{pending.key}:{pending.part}"] = str(message_id)
        await self.state.write(self.ref, put=put, delete=[SENDING + str(pending.chat)])
        self.saw(pending.chat, message_id)
        if pending.owner == self.owner:
            self._own_sent(pending.chat, pending.at, message_id)

    async def absent(self, pending: Pending) -> None:
        """``pending`` made no message."""
        await self.state.delete(self.ref, SENDING + str(pending.chat))

    async def undecided(self, pending: Pending) -> None:
        """Nothing could tell whether ``pending`` made a message: its row goes, the chat is
        fenced (no check looks at it until a message's id is known) and the reply's part
        says so."""
        put = {LAST + str(pending.chat): FENCE}
        if pending.key:
            put[f"{REPLY}{pending.key}:{pending.part}"] = UNDECIDED
        await self.state.write(self.ref, put=put, delete=[SENDING + str(pending.chat)])

    # -- reads ------------------------------------------------------------------------------

    async def left_behind(self) -> list[Pending]:
        """Every ``tg-sending`` row of this channel."""
        return [Pending.from_json(v) for _, v in await self.state.items(self.ref, SENDING)]

    async def pending_in(self, chat: int) -> Pending | None:
        value = await self.state.get(self.ref, SENDING + str(chat))
        return None if value is None else Pending.from_json(value)

    async def last_in(self, chat: int) -> int | None:
        """The chat's ``tg-last``: an id, 0 when none was ever known, None when fenced."""
        value = await self.state.get(self.ref, LAST + str(chat))
        if value is None:
            return 0
        return None if value == FENCE else int(value)

    async def parts_of(self, key: str) -> dict[int, str]:
        """The reply's parts recorded so far: part number to id (or :data:`UNDECIDED`)."""
        prefix = f"{REPLY}{key}:"
        found = await self.state.items(self.ref, prefix)
        return {int(name[len(prefix) :]): value for name, value in found}

    async def prune(self) -> int:
        """Forget the parts of old replies and the ``tg-alive`` rows of long gone processes."""
        gone = await self.state.prune(ALIVE, older_than_s=REPLY_KEEP_S)
        return gone + await self.state.prune(REPLY, older_than_s=REPLY_KEEP_S)
