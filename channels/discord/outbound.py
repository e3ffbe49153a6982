"""Everything the Discord adapter posts: answers, edits, reactions, typing, approval cards.

Text is rendered by :mod:`channels.discord.markup` and split under 2,000 characters; the first
chunk of an answer replies to the request message (except in a thread opened from it, where
the starter is not in the thread). A reply sent with a ``key`` gives each message a nonce
Discord enforces (:func:`~channels.discord.delivery_check.reply_nonce`), so it can be
retried without being doubled. A :class:`~bot.envelope.DeliveryTarget` with a thread posts
into the thread, opening it first when :class:`~channels.discord.threads.ThreadBook` says it
is still pending. Failures the caller should know about raise
:class:`~bot.errors.ChannelError`; a vanished message or a refused reaction is only logged.

An approval card whose target names a user rather than a channel (an approver's DM copy:
Discord answers Unknown Channel) is posted in the bot's DM with that user, opened on the way;
the returned message names the DM channel, so later edits find it. A user who closed their
DMs (403, code 50007) makes that a :class:`~bot.errors.ChannelError`.

A target replying to an application command's interaction is answered through the
interaction (:class:`~channels.discord.command_replies.CommandReplies`), and a message sent
that way is edited through it; what the interaction cannot take goes to the channel, except
a private command's reply, which goes to its user's DM or nowhere.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

import discord
import structlog
from discord.utils import MISSING

from bot.channel import ApprovalCard, CardState, SentMessage
from bot.envelope import ChannelRef, DeliveryTarget
from bot.errors import ChannelError
from channels.common.card_index import CardEntry, CardIndex
from channels.discord.cards import button_codec, card_reactions, card_view, render_card
from channels.discord.client import LOGIN_WAIT_S, NO_MENTIONS, Connection, GatewayClient
from channels.discord.command_replies import CommandReplies
from channels.discord.delivery_check import first_reply_to, reply_nonce
from channels.discord.markup import render_chunks, render_single
from channels.discord.members import UNKNOWN_CHANNEL
from channels.discord.threads import ThreadBook

log = structlog.get_logger(__name__)

#: Users whose DM channel is remembered (a few approvers in practice).
DM_CHANNELS_KEPT = 256


def reply_reference(target: DeliveryTarget) -> discord.MessageReference | None:
    """What the first message of a reply to ``target`` replies to (None: nothing)."""
    reply_to = first_reply_to(target)
    if reply_to is None:
        return None
    return discord.MessageReference(
        message_id=reply_to,
        channel_id=int(target.thread_id or target.conversation_id),
        fail_if_not_exists=False,
    )


class Outbound:
    """The sending half of :class:`~channels.discord.adapter.DiscordChannel` (its ``Channel``
    methods)."""

    def __init__(
        self,
        ref: ChannelRef,
        connection: Connection,
        threads: ThreadBook,
        cards: CardIndex,
        replies: CommandReplies,
        *,
        reactions_for_approval: bool,
    ) -> None:
        self.ref = ref
        self._connection = connection
        self._threads = threads
        self._cards = cards
        self._replies = replies
        self._reactions = reactions_for_approval
        self._dm_channels: dict[str, str] = {}  # user id -> the bot's DM channel with them
        #: The approval buttons' codec, shared with the answers' reader.
        self.codec = button_codec()
        self._log = log.bind(channel=str(ref))

    async def _connected_client(self) -> GatewayClient:
        """The logged-in client; a send made as the adapter starts (start-up recovery's
        notices and answers) waits for the login, at most :data:`LOGIN_WAIT_S`."""
        client = await self._connection.logged_in(LOGIN_WAIT_S)
        if client is None:
            raise ChannelError(f"{self.ref}: not connected to Discord")
        return client

    async def destination(self, target: DeliveryTarget) -> discord.PartialMessageable:
        """Where a message to ``target`` is posted: its thread (opened first when still
        pending) or its channel."""
        client = await self._connected_client()
        if target.thread_id is not None:
            await self._threads.before_posting(client, target.thread_id)
        return client.get_partial_messageable(int(target.thread_id or target.conversation_id))

    def message_count(self, text: str) -> int:
        """How many messages :meth:`send` posts for ``text`` (a long answer may go as a
        file instead: ``delivery.long_answer``)."""
        return len(render_chunks(text))

    async def send(
        self, target: DeliveryTarget, text: str, *, key: str = ""
    ) -> Sequence[SentMessage]:
        return await self.send_chunks(target, render_chunks(text), key=key)

    async def send_chunks(
        self, target: DeliveryTarget, chunks: Sequence[str], *, key: str = "", start: int = 0
    ) -> Sequence[SentMessage]:
        """Post rendered ``chunks`` as messages ``start``, ``start + 1``… of the reply
        ``key``; only a reply's first message (``start`` 0) replies to the request (a file
        sent with a long caption posts the caption's rest this way)."""
        destination: discord.PartialMessageable | None = None
        reference = reply_reference(target) if start == 0 else None
        sent: list[SentMessage] = []
        for index, chunk in enumerate(chunks, start):
            answer = await self._replies.send(target, chunk)
            if isinstance(answer, SentMessage):
                sent.append(answer)
            if answer is not None:  # sent through the interaction or privately, or withheld
                continue
            destination = destination or await self.destination(target)
            # discord.py sends every nonce with enforce_nonce; without a key, a random one
            # (what discord.py itself picks when given none).
            nonce = reply_nonce(key, index, chunk) if key else secrets.randbits(64)
            try:
                if reference is not None and not sent:
                    message = await destination.send(chunk, reference=reference, nonce=nonce)
                else:
                    message = await destination.send(chunk, nonce=nonce)
            except discord.HTTPException as exc:
                raise ChannelError(f"{self.ref}: sending failed: HTTP {exc.status}") from exc
            sent.append(SentMessage(target=target, message_id=str(message.id)))
        return sent

    async def edit(self, message: SentMessage, text: str) -> None:
        if await self._replies.edit(message, render_single(text)):
            return
        destination = await self.destination(message.target)
        partial = destination.get_partial_message(int(message.message_id))
        try:
            await partial.edit(content=render_single(text))
        except discord.NotFound:
            self._log.warning("discord_edit_target_gone", message_id=message.message_id)
        except discord.HTTPException as exc:
            raise ChannelError(f"{self.ref}: editing failed: HTTP {exc.status}") from exc

    async def react(self, target: DeliveryTarget, message_id: str, emoji: str) -> None:
        destination = await self.destination(target)
        try:
            await destination.get_partial_message(int(message_id)).add_reaction(emoji)
        except discord.HTTPException as exc:
            self._log.warning("discord_react_failed", status=exc.status, code=exc.code)

    async def typing(self, target: DeliveryTarget) -> None:
        destination = await self.destination(target)
        try:
            await destination.typing()
        except discord.HTTPException as exc:
            self._log.warning("discord_typing_failed", status=exc.status, code=exc.code)

    async def post_approval_card(self, target: DeliveryTarget, card: ApprovalCard) -> SentMessage:
        shown = render_card(card)
        view = card_view(card, shown, self.codec)

        async def post(where: discord.abc.Messageable) -> discord.Message:
            return await where.send(
                shown.content,
                view=view if view is not None else MISSING,
                allowed_mentions=NO_MENTIONS,
                suppress_embeds=True,
            )

        try:
            target, message = await self._post_card(target, post)
        except discord.HTTPException as exc:
            raise ChannelError(
                f"{self.ref}: posting an approval card failed: HTTP {exc.status} (code {exc.code})"
            ) from exc
        message_id = str(message.id)
        if self._reactions and card.state is CardState.PENDING:
            # Keyed by the channel the message is in, as a reaction names it.
            where = target.thread_id or target.conversation_id
            await self._cards.remember(where, message_id, CardEntry(approval_id=card.approval_id))
            for emoji in card_reactions(card, shown):
                await self.react(target, message_id, emoji)
        return SentMessage(target=target, message_id=message_id)

    async def _post_card(
        self,
        target: DeliveryTarget,
        post: Callable[[discord.abc.Messageable], Awaitable[discord.Message]],
    ) -> tuple[DeliveryTarget, discord.Message]:
        """Post in the target's channel, or, when the target names a user (an approver's DM
        copy), in the bot's DM with them; returns where the card went and the message."""
        known = self._dm_channels.get(target.conversation_id) if target.thread_id is None else None
        if known is not None:
            target = replace(target, conversation_id=known)
        try:
            return target, await post(await self.destination(target))
        except discord.NotFound as exc:
            if known is not None or exc.code != UNKNOWN_CHANNEL or target.thread_id is not None:
                raise
        # Not a channel: a user. Opening the DM always works; a user who closed their DMs
        # (or shares no server with the bot) refuses the message itself (403, code 50007).
        client = await self._connected_client()
        channel = await client.create_dm(discord.Object(id=int(target.conversation_id)))
        self._dm_channels[target.conversation_id] = str(channel.id)
        if len(self._dm_channels) > DM_CHANNELS_KEPT:
            self._dm_channels.pop(next(iter(self._dm_channels)))
        return replace(target, conversation_id=str(channel.id)), await post(channel)

    async def update_approval_card(self, message: SentMessage, card: ApprovalCard) -> None:
        destination = await self.destination(message.target)
        partial = destination.get_partial_message(int(message.message_id))
        shown = render_card(card)
        try:
            await partial.edit(
                content=shown.content,
                view=card_view(card, shown, self.codec),
                allowed_mentions=NO_MENTIONS,
            )
        except discord.NotFound:
            self._log.warning("discord_card_gone", message_id=message.message_id)
        except discord.HTTPException as exc:
            raise ChannelError(
                f"{self.ref}: updating an approval card failed: HTTP {exc.status}"
            ) from exc
        if self._reactions and card.state is not CardState.PENDING:
            where = message.target.thread_id or message.target.conversation_id
            await self._cards.close(where, message.message_id, card.approval_id)
