"""Answers on approval cards on Discord: button presses, "Deny with a reply" submissions and
reactions, reported to the core as :class:`~bot.cards.CardAction` values and answered through
a :class:`~bot.cards.CardSurface`. Nothing here decides what an answer means
(:mod:`bot.approval.card_flow` does); the words come from the :class:`~bot.cards.CardReply`.

- **Presses and submissions** reach the client's ``on_interaction`` and are read from the
  ``custom_id`` alone (:func:`read_custom_id`): the core's payload, or the form an earlier
  release drew (``hatchway:ap:<id>:<code>[:<card>]``), still read while such a card can be
  pending. A payload of ours that cannot be read here (another format version, damaged) gets
  :data:`~bot.cards.UNREADABLE_BUTTON` ephemerally and decides nothing; anything else is not
  ours and is left alone.
- A refusal is told ephemerally; an accepted press is only acknowledged (the card edit
  follows), and one from the full view takes the view's buttons away. "Approve from the full
  view" is told with a "Show full and decide" button (a card shown from before it was cut may
  not have one). A card is drawn whole unless it does not fit a message
  (:func:`~channels.discord.cards.render_card`): Approve and Always from a card that could not
  show everything do not count.
- "🔎 Show full and decide" is answered with the full view's ephemeral follow-ups (deferred
  first, as Discord wants an answer within 3 s), read from the approval row as it is now.
  "✏️ Reply instead" opens the modal; a submitted text is reported as a reply. An empty or
  whitespace-only one is refused with :data:`~channels.discord.cards.EMPTY_REPLY` and nothing
  is reported (Discord requires the field but lets whitespace through).
- **Reactions** (``reactions_for_approval``; :data:`REACTION_VERBS`) count only on cards still
  open in the :class:`~channels.common.card_index.CardIndex`. Discord has no private answer
  to a reaction: the card edit shows an accepted one, anything else is only logged.

Every answer names the card it came from (the interaction's message, the reacted-to message,
or the card a full view's button names), so the core edits it to the outcome of a request
that is no longer open.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import discord
import structlog
from discord.utils import MISSING
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.cards import (
    UNREADABLE_BUTTON,
    Actor,
    ApprovalCard,
    Button,
    ButtonCodec,
    CardAction,
    CardReply,
    CardReplyKind,
    CardSurface,
    CardVerb,
    ClickVerdict,
    Unreadable,
)
from bot.envelope import ChannelRef, DeliveryTarget, SentMessage
from channels.common.card_index import CardIndex
from channels.discord.cards import (
    EMPTY_REPLY,
    FIELD_ID,
    full_view_buttons,
    full_view_parts,
    render_card,
    reply_modal,
    show_full_view,
)
from channels.discord.client import NO_MENTIONS, Connection
from channels.discord.roles import role_keys

log = structlog.get_logger(__name__)

REACTION_VERBS: dict[str, CardVerb] = {
    "✅": CardVerb.APPROVE,
    "❌": CardVerb.DENY,
    "♾️": CardVerb.ALWAYS,
    "♾": CardVerb.ALWAYS,
}

# -- reading a custom_id ---------------------------------------------------------------------

#: The ``custom_id`` form of releases before the shared codec. Kept while a card drawn with it
#: can be pending (docs/approvals.md, "Rolling upgrades").
LEGACY_PREFIX = "hatchway:ap:"
_LEGACY = re.compile(
    r"(?P<id>[A-Za-z0-9_.\-]+):(?:(?P<code>[adwe])|(?P<full>f[adw]?)(?::(?P<card>[0-9]{1,20}))?)"
)
_LEGACY_VERBS = {
    "a": CardVerb.APPROVE,
    "d": CardVerb.DENY,
    "w": CardVerb.ALWAYS,
    "e": CardVerb.REPLY,
    "f": CardVerb.SHOW_FULL,
}


def read_custom_id(codec: ButtonCodec, custom_id: str | None) -> Button | Unreadable | None:
    """The button a ``custom_id`` stands for; :class:`~bot.cards.Unreadable` for one of ours
    this process cannot read; None for one that is not an approval button."""
    button = codec.unpack(custom_id)
    if button is not None or custom_id is None or not custom_id.startswith(LEGACY_PREFIX):
        return button
    match = _LEGACY.fullmatch(custom_id[len(LEGACY_PREFIX) :])
    if match is None:
        return Unreadable.PAYLOAD
    approval_id, code, full = match["id"], match["code"], match["full"]
    if code is not None:
        return Button(approval_id=approval_id, verb=_LEGACY_VERBS[code])
    card = match["card"] or ""
    if full == "f":
        return Button(approval_id=approval_id, verb=CardVerb.SHOW_FULL, card=card)
    verb = _LEGACY_VERBS[full[1]]
    return Button(approval_id=approval_id, verb=verb, full_view=True, card=card)


def picked_button(codec: ButtonCodec, select: Button, values: object) -> Button:
    """The grant choice picked in the select menu ``select`` (component type 3): its one
    value is the whole payload of the choice. A value that is missing, not ours, or names
    another approval or view gives a pick without a choice, which the core refuses as not
    offered."""
    value = values[0] if isinstance(values, list) and len(values) == 1 else None
    picked = codec.unpack(value) if isinstance(value, str) else None
    if (
        isinstance(picked, Button)
        and picked.verb is CardVerb.GRANT
        and (picked.approval_id, picked.full_view, picked.card)
        == (select.approval_id, select.full_view, select.card)
    ):
        return picked
    return select


# -- reading a modal submission --------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplySubmission:
    """What a submitted modal said: its ``custom_id`` and the text field's value (as typed;
    ``text`` is empty when the field was missing)."""

    custom_id: str
    text: str


class _Field(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: int
    custom_id: str | None = None
    value: str | None = None
    component: _Field | None = None  # a Label's child
    components: list[_Field] = Field(default_factory=list)  # an action row's children

    def values(self) -> dict[str, str]:
        found: dict[str, str] = {}
        if self.custom_id is not None and isinstance(self.value, str):
            found[self.custom_id] = self.value
        for child in [*self.components, *([self.component] if self.component else [])]:
            found.update(child.values())
        return found


class _Submit(BaseModel):
    model_config = ConfigDict(extra="ignore")
    custom_id: str = Field(min_length=1, max_length=100)
    components: list[_Field] = Field(default_factory=list)


def submitted_reply(data: Mapping[str, Any] | None) -> ReplySubmission | None:
    """The submission in a MODAL_SUBMIT interaction's ``data`` (untrusted: validated), or
    None if malformed. The text field is found inside a Label (type 18, what the modal
    sends) or an action row (type 1, the older layout)."""
    if data is None:
        return None
    try:
        submit = _Submit.model_validate(dict(data))
    except ValidationError:
        return None
    values: dict[str, str] = {}
    for component in submit.components:
        values.update(component.values())
    return ReplySubmission(custom_id=submit.custom_id, text=values.get(FIELD_ID, ""))


# -- reporting answers -----------------------------------------------------------------------


class DiscordCardAnswers:
    """Reports answers on approval cards to the host and answers them on Discord."""

    def __init__(
        self,
        ref: ChannelRef,
        connection: Connection,
        cards: CardIndex,
        codec: ButtonCodec,
        *,
        reactions_for_approval: bool,
    ) -> None:
        self.ref = ref
        self._connection = connection
        self._cards = cards
        self._codec = codec
        self._reactions = reactions_for_approval
        self._log = log.bind(channel=str(ref))

    def _card(self, channel_id: int | None, message_id: str) -> SentMessage | None:
        """The card message an answer came from, as the approval service edits it."""
        if channel_id is None or not message_id.isdigit():
            return None
        target = DeliveryTarget(channel=self.ref, conversation_id=str(channel_id))
        return SentMessage(target=target, message_id=message_id)

    async def interaction(self, interaction: discord.Interaction) -> None:
        """A button press or a modal submission; one not on an approval card is left alone."""
        if interaction.type is discord.InteractionType.modal_submit:
            await self._submitted(interaction)
            return
        data: Mapping[str, Any] = interaction.data or {}
        custom_id = data.get("custom_id")
        button = read_custom_id(self._codec, custom_id if isinstance(custom_id, str) else None)
        if button is None:
            return
        if isinstance(button, Unreadable):
            await self._unreadable(interaction)
            return
        if button.verb is CardVerb.GRANT:
            button = picked_button(self._codec, button, data.get("values"))
        message = interaction.message
        shown_on = str(message.id) if message is not None else ""
        if button.verb in (CardVerb.SHOW_FULL, CardVerb.REPLY):
            # Asks for something; decides nothing. The full view's buttons name the card.
            card = self._card(interaction.channel_id, button.card or shown_on)
            surface = _Interaction(interaction, self._codec, button.approval_id, card)
            await self._report(interaction.user, button, surface)
            return
        card = self._card(interaction.channel_id, button.card if button.full_view else shown_on)
        surface = _Interaction(
            interaction, self._codec, button.approval_id, card, full_view=button.full_view
        )
        await self._report(interaction.user, button, surface, card=card)

    async def _submitted(self, interaction: discord.Interaction) -> None:
        submission = submitted_reply(interaction.data)
        if submission is None:
            return  # not a modal of ours
        button = read_custom_id(self._codec, submission.custom_id)
        if isinstance(button, Unreadable):
            await self._unreadable(interaction)
            return
        if button is None or button.verb is not CardVerb.REPLY:
            return
        user = interaction.user
        if not submission.text.strip():
            self._log.info(
                "discord_empty_reply_refused", approval_id=button.approval_id, user_id=user.id
            )
            await interaction.response.send_message(EMPTY_REPLY, ephemeral=True)
            return
        message = interaction.message
        card = self._card(interaction.channel_id, str(message.id) if message is not None else "")
        surface = _Interaction(
            interaction, self._codec, button.approval_id, card, told_when_accepted=True
        )
        await self._report(user, button, surface, card=card, reply=submission.text)

    async def _unreadable(self, interaction: discord.Interaction) -> None:
        self._log.info("discord_unreadable_button", user_id=interaction.user.id)
        await interaction.response.send_message(UNREADABLE_BUTTON, ephemeral=True)

    async def reaction(self, payload: discord.RawReactionActionEvent) -> None:
        client = self._connection.connected()
        if not self._reactions or client is None or client.user is None:
            return
        if payload.user_id == client.user.id:
            return
        verb = REACTION_VERBS.get(str(payload.emoji))
        entry = await self._cards.find(payload.channel_id, payload.message_id) if verb else None
        if verb is None or entry is None or not entry.open:
            return
        card = self._card(payload.channel_id, str(payload.message_id))
        member = payload.member  # sent with reactions in a server, not in a DM
        actor = Actor(
            user_id=str(payload.user_id),
            roles=role_keys(member),
            name=member.display_name if member is not None else "",
        )
        button = Button(approval_id=entry.approval_id, verb=verb)
        await self._report_as(actor, button, _Reaction(), card=card)

    async def _report(
        self,
        user: discord.User | discord.Member,
        button: Button,
        surface: CardSurface,
        *,
        card: SentMessage | None = None,
        reply: str | None = None,
    ) -> None:
        member = user if isinstance(user, discord.Member) else None
        actor = Actor(user_id=str(user.id), roles=role_keys(member), name=user.display_name)
        await self._report_as(actor, button, surface, card=card, reply=reply)

    async def _report_as(
        self,
        actor: Actor,
        button: Button,
        surface: CardSurface,
        *,
        card: SentMessage | None = None,
        reply: str | None = None,
    ) -> None:
        host = self._connection.host
        if host is None:  # answers arrive only while the channel runs
            return
        action = CardAction(
            channel=self.ref,
            approval_id=button.approval_id,
            verb=button.verb,
            actor=actor,
            full_view=button.full_view,
            reply=reply,
            card=card,
            grant_choice=button.grant_choice,
        )
        answered = await host.card_action(action, surface)
        self._log.info(
            "discord_approval_click",
            approval_id=button.approval_id,
            verb=button.verb.value,
            user_id=actor.user_id,
            full_view=button.full_view,
            answer=answered.kind.value,
            verdict=answered.verdict.value,
        )


# -- answering -------------------------------------------------------------------------------


def _shows_whole(card: ApprovalCard) -> bool:
    return not render_card(card).cut


class _Interaction:
    """Answers one interaction (a button press or a modal submission)."""

    def __init__(
        self,
        interaction: discord.Interaction,
        codec: ButtonCodec,
        approval_id: str,
        card: SentMessage | None,
        *,
        full_view: bool = False,
        told_when_accepted: bool = False,
    ) -> None:
        self._interaction = interaction
        self._codec = codec
        self._approval_id = approval_id
        self._card = card.message_id if card is not None else ""
        self._full_view = full_view
        self._told_when_accepted = told_when_accepted

    def shows_whole(self, card: ApprovalCard) -> bool:
        return _shows_whole(card)

    async def tell(self, reply: CardReply) -> None:
        response = self._interaction.response
        if reply.kind is CardReplyKind.ACCEPTED and not self._told_when_accepted:
            if self._full_view:
                await response.edit_message(view=None)  # the card edit follows
            else:
                await response.defer()
        elif reply.verdict is ClickVerdict.NEEDS_FULL_VIEW:
            # With the way there: a stale card may not show the button.
            view = show_full_view(self._approval_id, self._card, self._codec)
            await response.send_message(reply.text, ephemeral=True, view=view)
        else:
            await response.send_message(reply.text, ephemeral=True)

    async def open_reply_form(self, approval_id: str) -> None:
        await self._interaction.response.send_modal(reply_modal(approval_id, self._codec))

    async def show_full(self, card: ApprovalCard) -> None:
        interaction = self._interaction
        # Several messages may follow: acknowledge within Discord's 3 s first.
        await interaction.response.defer(ephemeral=True, thinking=True)
        parts = full_view_parts(card)
        buttons = full_view_buttons(
            card.approval_id, self._card, self._codec, card.grant_choices, always=card.always
        )
        try:
            for number, part in enumerate(parts, start=1):
                last = number == len(parts)
                await interaction.followup.send(
                    part.content,
                    ephemeral=True,
                    suppress_embeds=True,
                    allowed_mentions=NO_MENTIONS,
                    file=part.file() or MISSING,
                    view=buttons if last else MISSING,
                )
        except discord.HTTPException as exc:
            # The presser sees a view without buttons (or none) and may press again.
            log.warning("discord_full_view_failed", approval_id=card.approval_id, status=exc.status)


class _Reaction:
    """A reaction has no private answer on Discord: the card edit shows an accepted one."""

    def shows_whole(self, card: ApprovalCard) -> bool:
        return _shows_whole(card)

    async def tell(self, reply: CardReply) -> None:
        return None

    async def show_full(self, card: ApprovalCard) -> None:
        return None

    async def open_reply_form(self, approval_id: str) -> None:
        return None
