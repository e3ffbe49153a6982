"""Answers to approval cards on Discord: buttons, reactions, deny-with-a-reply submissions,
and "Show full and decide".

Each answer is reported to the host as an :class:`~bot.channel.ApprovalClick`; the adapter
authorises nothing itself. The host's :class:`~bot.channel.ClickVerdict` is what the clicker
is told: ephemerally for a button or a modal, while an accepted button click is only
acknowledged (the card edit follows). A reaction has no private reply on Discord, so its
verdict is only logged. ``NEEDS_FULL_VIEW`` is told with a "Show full and decide" button, as
a card shown from before it was cut may not have one.

Full view: "🔎 Show full and decide" is asked first, like "Reply instead": a presser the host
would refuse is told so at once. Anyone else's press is deferred (Discord wants an answer
within 3 s) and answered with the full view's ephemeral follow-ups
(:mod:`channels.discord.full_view`), read from the approval row as it is now
(:meth:`~bot.channel.ChannelHost.approval_card`), so a card from before a restart opens it
too. Its buttons report ``full_view=True`` and the card they belong to. An approval of a card
only this adapter cut (too long for a message; the core did not cut it and would take it) is
refused here with ``NEEDS_FULL_VIEW``.

Deny with a reply: "✏️ Reply instead" opens the "Deny with a reply" modal for a presser the
host would let decide (:meth:`~bot.channel.ChannelHost.approval_refusal`); anyone else gets
the ephemeral verdict a refused click gets. The modal's text is reported as a DENY with
``replacement_text`` and decided then, since the request may have changed meanwhile. An
empty or whitespace-only reply is refused with an ephemeral note and nothing is reported
(Discord requires the field but lets whitespace through); the approver can submit again or
press Deny.

Every answer is reported with the card it came from (:attr:`~bot.channel.ApprovalClick.card`:
the interaction's message, or the reacted-to message); when the request is no longer open the
approval service edits that card to its outcome. The adapter never closes a card itself.
"""

from __future__ import annotations

import discord
import structlog
from discord.utils import MISSING

from bot.channel import (
    ApprovalChoice,
    ApprovalClick,
    CardState,
    ChannelHost,
    ClickVerdict,
    SentMessage,
)
from bot.envelope import ChannelRef, DeliveryTarget
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


