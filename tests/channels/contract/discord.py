"""The card driver on Discord: discord.py over the fake gateway and REST API.

A person presses a button (an ``INTERACTION_CREATE`` for the component, carrying the message
as their client shows it), adds a reaction (``MESSAGE_REACTION_ADD``), or submits the "Deny
with a reply" modal (a ``MODAL_SUBMIT`` interaction). What they are told: the interaction's
ephemeral answer (a deferral or a message edit tells nothing). A reaction has no private
answer on Discord. The full view is the ephemeral follow-ups of "Show full and decide".
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from bot.cards import Button, ButtonCodec, CardVerb
from bot.envelope import SentMessage
from bot.store import Store
from channels.discord.adapter import DiscordChannel
from tests.approval.conftest import until_waiting
from tests.channels.contract.driver import (
    WAIT_S,
    Answer,
    Asked,
    FullView,
    OnProcess,
    Process,
    Shown,
    shell_request,
    started,
)
from tests.fakes.discord_full_views import readable_text
from tests.fakes.discord_payloads import (
    JSON,
    component_interaction,
    modal_submit_interaction,
    reaction_add,
    select_interaction,
)
from tests.fakes.discord_server import Call, FakeDiscord
from tests.fakes.discord_setup import (
    ALICE,
    APPROVER_ROLE,
    BOB,
    BOT,
    BOT_ID,
    CAROL,
    GENERAL,
    make_channel,
    running,
    said,
)

#: What the custom ids of cards drawn before the core's codec start with.
PREFIX = "hatchway:"
#: The codes of their buttons that the core's codec does not read.
LEGACY_CODES = {"e": CardVerb.REPLY, "f": CardVerb.SHOW_FULL}
REACTIONS = {CardVerb.APPROVE: "✅", CardVerb.DENY: "❌"}
EPHEMERAL = 64
PEOPLE = {p["id"]: p for p in (ALICE, BOB, CAROL)}


def _buttons(message: JSON) -> list[JSON]:
    return [c for row in message.get("components") or [] for c in row["components"]]


@dataclass(kw_only=True)
class DiscordCards(OnProcess):
    fake: FakeDiscord
    name: str = "discord"
    requester: str = ALICE["id"]
    approver: str = BOB["id"]
    approver_name: str = BOB["global_name"]
    stranger: str = CAROL["id"]
    tells_reactions: bool = False  # a reaction has no private answer on Discord
    fits_any_uncut_card: bool = False  # a message holds 2,000 characters
    codec: ButtonCodec = field(default_factory=ButtonCodec)
    #: The reply form each person opened last (its custom id), by approval id and user.
    forms: dict[tuple[str, str], JSON] = field(default_factory=dict)
    cards: set[str] = field(default_factory=set)  # the id of every card posted

    async def ask(self, arguments: Mapping[str, object]) -> Asked:
        known = {r.id for r in await self.store.approvals.list()}
        assert self.process.envelope is not None
        request = shell_request(self.process.envelope, arguments)
        task = asyncio.create_task(self.service.ask(request))
        self.process.asks.append(task)
        await self.fake.wait_until(
            lambda: any(_buttons(m) and i not in self.cards for i, m in self.fake.messages.items()),
            within=WAIT_S,
        )
        [record] = [r for r in await self.store.approvals.list() if r.id not in known]
        await until_waiting(self.store, record.id)
        [card_id] = [
            i for i, m in self.fake.messages.items() if _buttons(m) and i not in self.cards
        ]
        self.cards.add(card_id)
        return Asked(record=record, shown=copy.deepcopy(self.fake.messages[card_id]), task=task)

    async def shown_as_sent(self, sent: SentMessage) -> JSON:
        self.cards.add(sent.message_id)
        return copy.deepcopy(self.fake.messages[sent.message_id])

    def shown(self, card: Asked) -> Shown:
        now = self.fake.messages[_shown(card)["id"]]
        verbs = {self._verb(b["custom_id"]) for b in _buttons(now)}
        choices = tuple(o["label"] for o in _options(now))
        return Shown(text=now["content"], buttons=frozenset(verbs), choices=choices)

    async def pick(self, card: Asked, label: str, user: str, *, forged_key: str = "") -> Answer:
        shown = _shown(card)
        [select] = [c for c in _buttons(shown) if c["type"] == 3]
        [value] = [o["value"] for o in select["options"] if o["label"] == label]
        if forged_key:
            value = self.codec.pack(Button.grant(card.approval_id, forged_key))
        interaction_id = self.fake.new_id()
        payload = select_interaction(
            id=interaction_id,
            message=shown,
            custom_id=select["custom_id"],
            values=[value],
            user=PEOPLE[user],
            guild_id=self.fake.guild_of(shown["channel_id"]),
        )
        count = len(self.host.answers)
        callback = await self._dispatch(interaction_id, payload)
        await self.host.answered(count + 1)
        return Answer(told=_told(callback))

    async def press(self, card: Asked, verb: CardVerb, user: str) -> Answer:
        shown = _shown(card)
        custom_id = self._custom_id(shown, card.approval_id, verb)
        interaction_id, callback = await self._interact(shown, custom_id, user)
        body = callback.body or {}
        if body.get("type") == 9:
            self.forms[card.approval_id, user] = body["data"]
            return Answer(form=True)
        if body.get("type") == 5:  # deferred: the full view follows
            return Answer(full_view=await self._full_view(interaction_id))
        return Answer(told=_told(callback))

    async def press_in_full_view(self, view: FullView, verb: CardVerb, user: str) -> Answer:
        shown = view.handle
        assert isinstance(shown, dict)
        [custom_id] = [
            b["custom_id"]
            for b in _buttons(shown)
            if self._verb(b["custom_id"]) is verb and self._full_view_button(b["custom_id"])
        ]
        _, callback = await self._interact(shown, custom_id, user)
        return Answer(told=_told(callback))

    async def react(self, card: Asked, verb: CardVerb, user: str) -> Answer:
        message = self.fake.messages[_shown(card)["id"]]
        payload = reaction_add(
            message=message,
            user=PEOPLE[user],
            emoji=REACTIONS[verb],
            guild_id=self.fake.guild_of(GENERAL),
        )
        count = len(self.host.answers)
        await self.fake.dispatch("MESSAGE_REACTION_ADD", payload)
        await self.host.answered(count + 1)
        return Answer()

    async def submit_reply(self, card: Asked, user: str, text: str) -> Answer:
        modal = self.forms[card.approval_id, user]
        [field_id] = _text_inputs(modal)
        message = self.fake.messages[_shown(card)["id"]]
        interaction_id = self.fake.new_id()
        payload = modal_submit_interaction(
            id=interaction_id,
            custom_id=modal["custom_id"],
            values={field_id: text},
            user=PEOPLE[user],
            channel_id=message["channel_id"],
            message=message,
            guild_id=self.fake.guild_of(message["channel_id"]),
        )
        count = len(self.host.answers)
        callback = await self._dispatch(interaction_id, payload)
        if text.strip():
            await self.host.answered(count + 1)
        return Answer(told=_told(callback))

    async def press_unreadable(self, card: Asked, user: str) -> Answer:
        custom_id = f"{_prefix(_shown(card))}v9:{card.approval_id}:a"
        _, callback = await self._interact(_shown(card), custom_id, user, core=False)
        return Answer(told=_told(callback))

    # -- reading Discord -------------------------------------------------------------------

    def _verb(self, custom_id: str) -> CardVerb:
        payload = custom_id.removeprefix(PREFIX)
        button = self.codec.unpack(payload)
        if isinstance(button, Button):
            return button.verb
        return LEGACY_CODES[payload.split(":")[2]]

    def _full_view_button(self, custom_id: str) -> bool:
        button = self.codec.unpack(custom_id.removeprefix(PREFIX))
        return isinstance(button, Button) and button.full_view

    def _custom_id(self, shown: JSON, approval_id: str, verb: CardVerb) -> str:
        """The custom id of ``verb``'s button on the card as shown; for a button it does not
        show, what a card drawn with one carried."""
        for button in _buttons(shown):
            if self._verb(button["custom_id"]) is verb:
                return str(button["custom_id"])
        return _prefix(shown) + self.codec.pack(Button(approval_id=approval_id, verb=verb))

    async def _interact(
        self, message: JSON, custom_id: str, user: str, *, core: bool = True
    ) -> tuple[str, Call]:
        interaction_id = self.fake.new_id()
        payload = component_interaction(
            id=interaction_id,
            message=_with_button(message, custom_id),
            custom_id=custom_id,
            user=PEOPLE[user],
            guild_id=self.fake.guild_of(message["channel_id"]),
        )
        count = len(self.host.answers)
        callback = await self._dispatch(interaction_id, payload)
        if core:
            await self.host.answered(count + 1)
        return interaction_id, callback

    async def _dispatch(self, interaction_id: str, payload: JSON) -> Call:
        await self.fake.dispatch("INTERACTION_CREATE", payload)
        [call] = await self.fake.wait_for_call(
            "POST", rf"/interactions/{interaction_id}/[^/]+/callback", within=WAIT_S
        )
        return call

    async def _full_view(self, interaction_id: str) -> FullView | None:
        messages = self.fake.ephemerals.get(interaction_id, [])
        if not any(m["components"] for m in messages):
            return None  # the core's answer came after the deferral: nothing was shown
        last = [m for m in messages if m["components"]][-1]
        return FullView(text=readable_text(messages), handle=last)


def _options(message: JSON) -> list[JSON]:
    """The options of the grant choices' select menu."""
    return [o for c in _buttons(message) if c["type"] == 3 for o in c["options"]]


