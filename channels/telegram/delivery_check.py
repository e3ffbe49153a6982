"""Whether a message whose send a crash cut off reached Telegram: an edit probe, made safe.

A bot cannot read a chat, but it can edit its own messages, and the Bot API answers an edit
that would change nothing with "message is not modified". So a message recorded before its
request (:mod:`channels.telegram.send_record`: its exact text, parse mode and keyboard) is
looked for by editing candidate ids of its chat to exactly what was sent:

* "message is not modified": the id is a message of the bot's in that chat saying exactly
  that: the message was delivered, with this id;
* "message to edit not found" (no such id in this chat: another chat's, or not made yet),
  "message can't be edited" (someone else's), "there is no text in the message to edit" (a
  file's message): not this one, the next id is tried.

The traps, and why none can spring. An edit with the recorded text of **another** message of
the bot's would succeed and overwrite it, and an edit without the keyboard would strip one.
So every message the bot sends is recorded before it is sent and sends to one chat are
serialised: at most one message of the bot's in a chat has an id the store does not know.
Ids are tried only above the chat's ``tg-last`` (the id of the bot's latest message there
whose id is known: every other message of the bot's in the chat is below it) and above the
highest id seen before the request (``floor``); the keyboard is sent as recorded. So the only
message of the bot's an edit can reach is the one looked for, and an edit that succeeded
would mean that invariant broke: it is logged as an error (``telegram_probe_changed_a_message``)
and the check gives up. Ids this process saw as someone else's messages are not tried.

Where the ids are. In supergroups and channels ids count per chat; in private chats and basic
groups one counter serves all of the bot account's chats, incoming and outgoing (a probe
there walks through the ids of other chats, answered "not found"). The first
:data:`LOOKAHEAD` ids are tried at once; past them and past the highest id seen in the
counter there is nothing known to try: the check waits for newer ids (updates, sends) up to
``delivery_check_wait_s``. The message is known not delivered once every id below an
id this process's own sends got in that counter was tried, counting only sends claimed at
least ``delivery_check_margin_s`` after the message's own claim (its request's flight, and
the clocks of two hosts when another replica made it): Telegram made those after anything
that request made. A row this process left itself
(a request that timed out) has no such bound.

Undecided (the check returns None; recovery then sends the reply again marked as a possible
repeat, and counts it): a file's message (no text to compare), a chat fenced by an earlier
undecided check, a chat with no known id to start from, :data:`MAX_PROBES` ids tried, no
bound reached within the wait, or an error other than those above. Every answer's
``retry_after`` is waited out, probes are spaced by ``delivery_check_interval_s``, and a
check runs only once the channel is connected: after start-up, in the background.
"""

from __future__ import annotations

import asyncio
import enum
import json
import time
from collections.abc import Sequence

import structlog
from telegram import Bot, InlineKeyboardMarkup
from telegram.error import BadRequest, RetryAfter, TelegramError

from bot.channel import SentMessage
from bot.envelope import ChannelRef, DeliveryTarget
from channels.telegram.config import TelegramChannelConfig
from channels.telegram.normalise import message_key
from channels.telegram.ratelimit import retry_after_seconds
from channels.telegram.send_record import UNDECIDED, Pending, SendRecord

log = structlog.get_logger(__name__)

#: The most ids one check tries.
MAX_PROBES = 500
#: Ids tried past the start before any newer id was seen (a message sent just before a
#: crash is usually among the next few dozen; trying an id not made yet costs one call).
LOOKAHEAD = 64
#: Failed probes (network errors) tried again before the check gives up.
PROBE_RETRIES = 3
_ELSEWHERE = (
    "message to edit not found",
    "message can't be edited",
    "there is no text in the message to edit",
    "message_id_invalid",
)


class Verdict(enum.Enum):
    DELIVERED = "delivered"
    ABSENT = "absent"
    UNDECIDED = "undecided"


class _Answer(enum.Enum):
    HERE = "here"
    ELSEWHERE = "elsewhere"
    CHANGED = "changed"
    FAILED = "failed"


