"""What the Slack worker hands the host: message events and slash commands, as envelopes.

A message event is classified (:mod:`channels.slack.message_events`): a new message is
delivered (:meth:`~bot.channel.ChannelHost.deliver`), an edit reported with the envelope of
the message as it reads now (:meth:`~bot.channel.ChannelHost.edited`), a deletion by its
``message_id`` (:meth:`~bot.channel.ChannelHost.deleted`). A slash command is checked to be
this app's in this workspace, its response URL remembered for its answers
(:mod:`channels.slack.command_replies`), and delivered as a command. The sender's display
name is looked up here (``users.info``, cached), off the ack's path, and so is the
conversation's name (``conversations.info``, cached: :mod:`channels.slack.channel_names`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import structlog

from bot.channel import ChannelHost
from bot.envelope import Capabilities, ChannelRef, IngressEnvelope
from channels.slack.api import DisplayNames, SlackWebApi
from channels.slack.channel_names import ChannelNames
from channels.slack.command_replies import CommandReplies
from channels.slack.commands import (
    foreign_reason,
    parse_slash,
    slash_envelope,
    slash_message_id,
)
from channels.slack.config import SlackChannelConfig
from channels.slack.message_events import Deletion, Edit, NewMessage, classify
from channels.slack.normalise import BotIdentity, EventCallback, build_envelope

log = structlog.get_logger(__name__)


class Handover:
    """Builds envelopes from payloads and hands them to the host (module docstring)."""

    def __init__(
        self,
        *,
        ref: ChannelRef,
        config: SlackChannelConfig,
        api: SlackWebApi,
        names: DisplayNames,
        command_replies: CommandReplies,
        app_id: str = "",
    ) -> None:
        self._ref = ref
        self._config = config
        self._command_replies = command_replies
        self._app_id = app_id
        self._names = names
        self._channel_names = ChannelNames(api)

    def capabilities(self) -> Capabilities:
        config = self._config
        return Capabilities(
            can_edit=True,
            can_react=True,
            inline_buttons=True,
            typing=False,
            max_message_chars=config.max_message_chars,
            approval_backchannel=bool(config.approvers or config.approver_roles),
            command_prefix=f"{config.slash_command} ",
        )

    async def message(self, host: ChannelHost, bot: BotIdentity, body: Mapping[str, Any]) -> None:
        """Hand over one ``message`` / ``app_mention`` event callback; returns once the host
        has taken it."""
        kind = classify(body, bot)
        if isinstance(kind, NewMessage):
            await host.deliver(await self._envelope(kind.callback, bot))
        elif isinstance(kind, Edit):
            await host.edited(await self._envelope(kind.callback, bot))
        elif isinstance(kind, Deletion):
            await host.deleted(self._ref, kind.message_id)
        elif kind.reason == "malformed":
            log.info("slack_event_malformed", channel=str(self._ref))
        else:
            log.debug("slack_message_ignored", channel=str(self._ref), reason=kind.reason)

    async def _envelope(self, callback: EventCallback, bot: BotIdentity) -> IngressEnvelope:
        user = callback.event.user
        envelope = build_envelope(
            callback,
            ref=self._ref,
            bot=bot,
            display_name=await self._names.get(user) if user else "",
            capabilities=self.capabilities(),
            dm_replies_in_thread=self._config.dm_replies_in_thread,
        )
        return await self._titled(envelope)

    async def _titled(self, envelope: IngressEnvelope) -> IngressEnvelope:
        """``envelope`` with its conversation's name (a DM has none)."""
        if envelope.is_direct:
            return envelope
        title = await self._channel_names.get(envelope.conversation_id)
        return replace(envelope, conversation_title=title) if title else envelope

    async def command(self, host: ChannelHost, bot: BotIdentity, body: Mapping[str, Any]) -> None:
        """Deliver one slash command, unless it is another app's or workspace's."""
        command = parse_slash(body)
        if command is None:
            log.info("slack_command_malformed", channel=str(self._ref))
            return
        reason = foreign_reason(
            command,
            expected_command=self._config.slash_command,
            team_id=bot.team_id,
            app_id=self._app_id,
        )
        if reason is not None:
            log.warning(
                "slack_command_refused",
                channel=str(self._ref),
                reason=reason,
                team_id=command.team_id,
                user_id=command.user_id,
            )
            return
        message_id = slash_message_id(command.user_id, command.trigger_id)
        self._command_replies.remember(message_id, command.response_url)
        envelope = slash_envelope(
            command,
            ref=self._ref,
            display_name=await self._names.get(command.user_id),
            capabilities=self.capabilities(),
        )
        await host.deliver(await self._titled(envelope))