def _prefix(shown: JSON) -> str:
    """What a card's custom ids start with before the payload: ``hatchway:`` on cards drawn
    before the core's codec, nothing after."""
    return PREFIX if any(b["custom_id"].startswith(PREFIX) for b in _buttons(shown)) else ""


def _with_button(message: JSON, custom_id: str) -> JSON:
    """``message`` as a client shows it that still has the button ``custom_id`` (a card
    drawn by a version that offered it): Discord sends the message the press was on."""
    if any(b["custom_id"] == custom_id for b in _buttons(message)):
        return message
    shown = copy.deepcopy(message)
    extra = {"type": 2, "style": 2, "label": "Approve", "custom_id": custom_id}
    shown["components"] = [{"type": 1, "components": [extra]}, *shown["components"]]
    return shown


def _text_inputs(modal: JSON) -> list[str]:
    """The custom ids of a modal's text inputs (in labels or in action rows)."""
    inner = [
        c
        for row in modal["components"]
        for c in ([row["component"]] if "component" in row else row.get("components", []))
    ]
    return [str(c["custom_id"]) for c in inner if c.get("type") == 4]


def _told(callback: Call) -> tuple[str, ...]:
    body = callback.body or {}
    data = body.get("data") or {}
    if body.get("type") == 4 and data.get("flags", 0) & EPHEMERAL:
        return (str(data["content"]),)
    return ()


def _shown(card: Asked) -> JSON:
    assert isinstance(card.shown, dict)
    return card.shown


@asynccontextmanager
async def discord_cards(store: Store) -> AsyncIterator[DiscordCards]:
    """Discord's fake with one guild, the adapter and the approval service, running; the
    requester has mentioned the bot in #general."""
    async with FakeDiscord(bot_id=BOT_ID) as fake:
        fake.add_guild(channels={GENERAL: "general"}, roles={APPROVER_ROLE: "approvers"})
        people = [BOB["id"], ALICE["id"]]
        table = {"allowed_users": ["*"], "approvers": people, "reactions_for_approval": True}

        def build() -> DiscordChannel:
            return make_channel(
                fake, store, allowed_users=["*"], approvers=people, reactions_for_approval=True
            )

        process = Process(store=store, table=table, build=build, serve=running)
        async with started(process):
            await fake.dispatch("MESSAGE_CREATE", said(fake, f"<@{BOT_ID}> go", mentions=[BOT]))
            [process.envelope] = await process.host.wait_envelopes(1, wait_s=WAIT_S)
            yield DiscordCards(process=process, fake=fake)
    assert fake.rule_refusals == [], "the adapter sent what Discord refuses"