class TelegramDeliveryCheck:
    """:class:`~bot.channel.BackgroundDeliveryCheck` of one bot (its channel's
    ``delivery``), and the settling of the rows sends left behind (the record's
    ``settle_left``)."""

    def __init__(
        self, *, ref: ChannelRef, config: TelegramChannelConfig, bot: Bot, record: SendRecord
    ) -> None:
        self._ref = ref
        self._config = config
        self._bot = bot
        self._record = record
        self.connected = asyncio.Event()
        record.settle_left = self.settle

    def checks_later(self) -> bool:
        """The check edits messages: recovery runs it after start-up, in the background."""
        return True

    async def find_delivered(
        self,
        target: DeliveryTarget,
        *,
        key: str,
        text: str,
        after_message_id: str | None,
    ) -> Sequence[SentMessage] | None:
        """The messages of the reply ``key`` that reached the chat, once the channel is
        connected: what the record knows, after settling the chat's row left behind."""
        chat = int(target.conversation_id)
        await self.connected.wait()
        async with self._record.chat(chat):
            left = await self._record.pending_in(chat)
            # the reply's own row: the process that sent it is gone (recovery asks only
            # for those); another row is another message's, in flight or settled later
            if left is not None and key and left.key == key:
                await self.settle(left)
        parts = await self._record.parts_of(key)
        if UNDECIDED in parts.values():
            return None
        return [
            SentMessage(target=target, message_id=message_key(chat, int(parts[part])))
            for part in sorted(parts)
        ]

    async def run(self) -> None:
        """Settle every row left behind that this process may settle (start-up: those a
        crash left), once connected; then nothing more (sends settle what they meet)."""
        await self.connected.wait()
        for left in await self._record.left_behind():
            if not await self._record.may_settle(left):
                continue
            async with self._record.chat(left.chat):
                now = await self._record.pending_in(left.chat)
                if now is not None and now == left:
                    await self.settle(left)

    async def settle(self, pending: Pending) -> None:
        """Probe for ``pending`` and write what was found (the caller holds its chat)."""
        started = time.monotonic()
        verdict, message_id, tried = await self._probe(pending)
        if verdict is Verdict.DELIVERED and message_id is not None:
            await self._record.settled(pending, message_id)
        elif verdict is Verdict.ABSENT:
            await self._record.absent(pending)
        else:
            await self._record.undecided(pending)
        log.info(
            "telegram_delivery_checked",
            channel=str(self._ref),
            chat=pending.chat,
            key=pending.key,
            part=pending.part,
            verdict=verdict.value,
            message_id=message_id,
            probes=tried,
            duration_ms=round((time.monotonic() - started) * 1000),
        )

    async def _probe(self, pending: Pending) -> tuple[Verdict, int | None, int]:
        record = self._record
        last = await record.last_in(pending.chat)
        if pending.text is None or last is None:
            return Verdict.UNDECIDED, None, 0  # a file's message, or a fenced chat
        start = max(last, pending.floor) + 1
        if start == 1:
            return Verdict.UNDECIDED, None, 0  # nothing known to start above
        markup = (
            InlineKeyboardMarkup.de_json(json.loads(pending.markup), self._bot)
            if pending.markup
            else None
        )
        bounded = pending.owner != record.owner
        deadline = time.monotonic() + self._config.delivery_check_wait_s
        candidate, tried = start, 0
        while True:
            bound = record.bound_for(pending) if bounded else None
            if bound is not None and candidate >= bound:
                return Verdict.ABSENT, None, tried
            if tried >= MAX_PROBES:
                return Verdict.UNDECIDED, None, tried
            if candidate > max(record.highest_seen(pending.chat), start + LOOKAHEAD):
                # nothing made there yet as far as this process knows: wait for news
                left_s = deadline - time.monotonic()
                if left_s <= 0:
                    return Verdict.UNDECIDED, None, tried
                try:
                    async with asyncio.timeout(left_s):
                        await record.changed()
                except TimeoutError:
                    return Verdict.UNDECIDED, None, tried
                continue
            if record.is_known(pending.chat, candidate):
                candidate += 1
                continue
            answer = await self._edit(pending, candidate, markup)
            tried += 1
            if answer is _Answer.HERE:
                return Verdict.DELIVERED, candidate, tried
            if answer is _Answer.CHANGED:
                log.error(
                    "telegram_probe_changed_a_message",
                    channel=str(self._ref),
                    chat=pending.chat,
                    message_id=candidate,
                )
                return Verdict.UNDECIDED, None, tried
            if answer is _Answer.FAILED:
                return Verdict.UNDECIDED, None, tried
            candidate += 1
            if self._config.delivery_check_interval_s:
                await asyncio.sleep(self._config.delivery_check_interval_s)

    async def _edit(
        self, pending: Pending, message_id: int, markup: InlineKeyboardMarkup | None
    ) -> _Answer:
        """Edit ``message_id`` to exactly what ``pending`` sent; what Telegram said."""
        failures = 0
        while True:
            try:
                await self._bot.edit_message_text(
                    chat_id=pending.chat,
                    message_id=message_id,
                    text=pending.text or "",
                    parse_mode=pending.parse_mode,
                    reply_markup=markup,
                )
            except RetryAfter as exc:
                await asyncio.sleep(retry_after_seconds(exc))
                continue
            except BadRequest as exc:
                said = exc.message.lower()
                if "not modified" in said:
                    return _Answer.HERE
                if any(phrase in said for phrase in _ELSEWHERE):
                    return _Answer.ELSEWHERE
                log.warning("telegram_probe_refused", channel=str(self._ref), error=exc.message)
                return _Answer.FAILED
            except TelegramError as exc:
                # an edit is safe to repeat: it can only reach the message looked for
                failures += 1
                if failures > PROBE_RETRIES:
                    log.warning("telegram_probe_failed", channel=str(self._ref), error=exc.message)
                    return _Answer.FAILED
                await asyncio.sleep(0.5 * failures)
                continue
            return _Answer.CHANGED
