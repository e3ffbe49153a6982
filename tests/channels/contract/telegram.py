"""The card driver on Telegram: python-telegram-bot polling the fake Bot API.

A person taps an inline button (a ``callback_query`` with the card's message as their client
shows it), adds a reaction (``message_reaction``), or replies to the card (Telegram's reply
form: "✏️ Reply instead" answers with how to reply). What they are told: a tap's alert
(``answerCallbackQuery`` with ``show_alert``; a silent answer tells nothing), or a message
replying to theirs or to the card. The full view is the pages (or the file) posted as
replies to the card, the last with its own buttons.
"""

from __future__ import annotations

import asyncio
import html
import itertools
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from bot.cards import Button, ButtonCodec, CardVerb
from bot.envelope import SentMessage
from bot.store import Store
from channels.telegram.adapter import TelegramChannel
from channels.telegram.card_surface import REPLY_HINT
from channels.telegram.cards import CHOICE_PREFIX
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
from tests.fakes.channel_health import serving
from tests.fakes.telegram_server import (
    JSON,
    ApiCall,
    FakeTelegram,
    callback,
    forum_chat,
    mention,
    message,
    reaction,
    user,
)
from tests.fakes.telegram_setup import APPROVER, REQUESTER, STRANGER, TOKEN, channel_for

GROUP = forum_chat(-100777)
CHAT = int(GROUP["id"])
TOPIC = 5
REACTIONS = {CardVerb.APPROVE: "✅", CardVerb.DENY: "❌"}
_ids = itertools.count(100)


def said(sender: int, text: str, **extra: object) -> JSON:
    """A message in the topic, with a fresh message id."""
    payload = message(GROUP, user(sender), text, message_id=next(_ids), thread_id=TOPIC, **extra)
    return {"message": payload}


def _pre_text(calls: list[ApiCall]) -> str:
    return "".join(
        html.unescape(block)
        for call in calls
        for block in re.findall(r"<pre>(.*?)</pre>", str(call.params["text"]), re.DOTALL)
    )


