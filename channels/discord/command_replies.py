"""Answers to application commands: through the interaction, within Discord's time limits.

Discord wants an interaction answered within 3 s, and its token then lets the application
post follow-ups for 15 minutes. A command is deferred as soon as it arrives
(:meth:`CommandReplies.defer`: the user sees "hatchway is thinking…") and kept here, keyed
by the interaction id — the id the command's envelope carries as ``message_id`` and as its
reply target's ``reply_to_message_id``. A ``send`` to such a target goes out as the
interaction's follow-up (the first one takes the place of "thinking…"), and an edit of a
message sent that way goes through the interaction's webhook too.

Replies to a command are ephemeral (only its user sees them) when :meth:`defer` says so; the
inbound side asks that for every command in a server (a command may be refused by the rate
limits, and a refusal is the user's alone; ``/usage`` and ``/status`` are nobody else's
business), as Slack shows a slash command's answers. A private reply that cannot use the
interaction (never deferred, expired, or Discord refused the follow-up) is never posted in
the channel: it goes to the user's DM with the bot, and when Discord refuses that too (the
user closed their DMs) it is dropped and logged (``discord_private_reply_dropped``;
:data:`Undelivered.PRIVATE`). Who asked is remembered here while the process lives, and
carried by the target itself (``DeliveryTarget.private_to``, kept in the outbox ledger): a
reply start-up recovery sends again after a restart, when nothing here remembers the
command, goes to that user's DM (``discord_private_reply_sent_by_dm`` with
``recovered=true``) or is dropped and logged the same way, never posted in the channel. Any
other reply that cannot use the interaction (a command in a DM, which is private already) is
not taken here, and the caller posts it as a normal message.

Once the gateway has handled the command (:meth:`settle`), an interaction nothing was sent
to — the gateway answers some commands with silence, such as a successful ``/stop``, whose
stopped turn says so itself, or a refused sender — has its "thinking…" response deleted, so
it is not left spinning until Discord gives up on it.
"""

from __future__ import annotations

import enum
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import discord
import structlog
from discord.utils import MISSING

from bot.channel import SentMessage
from bot.envelope import ChannelRef, DeliveryTarget
from channels.discord.client import NO_MENTIONS, Connection, endpoint_scope

log = structlog.get_logger(__name__)

#: How long an interaction's token is used: Discord's 15 minutes, less a margin.
TOKEN_LIFETIME_S = 14 * 60.0
PENDING_LIMIT = 1024


class Undelivered(enum.Enum):
    """A private reply neither the interaction nor a DM took: not posted anywhere."""

    PRIVATE = "private"


@dataclass(slots=True)
class _Pending:
    interaction: discord.Interaction[discord.Client]
    ephemeral: bool
    started: float
    answered: bool = False
    sent: set[str] = field(default_factory=set)  # ids of the messages sent through it


