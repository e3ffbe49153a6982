"""The three platforms as the crash matrix and the crash load bench drive them.

A :class:`PlatformDriver` stands for the people on one platform: conversation ``i`` is one
person writing to the bot (a Telegram DM, a Slack DM, a Discord guild channel where the bot is
mentioned), through the loopback fake, exactly as the platform would deliver it. It also
gives the daemon's channel table for that fake, the tokens the table names, and reads back
what the bot posted, by conversation; it waits for an approval card in a conversation and has
its person tap Approve, as the platform sends the tap (each driver's ``card`` is the card as
its fake holds it). :func:`driven` runs a platform's fake with its driver.

What each fake does while the daemon is down, as the platform would:

* Telegram keeps updates until a ``getUpdates`` offset confirms them: a message sent while
  the bot is down, or admitted but not confirmed before a crash, is fetched after the restart.
* Slack retries an event the app did not acknowledge (Socket Mode: ``retry_attempt`` 1, 2, 3)
  and holds events while no socket is connected. The fake does neither by itself; this driver
  does it for the fake (:meth:`SlackDriver.redeliver`): events sent while no socket was open
  are pushed once one is, and unacknowledged events are pushed again with the next
  ``retry_attempt``, at most three times (Slack's limit). Slack's own delays between retries
  (about a minute, then five) are not modelled: retries go out as soon as the app is back.
* Discord does not replay anything to a new gateway session: a message created while the bot
  is down is only in the channel's history (:meth:`FakeDiscord.post` keeps every message
  there and dispatches it only to a connected session), and only reading the history at
  start-up (the adapter's catch-up) finds it.
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from tests.fakes.discord_full_views import press
from tests.fakes.discord_payloads import message_payload, user_payload
from tests.fakes.discord_server import BOT_TOKEN as DISCORD_TOKEN
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_server import FakeSlack, event_callback, message_event
from tests.fakes.telegram_server import FakeTelegram, callback, message, private_chat, user

TELEGRAM_TOKEN = "727272:AAcrash-matrix-token-for-the-fake-bot-api-q"
SLACK_BOT_TOKEN = "xoxb-7272-7272-crash-matrix-bot-token"
SLACK_APP_TOKEN = "xapp-1-A7272-crash-matrix-app-token"
DISCORD_BOT_ID = "900000000000000001"
QUICK_RECONNECTS = "reconnect_initial_s = 0.05\nreconnect_max_s = 0.5\n"
PLATFORMS = ("telegram", "slack", "discord")
#: How long a Telegram check of a send cut off by a crash waits for newer ids (the
#: default, a minute, is for a real chat's pace; here the people are quick).
TELEGRAM_CHECK_WAIT_S = 10
JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Post:
    """One message the bot posted: to which conversation, with what text."""

    conversation: int
    text: str


class PlatformDriver(Protocol):
    """People talking to the bot on one platform (module docstring)."""

    name: str

    @property
    def channel(self) -> str:
        """The channel's ``kind.alias``, as the inbox names it."""
        ...

    def channel_table(self, client: str = "") -> str:
        """The daemon's ``[channels.<kind>.main]`` table for this fake; with ``client``, the
        table of the process the fake knows by that name (one of several replicas: its
        calls are marked with it, where the fake can tell clients apart)."""
        ...

    def environment(self) -> dict[str, str]:
        """The token variables the table names, for the daemon's environment."""
        ...

    async def connected(self) -> None:
        """Wait until the daemon process started since the last :meth:`went_down` is
        connected to the fake (call it once the daemon said READY)."""
        ...

    def went_down(self) -> None:
        """The daemon process died: until :meth:`connected`, what people send is held by
        the platform (module docstring)."""
        ...

    def hold_connection(self, held: bool) -> None:
        """Hold (or let go) the next connection where the bot may post only once it is
        connected (Discord: the login, ``GET /users/@me``, unanswered; the gateway comes
        after it). Telegram and Slack post over HTTP with nothing to wait for first."""
        ...

    async def send(self, conversation: int, text: str) -> None:
        """Person ``conversation`` writes ``text`` to the bot."""
        ...

    def posts(self) -> list[Post]:
        """Every message the bot posted, oldest first."""
        ...

    async def wait_post(self, conversation: int, needle: str, wait_s: float) -> None:
        """Wait until the bot posted a message containing ``needle`` to ``conversation``."""
        ...

    def edits_that_changed(self) -> list[str]:
        """Every edit of the bot's that changed a message (one line each)."""
        ...

    def blind_edits_that_changed(self) -> list[str]:
        """Those made by a process that was never told the message's id (an edit probe's
        kind of edit: none may change a message)."""
        ...

    def person(self, conversation: int) -> str:
        """The platform's id of the person writing in ``conversation``."""
        ...

    async def wait_card(self, conversation: int, wait_s: float) -> None:
        """Wait until the bot posted an approval card (a message with buttons) to
        ``conversation``."""
        ...

    async def approve(self, conversation: int) -> None:
        """The person of ``conversation`` taps Approve on the card there."""
        ...


