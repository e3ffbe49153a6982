"""Answers on approval cards on Slack: button presses (on a card or in its full view),
reactions and reply-instead submissions, read from Slack's payloads, reported to the core as
:class:`~bot.cards.CardAction` values and answered through a :class:`~bot.cards.CardSurface`.
Nothing here decides what an answer means (:mod:`bot.approval.card_flow` does).

**Reading.** Payloads are validated (pydantic); anything malformed reads as None and is
only logged. A button is read from its ``value`` by the core's codec
(:data:`~channels.slack.cards.CODEC`), checked against its ``action_id``; a ``value`` that
is a bare approval id is a card drawn before payloads had a format, read by its
``action_id`` (:func:`read_button`). A payload of another format version, or a button of
ours this version does not know, gets :data:`~bot.cards.UNREADABLE_BUTTON` privately. A
press in the full view counts as one from a view that showed everything only when it comes
from that modal and its approval id is the one the modal's metadata names. With
``reactions_for_approval``, :data:`REACTION_VERBS` map a reaction's name to a verb.

**Answering.** Refusals are told in an ephemeral message beside the card; an accepted answer
shows on the card, which the approval service edits. Every answer names the card it came
from (:attr:`~bot.cards.CardAction.card`), so the core edits it to the outcome of a request
that is no longer open. A card is drawn whole unless it cannot fit
(:func:`~channels.slack.cards.approvable_on_card`). "✏️ Reply instead" and "🔎 Show full and
decide" open their modal right after the ack, since the ``trigger_id`` expires 3 seconds
after the press (:mod:`channels.slack.inbound` runs them beside its worker); a presser the
core refuses gets the ephemeral refusal instead. A full view with a long diff opens offering
Deny only, posts the diff as ``change-ID.diff`` in the card's thread (``files_upload_v2``),
then replaces itself (unless it changed meanwhile) with the view that decides, or, when
Slack refused the file, one that still offers Deny only. A press in the full view is answered in the
view: it is replaced with the outcome (:data:`~bot.cards.OUTCOME_NOTES`) or the refusal; when
it cannot be (closed, or a second press changed it), a refusal is told privately.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.cards import (
    OUTCOME_NOTES,
    UNREADABLE_BUTTON,
    Actor,
    ApprovalCard,
    Button,
    CardAction,
    CardReply,
    CardReplyKind,
    CardVerb,
    Unreadable,
)
from bot.channel import ChannelHost
from bot.envelope import ChannelRef, DeliveryTarget, SentMessage
from bot.errors import ChannelAuthError, ChannelError
from channels.common.card_index import CardIndex
from channels.slack.api import DisplayNames, OpenedView, SlackWebApi
from channels.slack.cards import (
    ACTION_IDS,
    ACTION_PATTERN,
    CODEC,
    FULL_VIEW_CALLBACK_ID,
    INPUT_ACTION_ID,
    INPUT_BLOCK_ID,
    REPLY_CALLBACK_ID,
    CardPlace,
    DiffFile,
    approvable_on_card,
    full_view,
    full_view_plan,
    outcome_view,
    read_metadata,
    reply_modal,
)
from channels.slack.markup import code_span
from channels.slack.normalise import BotIdentity

log = structlog.get_logger(__name__)

MODAL_FAILED = "The reply form could not be opened. Press ✏️ Reply instead again."
FULL_VIEW_FAILED = "The full request could not be opened. Press 🔎 Show full and decide again."
REACTION_VERBS: dict[str, CardVerb] = {
    "white_check_mark": CardVerb.APPROVE,
    "heavy_check_mark": CardVerb.APPROVE,
    "x": CardVerb.DENY,
    "infinity": CardVerb.ALWAYS,
}
_BY_ACTION_ID = {action_id: key for key, action_id in ACTION_IDS.items()}
_OPENS_MODAL = (CardVerb.REPLY, CardVerb.SHOW_FULL)


# -- reading Slack's payloads --------------------------------------------------------------------


class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Id(_Payload):
    id: str = Field(min_length=1)


class _User(_Id):
    """The presser as an interaction payload names them: their id, and their handle (the
    payload's ``username``, or its older ``name``, which holds the same handle). The handle
    is not the name Slack shows for them (:class:`~channels.slack.api.DisplayNames`)."""

    username: str = ""
    name: str = ""

    @property
    def shown_name(self) -> str:
        return self.username or self.name


class _Container(_Payload):
    message_ts: str | None = None
    channel_id: str | None = None
    thread_ts: str | None = None


class _Option(_Payload):
    value: str = ""


class _Action(_Payload):
    """A pressed button (its ``value``) or a pick in a ``static_select``
    (``selected_option``'s value)."""

    action_id: str
    value: str = ""
    selected_option: _Option | None = None

    @property
    def payload(self) -> str:
        return self.selected_option.value if self.selected_option is not None else self.value


class _Message(_Payload):
    ts: str | None = None
    thread_ts: str | None = None


class _View(_Payload):
    id: str = ""
    hash: str = ""
    callback_id: str
    private_metadata: str


class _BlockActions(_Payload):
    user: _User
    channel: _Id | None = None
    trigger_id: str = ""
    container: _Container = Field(default_factory=_Container)
    message: _Message = Field(default_factory=_Message)
    view: _View | None = None
    actions: list[_Action] = Field(min_length=1)


class _Input(_Payload):
    value: str | None = None


class _State(_Payload):
    values: dict[str, dict[str, _Input]] = Field(default_factory=dict)


class _SubmittedView(_View):
    state: _State = Field(default_factory=_State)


class _Submission(_Payload):
    user: _User
    view: _SubmittedView


class _ReactionItem(_Payload):
    type: str
    channel: str = ""
    ts: str = ""


class _Reaction(_Payload):
    user: str = Field(min_length=1)
    reaction: str
    item: _ReactionItem


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewRef:
    """The full view a press came from: its id, ``hash`` (to replace it only if unchanged)
    and ``private_metadata`` (kept in the view that replaces it)."""

    id: str
    hash: str
    metadata: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Press:
    """A press of one of our buttons: what it says, who pressed it, where the card is, the
    ``trigger_id`` (valid for 3 seconds: a modal opens with it), and the full view it was
    in, if any."""

    button: Button | Unreadable
    place: CardPlace
    user_id: str
    trigger_id: str = ""
    view: ViewRef | None = None
    #: The presser's handle as the payload gives it (empty: none given).
    user_name: str = ""

    @property
    def opens_modal(self) -> bool:
        """True for "✏️ Reply instead" and "🔎 Show full and decide" on a card."""
        return isinstance(self.button, Button) and self.button.verb in _OPENS_MODAL


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplySubmission:
    """A submitted reply form: who answered, with what text (surrounding whitespace
    removed), for which approval and card."""

    approval_id: str
    place: CardPlace
    user_id: str
    text: str
    #: The person's handle as the payload gives it (empty: none given).
    user_name: str = ""


def read_button(action_id: str, value: str) -> Button | Unreadable | None:
    """What a pressed button of ours says; :class:`~bot.cards.Unreadable` for one this
    version cannot read (another format version, or an ``action_id`` it does not know);
    None when it is not ours or its ``value`` and ``action_id`` disagree."""
    if not ACTION_PATTERN.match(action_id):
        return None
    known = _BY_ACTION_ID.get(action_id)
    button = CODEC.unpack(value)
    if button is None and known is not None and value:
        # Drawn before payloads had a format: the value is the bare approval id.
        return Button(approval_id=value, verb=known[0], full_view=known[1])
    if isinstance(button, Button) and known is not None:
        return button if (button.verb, button.full_view) == known else None
    return Unreadable.PAYLOAD if known is None or button is Unreadable.PAYLOAD else None


def read_press(body: Mapping[str, object]) -> Press | None:
    """The press ``body`` describes, or None when it is malformed, not one of ours, or a
    press in the full view whose approval id is not the one the view was opened for."""
    try:
        payload = _BlockActions.model_validate(body)
    except ValidationError:
        return None
    action = payload.actions[0]
    button = read_button(action.action_id, action.payload)
    if button is None:
        return None
    view = payload.view
    in_full_view = view is not None and view.callback_id == FULL_VIEW_CALLBACK_ID
    if view is not None:
        shown = read_metadata(view.private_metadata) if in_full_view else None
        if shown is None or not view.id:
            return None
        approval_id, place = shown
        where = ViewRef(id=view.id, hash=view.hash, metadata=view.private_metadata)
    else:
        channel_id = payload.channel.id if payload.channel else payload.container.channel_id
        if not channel_id:
            return None
        place = CardPlace(
            channel_id=channel_id,
            message_ts=payload.container.message_ts or payload.message.ts,
            thread_ts=payload.container.thread_ts or payload.message.thread_ts,
        )
        approval_id, where = "", None
    press = Press(
        button=button,
        place=place,
        user_id=payload.user.id,
        user_name=payload.user.shown_name,
        trigger_id=payload.trigger_id,
        view=where,
    )
    if isinstance(button, Button) and (
        button.full_view != in_full_view
        or (in_full_view and button.approval_id != approval_id)
        or (press.opens_modal and not press.trigger_id)
    ):
        return None
    return press


def read_submission(body: Mapping[str, object]) -> ReplySubmission | None:
    """The submission of a reply form, or None when ``body`` is not a well-formed one."""
    try:
        payload = _Submission.model_validate(body)
    except ValidationError:
        return None
    shown = read_metadata(payload.view.private_metadata)
    if payload.view.callback_id != REPLY_CALLBACK_ID or shown is None:
        return None
    field = payload.view.state.values.get(INPUT_BLOCK_ID, {}).get(INPUT_ACTION_ID)
    return ReplySubmission(
        approval_id=shown[0],
        place=shown[1],
        user_id=payload.user.id,
        user_name=payload.user.shown_name,
        text=((field.value if field else None) or "").strip(),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CardReaction:
    """A reaction that may answer a card; the card index maps ``message_ts`` to an approval."""

    verb: CardVerb
    user_id: str
    channel_id: str
    message_ts: str


def read_reaction(event: Mapping[str, object]) -> CardReaction | None:
    """The reaction ``event`` describes, if its name is one of :data:`REACTION_VERBS`."""
    try:
        payload = _Reaction.model_validate(event)
    except ValidationError:
        return None
    verb = REACTION_VERBS.get(payload.reaction.split("::", 1)[0])
    item = payload.item
    if verb is None or item.type != "message" or not item.channel or not item.ts:
        return None
    return CardReaction(
        verb=verb, user_id=payload.user, channel_id=item.channel, message_ts=item.ts
    )


# -- reporting and answering ---------------------------------------------------------------------


class SlackCardAnswers:
    """Reports answers on approval cards to the host and answers them on Slack. An answer
    that may decide names its person as Slack shows them (their display name from
    ``users.info``, cached by ``names``), else by the handle the payload carries; a press
    that opens a modal asks nothing first, as its trigger lasts 3 seconds."""

    def __init__(
        self, *, ref: ChannelRef, api: SlackWebApi, cards: CardIndex, names: DisplayNames
    ) -> None:
        self._ref = ref
        self._api = api
        self._cards = cards
        self._names = names

    async def press(self, host: ChannelHost | None, press: Press) -> None:
        """Report a press (one that opens a modal, right after the ack) and answer it."""
        if host is None:
            log.info("slack_click_malformed", channel=str(self._ref))
            return
        button = press.button
        if press.view is not None:
            surface: _CardSurface = _FullViewSurface(self._ref, self._api, press, press.view)
        else:
            surface = _CardSurface(
                self._ref, self._api, press.place, press.user_id, press.trigger_id
            )
        if not isinstance(button, Button):
            log.info("slack_button_unreadable", channel=str(self._ref))
            await surface.tell(CardReply(kind=CardReplyKind.TELL, note=UNREADABLE_BUTTON))
            return
        await self._report(
            host,
            button.approval_id,
            button.verb,
            press.user_id,
            press.place,
            surface,
            full_view=button.full_view,
            user_name=press.user_name,
            grant_choice=button.grant_choice,
        )

    async def reply(self, host: ChannelHost, reply: ReplySubmission) -> None:
        surface = _CardSurface(self._ref, self._api, reply.place, reply.user_id)
        await self._report(
            host,
            reply.approval_id,
            CardVerb.REPLY,
            reply.user_id,
            reply.place,
            surface,
            reply=reply.text,
            user_name=reply.user_name,
        )

    async def reaction(self, host: ChannelHost, bot: BotIdentity, event: Mapping[str, Any]) -> None:
        reaction = read_reaction(event)
        if reaction is None or reaction.user_id == bot.user_id:
            return
        card = await self._cards.find(reaction.channel_id, reaction.message_ts)
        if card is None or not card.open:
            return
        place = CardPlace(
            channel_id=reaction.channel_id, message_ts=reaction.message_ts, thread_ts=card.thread_id
        )
        surface = _CardSurface(self._ref, self._api, place, reaction.user_id)
        await self._report(host, card.approval_id, reaction.verb, reaction.user_id, place, surface)

    async def _report(
        self,
        host: ChannelHost,
        approval_id: str,
        verb: CardVerb,
        user_id: str,
        place: CardPlace,
        surface: _CardSurface,
        *,
        reply: str | None = None,
        full_view: bool = False,
        user_name: str = "",
        grant_choice: str = "",
    ) -> None:
        if reply is not None or verb not in _OPENS_MODAL:
            user_name = await self._names.get(user_id) or user_name
        card = None
        if place.message_ts:
            target = DeliveryTarget(
                channel=self._ref, conversation_id=place.channel_id, thread_id=place.thread_ts
            )
            card = SentMessage(target=target, message_id=place.message_ts)
        action = CardAction(
            channel=self._ref,
            approval_id=approval_id,
            verb=verb,
            actor=Actor(user_id=user_id, name=user_name),
            full_view=full_view,
            reply=reply,
            card=card,
            grant_choice=grant_choice,
        )
        answered = await host.card_action(action, surface)
        log.info(
            "slack_approval_answer",
            channel=str(self._ref),
            verb=verb.value,
            answer=answered.kind.value,
            verdict=answered.verdict.value,
            full_view=full_view,
        )


class _CardSurface:
    """Answers an action on a card: an ephemeral note beside it, or a modal."""

    def __init__(
        self,
        ref: ChannelRef,
        api: SlackWebApi,
        place: CardPlace,
        user_id: str,
        trigger_id: str = "",
    ) -> None:
        self._ref = ref
        self._api = api
        self._place = place
        self._user_id = user_id
        self._trigger_id = trigger_id

    def shows_whole(self, card: ApprovalCard) -> bool:
        return approvable_on_card(card)

    async def tell(self, reply: CardReply) -> None:
        if reply.kind is not CardReplyKind.ACCEPTED:  # the card edit shows an accepted one
            await self._ephemeral(reply.text)

    async def open_reply_form(self, approval_id: str) -> None:
        await self._open(reply_modal(approval_id, self._place), MODAL_FAILED)

    async def show_full(self, card: ApprovalCard) -> None:
        plan = full_view_plan(card)
        if not plan.diff_file:
            await self._open(full_view(card, self._place), FULL_VIEW_FAILED)
            return
        # the modal first (the trigger lasts 3 seconds), offering Deny only; then the diff in
        # the card's thread, and the modal decides once it is there
        opened = await self._open(
            full_view(card, self._place, diff=DiffFile.POSTING), FULL_VIEW_FAILED
        )
        if opened is None or not opened.id:
            return
        posted = await self._post_diff(card, plan.diff_name, plan.diff_file)
        try:
            await self._api.update_view(
                view_id=opened.id,
                view=full_view(card, self._place, diff=posted),
                view_hash=opened.hash,
            )
        except ChannelAuthError:
            raise
        except ChannelError as exc:  # closed, or answered while the file went up
            log.info("slack_full_view_update_failed", channel=str(self._ref), error=str(exc))

    async def _post_diff(self, card: ApprovalCard, name: str, data: bytes) -> DiffFile:
        """Post a full view's long diff as the file ``name`` in the card's thread."""
        lines = data.count(b"\n")
        comment = (
            f"🔎 The change {code_span(card.tool)} would make ({lines:,} diff lines), for the "
            "full view of its approval card."
        )
        try:
            await self._api.share_file(
                channel=self._place.channel_id,
                thread_ts=self._place.thread_ts or self._place.message_ts,
                name=name,
                data=data,
                comment=comment,
            )
        except ChannelAuthError:
            raise
        except ChannelError as exc:
            log.warning("slack_diff_file_failed", channel=str(self._ref), error=str(exc))
            return DiffFile.FAILED
        log.info("slack_diff_file_posted", channel=str(self._ref), bytes=len(data))
        return DiffFile.POSTED

    async def _open(self, view: dict[str, object], failed: str) -> OpenedView | None:
        try:
            return await self._api.open_view(trigger_id=self._trigger_id, view=view)
        except ChannelError as exc:
            log.warning("slack_modal_failed", channel=str(self._ref), error=str(exc))
            await self._ephemeral(failed)
            return None

    async def _ephemeral(self, text: str) -> None:
        """An ephemeral note to the actor beside the card; a failure is only logged."""
        try:
            await self._api.post_ephemeral(
                channel=self._place.channel_id,
                user=self._user_id,
                text=text,
                thread_ts=self._place.thread_ts,
            )
        except ChannelAuthError:
            raise
        except ChannelError as exc:
            log.warning("slack_ephemeral_failed", channel=str(self._ref), error=str(exc))


class _FullViewSurface(_CardSurface):
    """Answers a press in the full view: the view is replaced with the outcome."""

    def __init__(self, ref: ChannelRef, api: SlackWebApi, press: Press, view: ViewRef) -> None:
        super().__init__(ref, api, press.place, press.user_id)
        self._view = view
        verb = press.button.verb if isinstance(press.button, Button) else None
        self._accepted = OUTCOME_NOTES.get(verb) if verb else None

    async def tell(self, reply: CardReply) -> None:
        accepted = reply.kind is CardReplyKind.ACCEPTED
        text = self._accepted if accepted and self._accepted else reply.text
        try:
            await self._api.update_view(
                view_id=self._view.id,
                view=outcome_view(text, self._view.metadata),
                view_hash=self._view.hash,
            )
        except ChannelAuthError:
            raise
        except ChannelError as exc:
            log.info("slack_full_view_update_failed", channel=str(self._ref), error=str(exc))
            if not accepted:
                await self._ephemeral(reply.text)