@dataclass(kw_only=True)
class TelegramCards(OnProcess):
    fake: FakeTelegram
    name: str = "telegram"
    requester: str = str(REQUESTER)
    approver: str = str(APPROVER)
    approver_name: str = "Bea"
    stranger: str = str(STRANGER)
    tells_reactions: bool = True  # only "approve from the full view", as a reply to the card
    fits_any_uncut_card: bool = False  # a message holds 4,096 characters of HTML
    codec: ButtonCodec = field(default_factory=ButtonCodec)

    async def ask(self, arguments: Mapping[str, object]) -> Asked:
        known = {r.id for r in await self.store.approvals.list()}
        assert self.process.envelope is not None
        request = shell_request(self.process.envelope, arguments)
        task = asyncio.create_task(self.service.ask(request))
        self.process.asks.append(task)
        await self.fake.wait_for(
            "sendMessage",
            lambda c: str(c.params.get("text", "")).startswith("<b>🔐"),
            count=len(known) + 1,
            wait_s=WAIT_S,
        )
        [record] = [r for r in await self.store.approvals.list() if r.id not in known]
        await until_waiting(self.store, record.id)
        [card] = [m for m in self.fake.bot_messages(CHAT) if m["text"].startswith("🔐")][-1:]
        return Asked(record=record, shown=card, task=task)

    async def shown_as_sent(self, sent: SentMessage) -> JSON:
        chat, number = sent.message_id.split(":")
        return self.fake.bot_message_now(int(chat), int(number))

    def shown(self, card: Asked) -> Shown:
        now = self.fake.bot_message_now(CHAT, _shown(card)["message_id"])
        choices = tuple(text.removeprefix(CHOICE_PREFIX) for text, _ in self._choices(now))
        return Shown(text=now["text"], buttons=frozenset(self._verbs(now)), choices=choices)

    def _choices(self, shown: JSON) -> list[tuple[str, str]]:
        """The grant choices' buttons: their text and callback data."""
        rows = shown.get("reply_markup", {}).get("inline_keyboard", [])
        keys = [(b["text"], b["callback_data"]) for row in rows for b in row]
        return [
            (text, data)
            for text, data in keys
            if isinstance(b := self.codec.unpack(data), Button) and b.verb is CardVerb.GRANT
        ]

    async def pick(self, card: Asked, label: str, user_id: str, *, forged_key: str = "") -> Answer:
        [data] = [d for t, d in self._choices(_shown(card)) if t == CHOICE_PREFIX + label]
        if forged_key:
            data = self.codec.pack(Button.grant(card.approval_id, forged_key))
        return Answer(told=self._alert(await self._tap(_shown(card), data, user_id)))

    def _verbs(self, shown: JSON) -> list[CardVerb]:
        rows = shown.get("reply_markup", {}).get("inline_keyboard", [])
        found = [self.codec.unpack(b["callback_data"]) for row in rows for b in row]
        return [b.verb for b in found if isinstance(b, Button)]

    async def press(self, card: Asked, verb: CardVerb, user_id: str) -> Answer:
        data = self.codec.pack(Button(approval_id=card.approval_id, verb=verb))
        mark = len(self.fake.calls)
        query = await self._tap(_shown(card), data, user_id)
        told = self._alert(query)
        if verb is CardVerb.REPLY and told == (REPLY_HINT,):
            return Answer(form=True)
        view = self._full_view(card, self.fake.calls[mark:]) if verb is CardVerb.SHOW_FULL else None
        return Answer(told=told, full_view=view)

    async def press_in_full_view(self, view: FullView, verb: CardVerb, user_id: str) -> Answer:
        shown = view.handle
        assert isinstance(shown, dict)
        [approval_id] = {b.approval_id for b in self._buttons(shown)}
        data = self.codec.pack(Button(approval_id=approval_id, verb=verb, full_view=True))
        return Answer(told=self._alert(await self._tap(shown, data, user_id)))

    async def react(self, card: Asked, verb: CardVerb, user_id: str) -> Answer:
        mark = len(self.fake.calls)
        number = _shown(card)["message_id"]
        person = self._person(user_id)
        await self.fake.push(reaction(GROUP, number, person, REACTIONS[verb]))
        await self._answer()
        return Answer(told=self._replies_to(number, self.fake.calls[mark:]))

    async def submit_reply(self, card: Asked, user_id: str, text: str) -> Answer:
        mark = len(self.fake.calls)
        reply = said(int(user_id), text, reply_to=_shown(card))
        number = reply["message"]["message_id"]
        await self.fake.push(reply)
        if not text.strip():  # answered by the adapter alone
            await self.fake.wait_for("sendMessage", lambda c: _replies(c) == number, wait_s=WAIT_S)
        else:
            await self._answer()
        return Answer(told=self._replies_to(number, self.fake.calls[mark:]))

    async def press_unreadable(self, card: Asked, user_id: str) -> Answer:
        data = f"v9:{card.approval_id}:a"
        return Answer(told=self._alert(await self._tap(_shown(card), data, user_id, core=False)))

    # -- reading Telegram ------------------------------------------------------------------

    async def _answer(self) -> None:
        await self.host.answered(len(self.host.answers) + 1)

    async def _tap(self, shown: JSON, data: str, user_id: str, *, core: bool = True) -> ApiCall:
        query = f"q-{next(_ids)}"
        count = len(self.host.answers)
        await self.fake.push(callback(query, self._person(user_id), data, shown))
        [answer] = await self.fake.wait_for(
            "answerCallbackQuery", lambda c: c.params["callback_query_id"] == query, wait_s=WAIT_S
        )
        if core:
            await self.host.answered(count + 1)
        return answer

    def _person(self, user_id: str) -> JSON:
        """``user_id`` as Telegram sends the sender of an update: the approver by name."""
        return user(int(user_id), self.approver_name if user_id == self.approver else "Someone")

    @staticmethod
    def _alert(answer: ApiCall) -> tuple[str, ...]:
        if not answer.params.get("show_alert"):
            return ()  # a silent answer: the spinner stops, nothing is told
        return (str(answer.params["text"]),)

    @staticmethod
    def _replies_to(number: int, calls: list[ApiCall]) -> tuple[str, ...]:
        return tuple(
            str(c.params["text"])
            for c in calls
            if c.method == "sendMessage"
            and _replies(c) == number
            and not str(c.params["text"]).startswith("<b>🔎")
        )

    def _buttons(self, shown: JSON) -> list[Button]:
        rows = shown.get("reply_markup", {}).get("inline_keyboard", [])
        found = [self.codec.unpack(b["callback_data"]) for row in rows for b in row]
        return [b for b in found if isinstance(b, Button)]

    def _full_view(self, card: Asked, calls: list[ApiCall]) -> FullView | None:
        number = _shown(card)["message_id"]
        pages = [
            c
            for c in calls
            if c.method == "sendMessage"
            and _replies(c) == number
            and str(c.params["text"]).startswith("<b>🔎")
        ]
        documents = [c for c in calls if c.method == "sendDocument" and _replies(c) == number]
        if not pages and not documents:
            return None
        text = (
            _pre_text(pages)
            if pages
            else documents[0].params["document"]["bytes"].decode("utf-8", "replace")
        )
        last = [
            m
            for m in self.fake.bot_messages(CHAT)
            if m["message_id"] > number and "reply_markup" in m and not m["text"].startswith("🔐")
        ][-1]
        return FullView(text=text, handle=last)


def _shown(card: Asked) -> JSON:
    assert isinstance(card.shown, dict)
    return card.shown


def _replies(call: ApiCall) -> object:
    return call.params.get("reply_parameters", {}).get("message_id")


@asynccontextmanager
async def telegram_cards(store: Store) -> AsyncIterator[TelegramCards]:
    """Telegram's fake, the adapter and the approval service, running; the requester has
    written in a forum topic (the conversation the cards go to)."""
    async with FakeTelegram(TOKEN) as tg:
        people = [str(APPROVER), str(REQUESTER)]
        table = {"allowed_users": ["*"], "approvers": people, "reactions_for_approval": True}

        def build() -> TelegramChannel:
            return channel_for(tg, store, approvers=people, reactions_for_approval=True)

        process = Process(store=store, table=table, build=build, serve=serving)
        async with started(process):
            await tg.push(said(REQUESTER, "@hatchbot go", entities=mention("@hatchbot go")))
            [process.envelope] = await process.host.wait_envelopes(1, wait_s=WAIT_S)
            yield TelegramCards(process=process, fake=tg)
    assert tg.rule_refusals == [], "the adapter sent what Telegram refuses"
