"""Answers to approval cards on Discord: buttons, reactions, and deny-with-a-reply submissions.

Each answer is reported to the host as an :class:`~bot.channel.ApprovalClick`; the adapter
authorises nothing itself. The host's :class:`~bot.channel.ClickVerdict` is what the clicker
is told: ephemerally for a button or a modal, while an accepted button click is only
acknowledged (the card edit follows). A reaction has no private reply on Discord, so its
verdict is only logged.

Deny with a reply: the text of the "Deny with a reply" modal is reported as a DENY with
``replacement_text``. An empty or whitespace-only reply is refused with an ephemeral note and
nothing is reported (Discord requires the field but lets whitespace through); the approver
can submit again or press Deny.

Stale cards: when the verdict is UNKNOWN or ALREADY_DECIDED, the card the answer came from may
still offer buttons the approvals core can no longer remove (the daemon died between posting
it and storing its reference). The adapter re-reads that message and, only if it is the
bot's own card for that approval and still has its buttons, removes them. For UNKNOWN it adds
the line "This request is no longer open."; for ALREADY_DECIDED it leaves the text alone,
because the winner's own card edit may be in flight and must not be overwritten.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import discord
import structlog

from bot.channel import ApprovalChoice, ApprovalClick, ClickVerdict
from bot.envelope import ChannelRef
from channels.discord_approval import (
    REACTION_CHOICES,
    approval_ids_in,
    closed_content,
    parse_reply_id,
)
from channels.discord_client import Connection
from channels.discord_outbound import CardIndex
from channels.discord_reply import submitted_reply

log = structlog.get_logger(__name__)

STALE_VERDICTS = (ClickVerdict.UNKNOWN, ClickVerdict.ALREADY_DECIDED)
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


@dataclass(frozen=True, slots=True, kw_only=True)
class CardClosing:
    """How to close a stale card: remove its buttons, and replace its text unless None."""

    content: str | None


def closing_for(
    verdict: ClickVerdict,
    approval_id: str,
    *,
    bot_authored: bool,
    content: str,
    custom_ids: Iterable[str],
) -> CardClosing | None:
    """The edit that closes a card after ``verdict``, or None when the card is not to be
    touched: the verdict is not stale, the message is not the bot's, or it no longer
    carries buttons for ``approval_id``."""
    if verdict not in STALE_VERDICTS or not bot_authored:
        return None
    if approval_id not in approval_ids_in(custom_ids):
        return None
    if verdict is ClickVerdict.UNKNOWN:
        return CardClosing(content=closed_content(content))
    return CardClosing(content=None)


def _custom_ids(message: discord.Message) -> list[str]:
    ids: list[str] = []
    for component in message.components:
        for child in getattr(component, "children", [component]):
            custom_id = getattr(child, "custom_id", None)
            if isinstance(custom_id, str):
                ids.append(custom_id)
    return ids


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

    async def button(
        self, interaction: discord.Interaction, approval_id: str, choice: ApprovalChoice
    ) -> None:
        user = interaction.user
        member = user if isinstance(user, discord.Member) else None
        verdict = await self._decide(approval_id, choice, str(user.id), member, "button")
        if verdict is None or verdict is ClickVerdict.ACCEPTED:
            await interaction.response.defer()
        else:
            await interaction.response.send_message(verdict.message, ephemeral=True)
        if verdict is not None and interaction.message is not None:
            await self._close_if_stale(
                verdict, approval_id, interaction.channel_id, interaction.message.id
            )

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
            approval_id, ApprovalChoice.DENY, str(user.id), member, "reply", submission.text
        )
        if verdict is None:
            await interaction.response.defer()
            return
        await interaction.response.send_message(verdict.message, ephemeral=True)
        if interaction.message is not None:
            await self._close_if_stale(
                verdict, approval_id, interaction.channel_id, interaction.message.id
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
        approval_id = await self._cards.approval_for(str(payload.message_id)) if choice else None
        if choice is None or approval_id is None:
            return
        member = payload.member
        verdict = await self._decide(approval_id, choice, str(payload.user_id), member, "reaction")
        if verdict is not None:
            await self._close_if_stale(verdict, approval_id, payload.channel_id, payload.message_id)

    async def _decide(
        self,
        approval_id: str,
        choice: ApprovalChoice,
        user_id: str,
        member: discord.Member | None,
        via: str,
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

    async def _close_if_stale(
        self, verdict: ClickVerdict, approval_id: str, channel_id: int | None, message_id: int
    ) -> None:
        client = self._connection.connected()
        if verdict not in STALE_VERDICTS or client is None or channel_id is None:
            return
        try:
            # Re-read: the clicker's copy may predate the core's own edit of the card.
            card = await client.get_partial_messageable(channel_id).fetch_message(message_id)
        except discord.HTTPException as exc:
            self._log.warning("discord_stale_card_unread", status=exc.status, code=exc.code)
            return
        closing = closing_for(
            verdict,
            approval_id,
            bot_authored=client.user is not None and card.author.id == client.user.id,
            content=card.content,
            custom_ids=_custom_ids(card),
        )
        if closing is None:
            return
        try:
            if closing.content is None:
                await card.edit(view=None)
            else:
                await card.edit(content=closing.content, view=None)
        except discord.HTTPException as exc:
            self._log.warning("discord_stale_card_unchanged", status=exc.status, code=exc.code)
            return
        self._log.info(
            "discord_stale_card_closed",
            approval_id=approval_id,
            message_id=str(message_id),
            verdict=verdict.value,
        )