class ApprovalClicks:
    """Reports answers on approval cards to the host and tells the clicker the verdict."""

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
        """Report a press of Approve / Deny / Always and tell the presser the verdict. A full
        view's press names the card; accepted there, its buttons go (the card edit follows)."""
        user = interaction.user
        member = user if isinstance(user, discord.Member) else None
        if press.full_view:
            card = self._card(interaction.channel_id, press.card_message_id)
        else:
            card = self._card_of(interaction)
        verdict = await self._decide(
            press.approval_id,
            press.choice,
            str(user.id),
            member,
            "full_view" if press.full_view else "button",
            card,
            full_view=press.full_view,
        )
        if verdict is ClickVerdict.ACCEPTED and press.full_view:
            await interaction.response.edit_message(view=None)
        elif verdict is None or verdict is ClickVerdict.ACCEPTED:
            await interaction.response.defer()
        elif verdict is ClickVerdict.NEEDS_FULL_VIEW:
            # With the way there: a stale card may not show the button.
            where = int(card.message_id) if card is not None else None
            await interaction.response.send_message(
                verdict.message, ephemeral=True, view=show_full_view(press.approval_id, where)
            )
        else:
            await interaction.response.send_message(verdict.message, ephemeral=True)

    async def _refusal(
        self, interaction: discord.Interaction, approval_id: str
    ) -> ClickVerdict | None:
        """What the host would refuse the presser's answer with now (None: they may decide)."""
        host = self._connection.host
        if host is None:
            return ClickVerdict.UNKNOWN
        user = interaction.user
        member = user if isinstance(user, discord.Member) else None
        return await host.approval_refusal(
            channel=self.ref,
            approval_id=approval_id,
            user_id=str(user.id),
            user_roles=role_keys(member),
        )

    async def full_view_requested(
        self, interaction: discord.Interaction, approval_id: str, card_message_id: int | None
    ) -> None:
        """Answer "Show full and decide" with the full view (ephemeral), or tell a presser
        the host refuses why not, at once, as a refused click is told. Decides nothing."""
        refused = await self._refusal(interaction, approval_id)
        if refused is not None:
            self._log.info(
                "discord_full_view_refused",
                approval_id=approval_id,
                user_id=interaction.user.id,
                verdict=refused.value,
            )
            await interaction.response.send_message(refused.message, ephemeral=True)
            return
        # Several messages may follow: acknowledge within Discord's 3 s first.
        await interaction.response.defer(ephemeral=True, thinking=True)
        host = self._connection.host
        card = None
        if host is not None:
            card = await host.approval_card(channel=self.ref, approval_id=approval_id)
        followup = interaction.followup
        if card is None or card.state is not CardState.PENDING:
            closed = ClickVerdict.UNKNOWN if card is None else ClickVerdict.ALREADY_DECIDED
            await followup.send(closed.message, ephemeral=True)
            return
        message = interaction.message
        where = card_message_id or (message.id if message is not None else None)
        parts = full_view_parts(card)
        try:
            for number, part in enumerate(parts, start=1):
                last = number == len(parts)
                await followup.send(
                    part.content,
                    ephemeral=True,
                    suppress_embeds=True,
                    allowed_mentions=NO_MENTIONS,
                    file=part.file() or MISSING,
                    view=full_view_buttons(approval_id, where) if last else MISSING,
                )
        except discord.HTTPException as exc:
            # The presser sees a view without buttons (or none) and may press again.
            self._log.warning(
                "discord_full_view_failed", approval_id=approval_id, status=exc.status
            )
            return
        self._log.info(
            "discord_full_view_shown",
            approval_id=approval_id,
            user_id=interaction.user.id,
            parts=len(parts),
            attached=parts[-1].file_name is not None,
        )

    async def reply_requested(self, interaction: discord.Interaction, approval_id: str) -> None:
        """Open the reply modal, or tell a presser the host refuses why not."""
        refused = await self._refusal(interaction, approval_id)
        if refused is None:
            await interaction.response.send_modal(reply_modal(reply_custom_id(approval_id)))
            return
        self._log.info(
            "discord_reply_refused",
            approval_id=approval_id,
            user_id=interaction.user.id,
            verdict=refused.value,
        )
        await interaction.response.send_message(refused.message, ephemeral=True)

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
        member = user if isinstance(user, discord.Member) else None
        verdict = await self._decide(
            approval_id,
            ApprovalChoice.DENY,
            str(user.id),
            member,
            "reply",
            self._card_of(interaction),
            submission.text,
        )
        if verdict is None:
            await interaction.response.defer()
            return
        await interaction.response.send_message(verdict.message, ephemeral=True)

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
        await self._decide(
            entry.approval_id, choice, str(payload.user_id), payload.member, "reaction", card
        )

    async def _decide(
        self,
        approval_id: str,
        choice: ApprovalChoice,
        user_id: str,
        member: discord.Member | None,
        via: str,
        card: SentMessage | None,
        replacement_text: str | None = None,
        *,
        full_view: bool = False,
    ) -> ClickVerdict | None:
        host = self._connection.host
        if host is None:
            return None
        if (
            choice is not ApprovalChoice.DENY
            and not full_view
            and await self._cut_here(host, approval_id, user_id, member)
        ):
            self._log.warning(
                "discord_click_needs_full_view", approval_id=approval_id, user_id=user_id, via=via
            )
            return ClickVerdict.NEEDS_FULL_VIEW
        click = ApprovalClick(
            channel=self.ref,
            approval_id=approval_id,
            choice=choice,
            user_id=user_id,
            user_roles=role_keys(member),
            replacement_text=replacement_text,
            card=card,
            full_view=full_view,
        )
        verdict = await host.approval_clicked(click)
        self._log.info(
            "discord_approval_click",
            approval_id=approval_id,
            choice=choice.value,
            user_id=user_id,
            via=via,
            verdict=verdict.value,
        )
        return verdict

    async def _cut_here(
        self, host: ChannelHost, approval_id: str, user_id: str, member: discord.Member | None
    ) -> bool:
        """True when only this adapter cut the card (it did not fit in a message), so an
        approval from it must be refused here: the core, which did not cut it, would take
        it. Someone the host refuses anyway is left to the host, which audits the refusal."""
        card = await host.approval_card(channel=self.ref, approval_id=approval_id)
        if card is None or not card.approvable_here or not render_card(card).cut:
            return False
        refused = await host.approval_refusal(
            channel=self.ref, approval_id=approval_id, user_id=user_id, user_roles=role_keys(member)
        )
        return refused is None
