"""Answers to approval cards on Discord: buttons, reactions, and deny-with-a-reply submissions.

Each answer is reported to the host as an :class:`~bot.channel.ApprovalClick`; the adapter
authorises nothing itself. The host's :class:`~bot.channel.ClickVerdict` is what the clicker
is told: ephemerally for a button or a modal, while an accepted button click is only
acknowledged (the card edit follows). A reaction has no private reply on Discord, so its
verdict is only logged.

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

from bot.channel import ApprovalChoice, ApprovalClick, ClickVerdict, SentMessage
from bot.envelope import ChannelRef, DeliveryTarget
from channels.card_index import CardIndex
from channels.discord_approval import REACTION_CHOICES, parse_reply_id, reply_custom_id
from channels.discord_client import Connection
from channels.discord_reply import reply_modal, submitted_reply

log = structlog.get_logger(__name__)

EMPTY_REPLY = (
    "Your reply was empty, so nothing was recorded. "
    "Write what the assistant should be told instead, or press Deny."
)


def role_keys(member: discord.Member | None) -> tuple[str, ...]:
    """A member's role ids and names (without @everyone), for approver-role matching."""
    if member is None:
        return ()
    roles = [r for r in member.roles if not r.is_default()]
    return tuple(dict.fromkeys([*(str(r.id) for r in roles), *(r.name for r in roles)]))


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

    async def button(
        self, interaction: discord.Interaction, approval_id: str, choice: ApprovalChoice
    ) -> None:
        user = interaction.user
        member = user if isinstance(user, discord.Member) else None
        verdict = await self._decide(
            approval_id, choice, str(user.id), member, "button", self._card_of(interaction)
        )
        if verdict is None or verdict is ClickVerdict.ACCEPTED:
            await interaction.response.defer()
        else:
            await interaction.response.send_message(verdict.message, ephemeral=True)

    async def reply_requested(self, interaction: discord.Interaction, approval_id: str) -> None:
        """Open the reply modal, or tell a presser the host refuses why not."""
        host = self._connection.host
        user = interaction.user
        member = user if isinstance(user, discord.Member) else None
        refused = None
        if host is not None:
            refused = await host.approval_refusal(
                channel=self.ref,
                approval_id=approval_id,
                user_id=str(user.id),
                user_roles=role_keys(member),
            )
        if refused is None:
            await interaction.response.send_modal(reply_modal(reply_custom_id(approval_id)))
            return
        self._log.info(
            "discord_reply_refused", approval_id=approval_id, user_id=user.id, verdict=refused.value
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
    ) -> ClickVerdict | None:
        host = self._connection.host
        if host is None:
            return None
        click = ApprovalClick(
            channel=self.ref,
            approval_id=approval_id,
            choice=choice,
            user_id=user_id,
            user_roles=role_keys(member),
            replacement_text=replacement_text,
            card=card,
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
