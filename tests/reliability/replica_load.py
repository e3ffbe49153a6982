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
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.crash_tally import ANSWER, Tally, answered_tags, barrier_text, message_text
from tests.reliability.platform_drivers import PlatformDriver, SlackDriver, redeliver
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

    async def settle(self, tally: Tally, timeout_s: float) -> bool:
        """Every message answered or noticed, then each conversation's barrier answered
        (module docstring); whether both happened within ``timeout_s`` each."""

        async def wait(check: Callable[[], bool]) -> bool:
            deadline = asyncio.get_running_loop().time() + timeout_s
            while asyncio.get_running_loop().time() < deadline:
                await redeliver(self.driver)
                if await until(check, 2.0):
                    return True
            return bool(check())

        settled = await wait(lambda: tally.settled(self.driver))
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


@dataclass(kw_only=True)
class SpreadSlackDriver(SlackDriver):
    """Slack with several replicas connected: as Slack spreads an app's events over its
    Socket Mode connections, each message goes over the next replica's socket in turn
    (:meth:`FakeSlack.connected_clients`); with none open it is held until
    :meth:`redeliver`, which also retries what was never acknowledged (SlackDriver's rules)."""

    _next: int = 0

    async def wait_client(self, name: str, wait_s: float) -> None:
        """Wait until the replica ``name`` has its socket open."""
        if not await until(lambda: name in self.fake.connected_clients(), wait_s):
            raise AssertionError(f"{name} did not connect its socket")

    async def send(self, conversation: int, text: str) -> None:
        self.online = bool(self.fake.connected_clients())
        await super().send(conversation, text)

    def socket_for(self) -> str | None:
        clients = self.fake.connected_clients()
        if not clients:
            raise ConnectionError("no replica has its socket open")
        self._next += 1
        return clients[self._next % len(clients)]
