"""The card driver on Slack: slack-bolt over Socket Mode against the fake.

A person presses a button (a ``block_actions`` payload carrying the card as their client
shows it), adds a reaction (``reaction_added``), or submits the "Deny with a reply" modal
(``view_submission``). What they are told: an ephemeral message (``chat.postEphemeral`` to
them), a field error in the modal, or, for a press in the full view, the view replaced with
the answer (``views.update``). The full view is a modal (``views.open``).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace

from bot.cards import Button, ButtonCodec, CardVerb
from bot.envelope import Sender, SentMessage
from bot.store import Store
from channels.slack.adapter import SlackChannel
from tests.approval.conftest import make_envelope, until_waiting
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
from tests.fakes.slack_server import JSON, ApiCall, FakeSlack, block_actions, event_callback, person
from tests.fakes.slack_setup import (
    APP_TOKEN,
    APPROVER,
    BOT_TOKEN,
    REF,
    REQUESTER,
    STRANGER,
    channel_for,
)

CONVERSATION = "C0001"
#: The buttons' ``action_id`` on a card, by verb: what Slack reports a press with.
ACTIONS = {
    "hatchway_approve": CardVerb.APPROVE,
    "hatchway_deny": CardVerb.DENY,
    "hatchway_always": CardVerb.ALWAYS,
    "hatchway_show_full": CardVerb.SHOW_FULL,
    "hatchway_reply": CardVerb.REPLY,
    "hatchway_grant": CardVerb.GRANT,
}
REACTIONS = {CardVerb.APPROVE: "white_check_mark", CardVerb.DENY: "x"}
FULL_VIEW = "hatchway_full_view"  # the modals' callback ids
REPLY_FORM = "hatchway_reply"
ZWSP = "\u200b"


def _buttons(blocks: list[JSON]) -> list[JSON]:
    return [e for b in blocks if b.get("type") == "actions" for e in b.get("elements", [])]


def _unescape(sent: str) -> str:
    return sent.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").replace(ZWSP, "")


def _view_code(view: JSON) -> str:
    """The full view's code blocks as the reader sees them, in order."""
    texts = [b["text"]["text"] for b in view["blocks"] if b["type"] == "section"]
    return "\n".join(
        _unescape(piece) for text in texts for piece in re.findall(r"```\n(.*?)\n```", text, re.S)
    )


