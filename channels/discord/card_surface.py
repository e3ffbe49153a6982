"""Answers on approval cards on Discord: buttons, reactions, reply-instead submissions and
"Show full and decide", reported to the core as :class:`~bot.cards.CardAction` values and
answered through a :class:`~bot.cards.CardSurface`. Nothing here decides what an answer
means (:mod:`bot.approval.card_flow` does).

A refusal is told ephemerally; an accepted button press is only acknowledged (the card edit
follows), and one from the full view takes the view's buttons away. ``NEEDS_FULL_VIEW`` is
told with a "Show full and decide" button, as a card shown from before it was cut may not
have one. A reaction has no private reply on Discord, so its answer is only logged. A card
is drawn whole unless it does not fit a message (:func:`~channels.discord.cards.render_card`):
Approve and Always from a card that could not show everything do not count.

"🔎 Show full and decide" is answered with the full view's ephemeral follow-ups
(:mod:`channels.discord.full_view`; deferred first, as Discord wants an answer within 3 s),
read from the approval row as it is now, so a card from before a restart opens it too. Its
buttons report ``full_view`` and the card they belong to. "✏️ Reply instead" opens the
"Deny with a reply" modal; its text is reported as a reply and decided then. An empty or
whitespace-only reply is refused with an ephemeral note and nothing is reported (Discord
requires the field but lets whitespace through).

Every answer names the card it came from (the interaction's message, or the reacted-to
message), so the core edits it to the outcome of a request that is no longer open.
"""

from __future__ import annotations

import discord
import structlog
from discord.utils import MISSING

from bot.cards import (
    Actor,
    ApprovalCard,
    CardAction,
    CardReply,
    CardReplyKind,
    CardSurface,
    CardVerb,
    ClickVerdict,
)
from bot.envelope import ChannelRef, DeliveryTarget, SentMessage
from channels.common.card_index import CardIndex
from channels.discord.buttons import (
    REACTION_CHOICES,
    parse_reply_id,
    reply_custom_id,
    show_full_view,
)
from channels.discord.cards import render_card
from channels.discord.client import NO_MENTIONS, ButtonPress, Connection
from channels.discord.full_view import full_view_buttons, full_view_parts
from channels.discord.reply_instead import reply_modal, submitted_reply
from channels.discord.roles import role_keys

log = structlog.get_logger(__name__)

EMPTY_REPLY = (
    "Your reply was empty, so nothing was recorded. "
    "Write what the assistant should be told instead, or press Deny."
)


