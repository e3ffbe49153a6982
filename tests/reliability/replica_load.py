"""The load of the multi-replica tests: tagged messages from many people, then a barrier.

``conversations`` people send ``messages`` messages each (``load t<N>x``, see
:mod:`bench.crash_tally`), round by round, at a steady pace, through a
:class:`~tests.reliability.platform_drivers.PlatformDriver`. :meth:`Load.settle` waits until
each message was answered or its sender told to ask again, then sends each conversation one
last message and waits for its answer: turns of a conversation run in order, so once it is
answered nothing about the earlier ones is still pending.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bench.crash_tally import (
    ANSWER,
    StoreReadout,
    Tally,
    answered_tags,
    barrier_text,
    message_text,
)
from tests.fakes.slack_server import BOT_USER, ApiCall, event_callback, message_event
from tests.reliability.platform_drivers import PlatformDriver, SlackDriver, _Pushed, redeliver
from tests.reliability.replica_rig import until

_TAG_NUMBER = re.compile(r"t(\d+)x")


@dataclass
class Load:
    driver: PlatformDriver
    conversations: int
    messages: int
    plan: list[tuple[int, int]] = field(init=False)  # (tag number, conversation), in order
    sent: int = 0

    def __post_init__(self) -> None:
        count = self.conversations
        self.plan = [(m * count + c + 1, c) for m in range(self.messages) for c in range(count)]

    async def send_all(self, *, gap_s: float) -> None:
        """Send the plan, ``gap_s`` apart."""
        await self.send_share(1.0, gap_s=gap_s)

    async def send_share(self, share: float, *, gap_s: float) -> None:
        """Send the next ``share`` of the plan (all that is left with 1.0), ``gap_s`` apart."""
        count = max(1, round(len(self.plan) * share))
        for tag, conversation in self.plan[self.sent : self.sent + count]:
            await self.driver.send(conversation, message_text(tag))
            self.sent += 1
            await asyncio.sleep(gap_s)

    async def settle(
        self,
        tally: Tally,
        timeout_s: float,
        *,
        store: Callable[[], Awaitable[StoreReadout]] | None = None,
    ) -> bool:
        """Every message answered or noticed, then each conversation's barrier answered
        (module docstring); whether both happened within ``timeout_s`` each. ``store``
        reads the store (``Fleet.readout``): where a replica may die with a reply in flight,
        a message whose reply recovery counted as delivered unconfirmed is settled too
        (:meth:`Tally.settled`)."""
        readout: StoreReadout | None = None

        async def wait(check: Callable[[], bool]) -> bool:
            nonlocal readout
            deadline = asyncio.get_running_loop().time() + timeout_s
            while asyncio.get_running_loop().time() < deadline:
                await redeliver(self.driver)
                if store is not None:
                    readout = await store()
                if await until(check, 2.0):
                    return True
            return bool(check())

        settled = await wait(lambda: tally.settled(self.driver, readout))
        for conversation in range(self.conversations):
            await self.driver.send(conversation, barrier_text(conversation))
        closed = await wait(lambda: tally.barriers_answered(self.driver) >= self.conversations)
        tally.settled_in_time = settled and closed
        tally.answered = answered_tags(self.driver)  # what a failure's table shows
        return tally.settled_in_time

    def out_of_order(self) -> dict[int, list[int]]:
        """Conversations whose answers were posted in another order than their messages
        were sent: conversation -> the tag numbers in the order answered."""
        found: dict[int, list[int]] = {}
        for post in self.driver.posts():
            for match in ANSWER.finditer(post.text):
                number = _TAG_NUMBER.fullmatch(match.group(1))
                if number is not None:
                    found.setdefault(post.conversation, []).append(int(number.group(1)))
        return {c: tags for c, tags in found.items() if tags != sorted(tags)}


#: Slack's limit for an acknowledgement: an envelope not acknowledged within it is sent again
#: ("immediately" after it, Slack says; then after a minute and after five, compressed here
#: into :meth:`SlackDriver.redeliver` at the end of a load).
ACK_TIMEOUT_S = 3.0


@dataclass(kw_only=True)
class SpreadSlackDriver(SlackDriver):
    """Slack with several replicas connected, as Slack treats an app's Socket Mode
    connections: each message goes over the next open socket in turn
    (:meth:`FakeSlack.connected_clients`), or over another open one when that socket closed
    under it; with none open it is held until :meth:`redeliver`. An envelope not
    acknowledged within :data:`ACK_TIMEOUT_S` is sent again at once, with the next
    ``retry_attempt``, over an open socket (checked before each message is sent, every
    0.1 s under load); the later retries are :meth:`redeliver`'s (SlackDriver's rules)."""

    _next: int = 0
    #: when each envelope was pushed (``time.monotonic()``), by envelope id
    _pushed_at: dict[str, float] = field(default_factory=dict)

    async def wait_client(self, name: str, wait_s: float) -> None:
        """Wait until the replica ``name`` has its socket open."""
        if not await until(lambda: name in self.fake.connected_clients(), wait_s):
            raise AssertionError(f"{name} did not connect its socket")

    async def mention_for_card(
        self, text: str, *, to: str, channel: str, ts: str, wait_s: float
    ) -> tuple[ApiCall, str]:
        """A mention of the bot saying ``text`` in ``channel`` at ``ts``, sent over the
        socket of ``to``, whose turn posts an approval card: the card's post, and its ``ts``
        once the fake holds it."""
        mention = message_event(f"<@{BOT_USER}> {text}", kind="app_mention", channel=channel, ts=ts)
        await self.fake.wait_ack(await self.fake.push("events_api", event_callback(mention), to=to))
        (card,) = await self.fake.wait_for(
            "chat.postMessage", where=lambda p: "blocks" in p, wait_s=wait_s
        )
        (card_ts,) = [ts for (_, ts), m in self.fake.messages.items() if m.get("blocks")]
        return card, card_ts

    async def send(self, conversation: int, text: str) -> None:
        await self.retry_overdue()
        self.online = bool(self.fake.connected_clients())
        await super().send(conversation, text)

    async def retry_overdue(self) -> None:
        """Send again, once, each envelope not acknowledged within Slack's limit."""
        now = time.monotonic()
        overdue = [
            p
            for p in self.pushed
            if p.attempt == 0
            and p.envelope_id not in self.fake.acks
            and now - self._pushed_at.get(p.envelope_id, now) > ACK_TIMEOUT_S
        ]
        if not overdue:
            return
        self.pushed = [p for p in self.pushed if p not in overdue]
        for item in overdue:
            self.retries += 1
            await self._push(item.event, attempt=1)

    async def _push(self, event: dict[str, object], *, attempt: int) -> None:
        clients = self.fake.connected_clients()
        self._next += 1
        for turn in range(len(clients)):
            to = clients[(self._next + turn) % len(clients)]
            try:
                envelope_id = await self.fake.push(
                    "events_api", event, retry_attempt=attempt, to=to
                )
            except (ConnectionError, RuntimeError):
                continue  # closed under us: Slack uses another connection
            self._pushed_at[envelope_id] = time.monotonic()
            self.pushed.append(_Pushed(event, envelope_id, attempt))
            return
        self.held.append(event)  # no socket open: Slack holds it