class CommandReplies:
    """The deferred interactions of one adapter, and replies through them."""

    def __init__(
        self,
        ref: ChannelRef,
        *,
        api_base_url: str | None,
        connection: Connection | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api_base = api_base_url
        self._connection = connection
        self._clock = clock
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        #: who asked each private command, by interaction id (the latest PENDING_LIMIT):
        #: where its replies go once the interaction cannot take them
        self._private: OrderedDict[str, discord.User | discord.Member] = OrderedDict()
        self._log = log.bind(channel=str(ref))

    async def defer(
        self, interaction: discord.Interaction[discord.Client], *, ephemeral: bool
    ) -> None:
        """Acknowledge the interaction now and keep it for the reply. A refused deferral
        (Discord no longer knows the interaction) is logged; the reply then goes to the
        channel, or to the user's DM when ``ephemeral``."""
        self._prune()
        if ephemeral:
            self._private[str(interaction.id)] = interaction.user
            if len(self._private) > PENDING_LIMIT:
                self._private.popitem(last=False)
        try:
            with endpoint_scope(self._api_base):
                await interaction.response.defer(ephemeral=ephemeral, thinking=True)
        except discord.HTTPException as exc:
            self._log.warning(
                "discord_command_defer_failed",
                interaction_id=str(interaction.id),
                status=exc.status,
                code=exc.code,
            )
            return
        self._pending[str(interaction.id)] = _Pending(
            interaction=interaction, ephemeral=ephemeral, started=self._clock()
        )

    async def send(
        self,
        target: DeliveryTarget,
        chunk: str,
        *,
        file: Callable[[], discord.File] | None = None,
    ) -> SentMessage | Undelivered | None:
        """Post ``chunk`` (with the file ``file`` makes attached, when given: made only when
        it is used) as a follow-up of the interaction ``target`` replies to, or, for a private
        command the interaction cannot answer, in its user's DM; None when ``target`` is no
        private command's and there is no interaction to use (the caller posts in the
        channel)."""
        pending = self._live(target.reply_to_message_id)
        if pending is None:
            return await self._direct(target, chunk, file)
        try:
            with endpoint_scope(self._api_base):
                message = await pending.interaction.followup.send(
                    chunk or MISSING,  # a file needs no text
                    wait=True,
                    ephemeral=pending.ephemeral,
                    allowed_mentions=NO_MENTIONS,
                    file=MISSING if file is None else file(),
                )
        except discord.HTTPException as exc:
            self._log.warning(
                "discord_command_reply_failed",
                interaction_id=str(pending.interaction.id),
                status=exc.status,
                code=exc.code,
            )
            self._pending.pop(str(pending.interaction.id), None)
            return await self._direct(target, chunk, file)
        pending.answered = True
        pending.sent.add(str(message.id))
        return SentMessage(target=target, message_id=str(message.id))

    async def _direct(
        self, target: DeliveryTarget, chunk: str, file: Callable[[], discord.File] | None
    ) -> SentMessage | Undelivered | None:
        """A private command's reply in its user's DM with the bot (None: not private)."""
        interaction_id = target.reply_to_message_id
        user = self._private.get(interaction_id) if interaction_id is not None else None
        user_id = str(user.id) if user is not None else target.private_to
        if user_id is None:
            return None
        recovered = user is None  # only the target says it was private (a restart)
        try:
            with endpoint_scope(self._api_base):
                to = user if user is not None else await self._dm_of(user_id)
                message = await to.send(
                    chunk or None,  # a file needs no text
                    allowed_mentions=NO_MENTIONS,
                    file=MISSING if file is None else file(),
                )
        except (discord.HTTPException, LookupError) as exc:
            self._log.warning(
                "discord_private_reply_dropped",
                interaction_id=interaction_id,
                user_id=user_id,
                status=getattr(exc, "status", None),
                code=getattr(exc, "code", None),
                recovered=recovered,
            )
            return Undelivered.PRIVATE
        self._log.info(
            "discord_private_reply_sent_by_dm",
            interaction_id=interaction_id,
            user_id=user_id,
            recovered=recovered,
        )
        dm = DeliveryTarget(channel=target.channel, conversation_id=str(message.channel.id))
        return SentMessage(target=dm, message_id=str(message.id))

    async def _dm_of(self, user_id: str) -> discord.DMChannel:
        """The DM channel with a user known only by id (LookupError: no client, or not an
        id)."""
        client = self._connection.connected() if self._connection is not None else None
        if client is None or not user_id.isdigit():
            raise LookupError(f"no DM with {user_id!r}")
        return await client.create_dm(discord.Object(int(user_id)))

    async def edit(self, message: SentMessage, content: str) -> bool:
        """Edit a message :meth:`send` posted, through the interaction's webhook; False when
        ``message`` was not sent that way (or the interaction has expired)."""
        pending = self._live(message.target.reply_to_message_id)
        if pending is None or message.message_id not in pending.sent:
            return False
        try:
            with endpoint_scope(self._api_base):
                await pending.interaction.followup.edit_message(
                    int(message.message_id), content=content, allowed_mentions=NO_MENTIONS
                )
        except discord.HTTPException as exc:
            self._log.warning(
                "discord_command_edit_failed",
                message_id=message.message_id,
                status=exc.status,
                code=exc.code,
            )
        return True

    async def settle(self, interaction_id: str) -> None:
        """The gateway is done with the command: delete the "thinking…" response of an
        interaction nothing was sent to. Later replies (a command that became a turn) still
        use the interaction while its token lasts."""
        pending = self._live(interaction_id)
        if pending is None or pending.answered:
            return
        try:
            with endpoint_scope(self._api_base):
                await pending.interaction.delete_original_response()
        except discord.HTTPException as exc:
            self._log.warning(
                "discord_command_close_failed",
                interaction_id=interaction_id,
                status=exc.status,
                code=exc.code,
            )
            return
        self._log.info("discord_command_unanswered", interaction_id=interaction_id)

    def _live(self, interaction_id: str | None) -> _Pending | None:
        if interaction_id is None:
            return None
        pending = self._pending.get(interaction_id)
        if pending is None or self._clock() - pending.started > TOKEN_LIFETIME_S:
            return None
        return pending

    def _prune(self) -> None:
        now = self._clock()
        while self._pending:
            oldest = next(iter(self._pending.values()))
            if now - oldest.started <= TOKEN_LIFETIME_S and len(self._pending) < PENDING_LIMIT:
                return
            self._pending.popitem(last=False)