class DiscordCardAnswers:
    """Reports answers on approval cards to the host and answers them on Discord."""

    def __init__(
        self,
        ref: ChannelRef,
        connection: Connection,
        cards: CardIndex,
        *,
        reactions_for_approval: bool,
    ) -> None:
        self.ref = ref
        self._connection = connection
        self._cards = cards
        self._reactions = reactions_for_approval
        self._log = log.bind(channel=str(ref))

    def _card(self, channel_id: int | None, message_id: int | None) -> SentMessage | None:
        """The card message an answer came from, as the approval service edits it."""
        if channel_id is None or message_id is None:
            return None
        target = DeliveryTarget(channel=self.ref, conversation_id=str(channel_id))
        return SentMessage(target=target, message_id=str(message_id))

    def _card_of(self, interaction: discord.Interaction) -> SentMessage | None:
        message = interaction.message
        return self._card(interaction.channel_id, message.id if message is not None else None)

    async def button(self, interaction: discord.Interaction, press: ButtonPress) -> None:
        """Report a press of Approve / Deny / Always (on a card or a full view)."""
        if press.full_view:
            card = self._card(interaction.channel_id, press.card_message_id)
        else:
            card = self._card_of(interaction)
        surface = _Interaction(interaction, press.approval_id, card, full_view=press.full_view)
        await self._report(
            interaction.user,
            press.approval_id,
            CardVerb(press.choice),
            surface,
            card=card,
            full_view=press.full_view,
        )

    async def full_view_requested(
        self, interaction: discord.Interaction, approval_id: str, card_message_id: int | None
    ) -> None:
        """Answer "Show full and decide" with the full view, or the refusal. Decides nothing."""
        message = interaction.message
        where = card_message_id or (message.id if message is not None else None)
        card = self._card(interaction.channel_id, where)
        surface = _Interaction(interaction, approval_id, card, log=self._log)
        await self._report(interaction.user, approval_id, CardVerb.SHOW_FULL, surface)

    async def reply_requested(self, interaction: discord.Interaction, approval_id: str) -> None:
        """Open the reply modal, or tell a presser the core refuses why not."""
        surface = _Interaction(interaction, approval_id, None)
        await self._report(interaction.user, approval_id, CardVerb.REPLY, surface)

    async def reply_submitted(self, interaction: discord.Interaction) -> None:
        submission = submitted_reply(interaction.data)
        approval_id = parse_reply_id(submission.custom_id) if submission is not None else None
        if submission is None or approval_id is None:
            return  # not a modal of ours
        user = interaction.user
        if not submission.text.strip():
            self._log.info("discord_empty_reply_refused", approval_id=approval_id, user_id=user.id)
            await interaction.response.send_message(EMPTY_REPLY, ephemeral=True)
            return
        card = self._card_of(interaction)
        surface = _Interaction(interaction, approval_id, card, told_when_accepted=True)
        await self._report(
            user, approval_id, CardVerb.REPLY, surface, card=card, reply=submission.text
        )

    async def reaction(self, payload: discord.RawReactionActionEvent) -> None:
        client = self._connection.connected()
        if not self._reactions or client is None or client.user is None:
            return
        if self._connection.host is None:
            return
        if payload.user_id == client.user.id:
            return
        choice = REACTION_CHOICES.get(str(payload.emoji))
        entry = await self._cards.find(payload.channel_id, payload.message_id) if choice else None
        if choice is None or entry is None or not entry.open:
            return
        card = self._card(payload.channel_id, payload.message_id)
        member = payload.member
        actor = Actor(user_id=str(payload.user_id), roles=role_keys(member))
        await self._report_as(actor, entry.approval_id, CardVerb(choice), _Reaction(), card=card)

    async def _report(
        self,
        user: discord.User | discord.Member,
        approval_id: str,
        verb: CardVerb,
        surface: CardSurface,
        *,
        card: SentMessage | None = None,
        reply: str | None = None,
        full_view: bool = False,
    ) -> None:
        member = user if isinstance(user, discord.Member) else None
        actor = Actor(user_id=str(user.id), roles=role_keys(member))
        await self._report_as(
            actor, approval_id, verb, surface, card=card, reply=reply, full_view=full_view
        )

    async def _report_as(
        self,
        actor: Actor,
        approval_id: str,
        verb: CardVerb,
        surface: CardSurface,
        *,
        card: SentMessage | None = None,
        reply: str | None = None,
        full_view: bool = False,
    ) -> None:
        host = self._connection.host
        if host is None:  # not running: nothing is decided
            opens = verb is CardVerb.SHOW_FULL or (verb is CardVerb.REPLY and reply is None)
            await surface.tell(
                CardReply.of(ClickVerdict.UNKNOWN) if opens else CardReply.of(ClickVerdict.ACCEPTED)
            )
            return
        action = CardAction(
            channel=self.ref,
            approval_id=approval_id,
            verb=verb,
            actor=actor,
            full_view=full_view,
            reply=reply,
            card=card,
        )
        answered = await host.card_action(action, surface)
        self._log.info(
            "discord_approval_click",
            approval_id=approval_id,
            verb=verb.value,
            user_id=actor.user_id,
            full_view=full_view,
            answer=answered.kind.value,
            verdict=answered.verdict.value,
        )


def _shows_whole(card: ApprovalCard) -> bool:
    return not render_card(card).cut


class _Interaction:
    """Answers one interaction (a button press or a modal submission)."""

    def __init__(
        self,
        interaction: discord.Interaction,
        approval_id: str,
        card: SentMessage | None,
        *,
        full_view: bool = False,
        told_when_accepted: bool = False,
        log: structlog.typing.FilteringBoundLogger | None = None,
    ) -> None:
        self._interaction = interaction
        self._approval_id = approval_id
        self._card = card
        self._full_view = full_view
        self._told_when_accepted = told_when_accepted
        self._log = log

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
            where = int(self._card.message_id) if self._card is not None else None
            await response.send_message(
                reply.text, ephemeral=True, view=show_full_view(self._approval_id, where)
            )
        else:
            await response.send_message(reply.text, ephemeral=True)

    async def open_reply_form(self, approval_id: str) -> None:
        await self._interaction.response.send_modal(reply_modal(reply_custom_id(approval_id)))

    async def show_full(self, card: ApprovalCard) -> None:
        interaction = self._interaction
        # Several messages may follow: acknowledge within Discord's 3 s first.
        await interaction.response.defer(ephemeral=True, thinking=True)
        where = int(self._card.message_id) if self._card is not None else None
        parts = full_view_parts(card)
        try:
            for number, part in enumerate(parts, start=1):
                last = number == len(parts)
                await interaction.followup.send(
                    part.content,
                    ephemeral=True,
                    suppress_embeds=True,
                    allowed_mentions=NO_MENTIONS,
                    file=part.file() or MISSING,
                    view=full_view_buttons(card.approval_id, where) if last else MISSING,
                )
        except discord.HTTPException as exc:
            # The presser sees a view without buttons (or none) and may press again.
            if self._log is not None:
                self._log.warning(
                    "discord_full_view_failed", approval_id=card.approval_id, status=exc.status
                )


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