@dataclass(kw_only=True)
class SlackCards(OnProcess):
    fake: FakeSlack
    name: str = "slack"
    requester: str = REQUESTER
    approver: str = APPROVER
    approver_name: str = "Bea"  # the display name; the payload carries the handle "bea"
    stranger: str = STRANGER
    tells_reactions: bool = True  # ephemerally, like a press
    fits_any_uncut_card: bool = True  # a message holds 50 blocks of 3,000 characters
    codec: ButtonCodec = field(default_factory=ButtonCodec)
    #: The reply form each person opened last, by approval id and user.
    forms: dict[tuple[str, str], str] = field(default_factory=dict)
    cards: set[str] = field(default_factory=set)  # the ts of every card posted

    async def ask(self, arguments: Mapping[str, object]) -> Asked:
        known = {r.id for r in await self.store.approvals.list()}
        assert self.process.envelope is not None
        request = shell_request(self.process.envelope, arguments)
        task = asyncio.create_task(self.service.ask(request))
        self.process.asks.append(task)
        await self.fake.wait_for("chat.postMessage", count=len(known) + 1, wait_s=WAIT_S)
        [record] = [r for r in await self.store.approvals.list() if r.id not in known]
        await until_waiting(self.store, record.id)
        [ts] = [
            ts
            for (_, ts), message in self.fake.messages.items()
            if _buttons(message.get("blocks") or []) and ts not in self.cards
        ]
        self.cards.add(ts)
        shown = json.loads(json.dumps(self.fake.messages[(CONVERSATION, ts)]))
        return Asked(record=record, shown=shown, task=task)

    async def shown_as_sent(self, sent: SentMessage) -> JSON:
        self.cards.add(sent.message_id)
        return json.loads(json.dumps(self.fake.messages[(CONVERSATION, sent.message_id)]))

    def shown(self, card: Asked) -> Shown:
        now = self.fake.messages[(CONVERSATION, _shown(card)["ts"])]
        blocks = now.get("blocks") or []
        verbs = {v for b in _buttons(blocks) if (v := _verb_of(b)) is not None}
        choices = tuple(o["text"]["text"] for o in _options(blocks))
        return Shown(
            text=now["text"] + "\n" + json.dumps(blocks), buttons=frozenset(verbs), choices=choices
        )

    async def pick(self, card: Asked, label: str, user: str, *, forged_key: str = "") -> Answer:
        shown = _shown(card)
        [value] = [o["value"] for o in _options(shown["blocks"]) if o["text"]["text"] == label]
        if forged_key:
            value = self.codec.pack(Button.grant(card.approval_id, forged_key))
        mark = len(self.fake.calls)
        payload = self.fake.select(CONVERSATION, shown["ts"], "hatchway_grant", value, user=user)
        await self._reported(payload)
        return Answer(told=self._ephemerals(user, self.fake.calls[mark:]))

    async def press(self, card: Asked, verb: CardVerb, user: str) -> Answer:
        shown = _shown(card)
        views = len(self.fake.views)
        mark = len(self.fake.calls)
        payload = block_actions(
            self._action(verb),
            self._value(card, verb),
            user=user,
            channel=CONVERSATION,
            message_ts=shown["ts"],
            trigger_id=self.fake.issue_trigger(),
            message=shown,
            handle=self.fake.handle_of(user),
            **({"thread_ts": shown["thread_ts"]} if shown.get("thread_ts") else {}),
        )
        await self._reported(payload)
        opened = list(self.fake.views.items())[views:]
        told = self._ephemerals(user, self.fake.calls[mark:])
        forms = [view_id for view_id, v in opened if v.get("callback_id") == REPLY_FORM]
        if forms:
            self.forms[card.approval_id, user] = forms[-1]
        full = [
            FullView(text=_view_code(v), handle=view_id)
            for view_id, v in opened
            if v.get("callback_id") == FULL_VIEW
        ]
        return Answer(told=told, form=bool(forms), full_view=full[-1] if full else None)

    async def press_in_full_view(self, view: FullView, verb: CardVerb, user: str) -> Answer:
        view_id = view.handle
        assert isinstance(view_id, str)
        mark = len(self.fake.calls)
        [action] = [
            b["action_id"]
            for b in _buttons(self.fake.views[view_id]["blocks"])
            if b["action_id"].endswith(verb.value)
        ]
        count = len(self.host.answers)
        await self.fake.press_in_view(view_id, action, user=user)
        await self.host.answered(count + 1)
        calls = self.fake.calls[mark:]
        updated = [
            block["text"]["text"]
            for c in calls
            if c.method == "views.update" and c.params.get("view_id") == view_id
            for block in _json(c.params["view"])["blocks"]
            if block.get("type") == "section"
        ]
        return Answer(told=(*updated, *self._ephemerals(user, calls)))

    async def react(self, card: Asked, verb: CardVerb, user: str) -> Answer:
        mark = len(self.fake.calls)
        item = {"type": "message", "channel": CONVERSATION, "ts": _shown(card)["ts"]}
        event = {"type": "reaction_added", "user": user, "reaction": REACTIONS[verb], "item": item}
        count = len(self.host.answers)
        await self.fake.wait_ack(await self.fake.push("events_api", event_callback(event)))
        await self.host.answered(count + 1)
        return Answer(told=self._ephemerals(user, self.fake.calls[mark:]))

    async def submit_reply(self, card: Asked, user: str, text: str) -> Answer:
        view_id = self.forms[card.approval_id, user]
        mark = len(self.fake.calls)
        count = len(self.host.answers)
        answer = await self.fake.submit_view(view_id, user=user, text=text)
        if answer.get("response_action") == "errors":  # refused in the modal by the adapter
            return Answer(told=tuple(str(e) for e in answer["errors"].values()))
        await self.host.answered(count + 1)
        return Answer(told=self._ephemerals(user, self.fake.calls[mark:]))

    async def press_unreadable(self, card: Asked, user: str) -> Answer:
        shown = _shown(card)
        mark = len(self.fake.calls)
        payload = block_actions(
            "hatchway_approve",
            f"v9:{card.approval_id}:a",
            user=user,
            channel=CONVERSATION,
            message_ts=shown["ts"],
            message=shown,
        )
        await self.fake.wait_ack(await self.fake.push("interactive", payload))
        await self.fake.wait_for(
            "chat.postEphemeral", where=lambda p: p.get("user") == user, wait_s=WAIT_S
        )
        return Answer(told=self._ephemerals(user, self.fake.calls[mark:]))

    # -- reading Slack ---------------------------------------------------------------------

    async def _reported(self, payload: JSON) -> None:
        count = len(self.host.answers)
        await self.fake.wait_ack(await self.fake.push("interactive", payload))
        await self.host.answered(count + 1)

    @staticmethod
    def _action(verb: CardVerb) -> str:
        [action] = [a for a, v in ACTIONS.items() if v is verb]
        return action

    def _value(self, card: Asked, verb: CardVerb) -> str:
        """The value of ``verb``'s button on the card as shown; for a button it does not
        show, what a card drawn with one carried."""
        buttons = _buttons(_shown(card).get("blocks") or [])
        for button in buttons:
            if _verb_of(button) is verb:
                return str(button["value"])
        if self.codec.unpack(str(buttons[0]["value"])) is None:
            return card.approval_id  # cards whose value is the bare approval id
        return self.codec.pack(Button(approval_id=card.approval_id, verb=verb))

    @staticmethod
    def _ephemerals(user: str, calls: list[ApiCall]) -> tuple[str, ...]:
        return tuple(
            str(c.params["text"])
            for c in calls
            if c.method == "chat.postEphemeral" and c.params.get("user") == user
        )