@dataclass(kw_only=True)
class TelegramDriver:
    fake: FakeTelegram
    name: str = "telegram"

    @property
    def channel(self) -> str:
        return "telegram.main"

    def channel_table(self, client: str = "") -> str:
        base_url = self.fake.base_url_for(client) if client else self.fake.base_url
        return f"""
[channels.telegram.main]
token_env = "CRASH_TELEGRAM_TOKEN"
api_base_url = "{base_url}"
file_base_url = "{self.fake.file_base_url}"
poll_timeout_s = 1
allowed_users = ["*"]
dm_policy = "open"
delivery_check_wait_s = {TELEGRAM_CHECK_WAIT_S}
delivery_check_interval_s = 0
{QUICK_RECONNECTS}"""

    def environment(self) -> dict[str, str]:
        return {"CRASH_TELEGRAM_TOKEN": TELEGRAM_TOKEN}

    async def connected(self) -> None:
        return None  # updates wait in the fake until a poll takes them

    def went_down(self) -> None:
        return None

    def hold_connection(self, held: bool) -> None:
        return None

    @staticmethod
    def chat(conversation: int) -> int:
        return 5000 + conversation

    async def send(self, conversation: int, text: str) -> None:
        chat = self.chat(conversation)
        number = self.fake.next_message_id(chat)  # Telegram's ids: one counter for every DM
        payload = message(private_chat(chat), user(chat), text, message_id=number)
        await self.fake.push({"message": payload})

    def posts(self) -> list[Post]:
        return [
            Post(int(c.params["chat_id"]) - 5000, str(c.params.get("text", "")))
            for c in self.fake.calls_of("sendMessage")
        ]

    def edits_that_changed(self) -> list[str]:
        return [
            f"{c.method} {c.chat_id}/{c.message_id} (was {c.before!r})"
            for c in self.fake.changed_by_edit
        ]

    def blind_edits_that_changed(self) -> list[str]:
        return [
            f"{c.method} {c.chat_id}/{c.message_id} (was {c.before!r})"
            for c in self.fake.changed_by_edit
            if c.blind
        ]

    async def wait_post(self, conversation: int, needle: str, wait_s: float) -> None:
        chat = self.chat(conversation)
        await self.fake.wait_for(
            "sendMessage",
            lambda c: c.params.get("chat_id") == chat and needle in str(c.params.get("text")),
            wait_s=wait_s,
        )

    def person(self, conversation: int) -> str:
        return str(self.chat(conversation))

    def card(self, conversation: int) -> JSON:
        """The open card in ``conversation``, as the chat shows it."""
        [card] = [m for m in self.fake.bot_messages(self.chat(conversation)) if "reply_markup" in m]
        return card

    async def wait_card(self, conversation: int, wait_s: float) -> None:
        chat = self.chat(conversation)
        await self.fake.wait_for(
            "sendMessage",
            lambda c: c.params.get("chat_id") == chat and "reply_markup" in c.params,
            wait_s=wait_s,
        )

    async def approve(self, conversation: int) -> None:
        card = self.card(conversation)
        data = card["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        query = f"q-approve-{card['message_id']}"
        await self.fake.push(callback(query, user(self.chat(conversation)), data, card))


@dataclass(frozen=True, slots=True)
class _Pushed:
    event: dict[str, object]
    envelope_id: str
    attempt: int


@dataclass(kw_only=True)
class SlackDriver:
    fake: FakeSlack
    name: str = "slack"
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    #: Events sent while no socket was open, in order; pushed by :meth:`redeliver`.
    held: list[dict[str, object]] = field(default_factory=list)
    pushed: list[_Pushed] = field(default_factory=list)
    retries: int = 0
    online: bool = False
    connections_before: int = 0  # socket connections made by processes now dead

    @property
    def channel(self) -> str:
        return "slack.main"

    def channel_table(self, client: str = "") -> str:
        base_url = self.fake.api_base_url_for(client) if client else self.fake.api_base_url
        return f"""
[channels.slack.main]
bot_token_env = "CRASH_SLACK_BOT_TOKEN"
app_token_env = "CRASH_SLACK_APP_TOKEN"
api_base_url = "{base_url}"
allowed_users = ["*"]
dm_policy = "open"
{QUICK_RECONNECTS}"""

    def environment(self) -> dict[str, str]:
        return {
            "CRASH_SLACK_BOT_TOKEN": SLACK_BOT_TOKEN,
            "CRASH_SLACK_APP_TOKEN": SLACK_APP_TOKEN,
        }

    async def connected(self) -> None:
        await self.fake.wait_connected(self.connections_before + 1, wait_s=120.0)
        self.online = True

    def went_down(self) -> None:
        self.online = False
        self.connections_before = self.fake.connections

    def hold_connection(self, held: bool) -> None:
        return None

    @staticmethod
    def dm(conversation: int) -> str:
        return f"D{conversation:06d}"

    async def send(self, conversation: int, text: str) -> None:
        # ts below every ts the fake gives the bot's posts: a reply is always "after" it
        ts = f"1600000000.{next(self._ids):06d}"
        event = event_callback(
            message_event(
                text, user=self.person(conversation), channel=self.dm(conversation), ts=ts
            )
        )
        if not self.online:
            self.held.append(event)
            return
        await self._push(event, attempt=0)

    def socket_for(self) -> str | None:
        """The named client whose socket gets the next event; None: the one connected last
        (one process). ``ConnectionError`` when none is open."""
        return None

    async def _push(self, event: dict[str, object], *, attempt: int) -> None:
        try:
            to = self.socket_for()
            envelope_id = await self.fake.push("events_api", event, retry_attempt=attempt, to=to)
        except (ConnectionError, RuntimeError):
            self.held.append(event)  # the socket closed under us: Slack would retry
            return
        self.pushed.append(_Pushed(event, envelope_id, attempt))

    async def redeliver(self) -> None:
        """What Slack does once the app is connected again: events held while no socket
        was open are pushed, and events never acknowledged are retried (at most three
        retries per event)."""
        held, self.held = self.held, []
        for event in held:
            await self._push(event, attempt=0)
        unacked = [p for p in self.pushed if p.envelope_id not in self.fake.acks]
        self.pushed = [p for p in self.pushed if p.envelope_id in self.fake.acks]
        for item in unacked:
            if item.attempt < 3:
                self.retries += 1
                await self._push(item.event, attempt=item.attempt + 1)

    def posts(self) -> list[Post]:
        return [
            Post(int(str(c.params["channel"])[1:]), str(c.params.get("text", "")))
            for c in self.fake.calls_of("chat.postMessage")
            if str(c.params.get("channel", "")).startswith("D")
        ]

    def edits_that_changed(self) -> list[str]:
        return [f"chat.update {c.params.get('ts')}" for c in self.fake.calls_of("chat.update")]

    def blind_edits_that_changed(self) -> list[str]:
        return []  # Slack's check reads history: it never edits

    async def wait_post(self, conversation: int, needle: str, wait_s: float) -> None:
        dm = self.dm(conversation)
        await self.fake.wait_for(
            "chat.postMessage",
            where=lambda p: p.get("channel") == dm and needle in str(p.get("text")),
            wait_s=wait_s,
        )

    @staticmethod
    def person(conversation: int) -> str:
        return f"U{conversation:06d}"

    def card(self, conversation: int) -> tuple[str, str]:
        """Where the card in ``conversation`` is: its channel and ``ts``."""
        [place] = [
            place
            for place, m in self.fake.messages.items()
            if place[0] == self.dm(conversation)
            and any(b.get("type") == "actions" for b in m.get("blocks") or [])
        ]
        return place

    async def wait_card(self, conversation: int, wait_s: float) -> None:
        dm = self.dm(conversation)
        await self.fake.wait_for(
            "chat.postMessage",
            where=lambda p: p.get("channel") == dm and "blocks" in p,
            wait_s=wait_s,
        )

    async def approve(self, conversation: int) -> None:
        channel, ts = self.card(conversation)
        pressed = self.fake.press(channel, ts, "hatchway_approve", user=self.person(conversation))
        await self.fake.wait_ack(await self.fake.push("interactive", pressed))


@dataclass(kw_only=True)
class DiscordDriver:
    fake: FakeDiscord
    conversations: int
    name: str = "discord"
    identifies_before: int = 0  # gateway sessions of processes now dead

    def __post_init__(self) -> None:
        self.fake.add_guild(channels={self.room(i): f"room-{i}" for i in range(self.conversations)})

    @property
    def channel(self) -> str:
        return "discord.main"

    def channel_table(self, client: str = "") -> str:
        gateway_url = self.fake.gateway_url_for(client) if client else self.fake.gateway_url
        return f"""
[channels.discord.main]
token_env = "CRASH_DISCORD_TOKEN"
api_base_url = "{self.fake.base_url}"
gateway_url = "{gateway_url}"
guild_ready_timeout_s = 0.05
sync_commands = false
allowed_users = ["*"]
require_mention = true
{QUICK_RECONNECTS}"""

    def environment(self) -> dict[str, str]:
        return {"CRASH_DISCORD_TOKEN": DISCORD_TOKEN}

    async def connected(self) -> None:
        await self.fake.wait_for_gateway(identifies=self.identifies_before + 1, within=120.0)

    def went_down(self) -> None:
        self.identifies_before = self.fake.identifies  # the fake sees the socket close

    def hold_connection(self, held: bool) -> None:
        if held:
            self.fake.login_gate.clear()
        else:
            self.fake.login_gate.set()

    @staticmethod
    def room(conversation: int) -> str:
        return str(810000000000000000 + conversation)

    async def send(self, conversation: int, text: str) -> None:
        room = self.room(conversation)
        bot = user_payload(DISCORD_BOT_ID, "hatchway", bot=True)
        payload = message_payload(
            id=self.fake.new_id(),
            channel_id=room,
            author=user_payload(self.person(conversation), f"u{conversation}"),
            content=f"<@{DISCORD_BOT_ID}> {text}",
            guild_id=self.fake.guild_of(room),
            mentions=[bot],
        )
        # sent into a session that just died (or the fake gave up waiting for the next one:
        # TimeoutError), it is only in the channel's history
        with contextlib.suppress(ConnectionError, TimeoutError):
            await self.fake.post(payload)

    def posts(self) -> list[Post]:
        found = []
        for call in self.fake.calls_to("POST", r"/channels/\d+/messages"):
            room = re.fullmatch(r"/channels/(\d+)/messages", call.path)
            assert room is not None
            text = str((call.body or {}).get("content", ""))
            found.append(Post(int(room[1]) - 810000000000000000, text))
        return found

    def edits_that_changed(self) -> list[str]:
        return [
            f"PATCH {c.path}" for c in self.fake.calls_to("PATCH", r"/channels/\d+/messages/\d+")
        ]

    def blind_edits_that_changed(self) -> list[str]:
        return []  # Discord's check reads history: it never edits

    async def wait_post(self, conversation: int, needle: str, wait_s: float) -> None:
        def posted() -> bool:
            return any(p.conversation == conversation and needle in p.text for p in self.posts())

        await self.fake.wait_until(posted, within=wait_s)

    @staticmethod
    def person(conversation: int) -> str:
        return str(100000000000000000 + conversation)

    def card(self, conversation: int) -> JSON:
        """The open card in ``conversation``'s room, as the fake holds it."""
        room = self.room(conversation)
        [card] = [
            m for m in self.fake.messages.values() if m["components"] and m["channel_id"] == room
        ]
        return card

    async def wait_card(self, conversation: int, wait_s: float) -> None:
        room = self.room(conversation)
        await self.fake.wait_until(
            lambda: any(
                m["components"] and m["channel_id"] == room for m in self.fake.messages.values()
            ),
            within=wait_s,
        )

    async def approve(self, conversation: int) -> None:
        who = user_payload(self.person(conversation), f"u{conversation}")
        await press(self.fake, self.card(conversation), "a", who)


async def redeliver(driver: PlatformDriver) -> None:
    """After a restart, what the platform delivers again on its own (Slack's retries)."""
    if isinstance(driver, SlackDriver):
        await driver.redeliver()


@contextlib.asynccontextmanager
async def driven(
    name: str, *, conversations: int = 2, slack: type[SlackDriver] | None = None
) -> AsyncIterator[TelegramDriver | SlackDriver | DiscordDriver]:
    """The fake of the platform ``name`` (one of :data:`PLATFORMS`) running, and its driver
    (Discord: rooms for ``conversations`` conversations; Slack: a ``slack`` driver, by
    default :class:`SlackDriver`)."""
    if name == "telegram":
        async with FakeTelegram(TELEGRAM_TOKEN) as tg:
            yield TelegramDriver(fake=tg)
    elif name == "slack":
        async with FakeSlack(SLACK_BOT_TOKEN, SLACK_APP_TOKEN) as fake:
            yield (slack or SlackDriver)(fake=fake)
    else:
        async with FakeDiscord() as discord:
            yield DiscordDriver(fake=discord, conversations=conversations)