def _options(blocks: list[JSON]) -> list[JSON]:
    """The options of the grant choices' select."""
    return [o for e in _buttons(blocks) if e.get("type") == "static_select" for o in e["options"]]


def _verb_of(button: JSON) -> CardVerb | None:
    return ACTIONS.get(str(button.get("action_id")))


def _shown(card: Asked) -> JSON:
    assert isinstance(card.shown, dict)
    return card.shown


def _json(value: object) -> JSON:
    return json.loads(value) if isinstance(value, str) else dict(value)  # type: ignore[arg-type]


@asynccontextmanager
async def slack_cards(store: Store) -> AsyncIterator[SlackCards]:
    """Slack's fake, the adapter over Socket Mode and the approval service, running; the
    requester writes in a thread of #C0001."""
    async with FakeSlack(BOT_TOKEN, APP_TOKEN) as slack:
        slack.users[REQUESTER] = person(REQUESTER, "Ann")
        slack.users[APPROVER] = person(APPROVER, "Bea")
        people = [APPROVER, REQUESTER]
        table = {"allowed_users": ["*"], "approvers": people, "reactions_for_approval": True}

        def build() -> SlackChannel:
            return channel_for(slack, store, approvers=people, reactions_for_approval=True)

        envelope = make_envelope(channel=REF, conversation=CONVERSATION, sender=REQUESTER)
        envelope = replace(envelope, sender=Sender(id=REQUESTER, display_name="Ann"))
        process = Process(store=store, table=table, build=build, serve=serving, envelope=envelope)
        async with started(process):
            yield SlackCards(process=process, fake=slack)
    assert slack.rule_refusals == [], "the adapter sent what Slack refuses"
