"""Everything the Slack adapter posts: answers, edits, reactions and approval cards.

Markdown is rendered to ``mrkdwn`` and split under ``max_message_chars``
(:mod:`channels.slack.markup`); answers go in the thread of the target, each chunk of a keyed
reply with metadata naming the key (:mod:`channels.slack.delivery_check`). An edit replaces a
message's first chunk, and repeating the text last set is a no-op. Reactions name Slack's
short names (an unknown emoji is logged and skipped). Slack offers bots no typing indicator
outside assistant threads, so ``typing`` does nothing.

Approval cards are Block Kit (:mod:`channels.slack.cards`). A copy posted to a user id lands
in the app's DM with them (``D…``): the returned message names that channel, since
``chat.update`` and reactions need it. With ``reactions_for_approval`` every posted card is
recorded in the :class:`~channels.common.card_index.CardIndex` (a reaction is matched to its
approval there) and marked closed once the card shows an outcome.

A keyed reply to a thread whose answer was streamed (:mod:`channels.slack.streaming`)
finishes the streamed message as its first chunk instead of posting one.

A slash command's reply target is answered privately by
:class:`~channels.slack.command_replies.CommandReplies` (nothing is returned to edit, and
nothing reacts to a slash command).

Files (``send_file``) are shared in the target's thread by :mod:`channels.slack.files`, the
caption rendered like an answer as the upload's comment. A file share carries no metadata, so
a keyed file is posted first and its caption (or name) after it as a keyed message: the
delivery check finds the reply only once both went out.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import structlog

from bot.attachments.naming import sent_file_name
from bot.channel import ApprovalCard, CardState, SentMessage
from bot.envelope import ChannelRef, DeliveryTarget
from channels.common.card_index import CardEntry, CardIndex
from channels.slack.api import SlackWebApi
from channels.slack.cards import card_blocks, card_text
from channels.slack.command_replies import CommandReplies
from channels.slack.commands import SLASH_PREFIX
from channels.slack.config import SlackChannelConfig
from channels.slack.delivery_check import reply_metadata
from channels.slack.files import SlackFiles
from channels.slack.markup import render_chunks
from channels.slack.streaming import SlackAnswerStreams

log = structlog.get_logger(__name__)

#: Memory bound of the per-message cache of last edited texts.
REMEMBERED = 512

_EMOJI_NAMES = {
    "👀": "eyes",
    "✅": "white_check_mark",
    "❌": "x",
    "⏳": "hourglass_flowing_sand",
    "👍": "+1",
    "👎": "-1",
    "⚠️": "warning",
    "🛑": "octagonal_sign",
    "♾️": "infinity",
    "🤔": "thinking_face",
    "🔐": "closed_lock_with_key",
}
_EMOJI_NAME = re.compile(r"^:?([a-z0-9_+\-']+):?$")


def emoji_name(emoji: str) -> str | None:
    """Slack's short name for ``emoji`` (a unicode emoji or ``:name:``), if known."""
    if emoji in _EMOJI_NAMES:
        return _EMOJI_NAMES[emoji]
    match = _EMOJI_NAME.match(emoji)
    return match.group(1) if match else None


class SlackOutbound:
    """The sending half of :class:`~channels.slack.adapter.SlackChannel` (its ``Channel``
    methods)."""

    def __init__(
        self,
        *,
        ref: ChannelRef,
        config: SlackChannelConfig,
        api: SlackWebApi,
        cards: CardIndex,
        command_replies: CommandReplies,
        files: SlackFiles,
        streams: SlackAnswerStreams | None = None,
    ) -> None:
        self._ref = ref
        self._config = config
        self._api = api
        self._cards = cards
        self._command_replies = command_replies
        self._files = files
        self._streams = streams
        self._last_edit: OrderedDict[tuple[str, str], str] = OrderedDict()

    async def send(
        self, target: DeliveryTarget, text: str, *, key: str = ""
    ) -> Sequence[SentMessage]:
        chunks = render_chunks(text, self._config.max_message_chars)
        if self._command_replies.answers(target):
            await self._command_replies.send(target, chunks)
            return []  # ephemeral: nothing to edit later
        sent: list[SentMessage] = []
        if key and chunks and self._streams is not None:
            streamed = await self._streams.finish(target, chunks[0], key=key, parts=len(chunks))
            sent.extend([streamed] if streamed is not None else [])
        for part, chunk in enumerate(chunks, start=1):
            if part <= len(sent):
                continue  # the streamed message is the first chunk
            posted = await self._api.post_message(
                channel=target.conversation_id,
                text=chunk,
                thread_ts=target.thread_id,
                metadata=reply_metadata(key, part, len(chunks)) if key else None,
            )
            sent.append(SentMessage(target=target, message_id=posted.ts))
        return sent

    def message_count(self, text: str) -> int:
        """How many messages :meth:`send` posts for ``text`` (a long answer may go as a
        file instead: ``delivery.long_answer``)."""
        return len(render_chunks(text, self._config.max_message_chars))

    def answers_privately(self, target: DeliveryTarget) -> bool:
        """A slash command's answers are shown only to its user; a file would be public."""
        return self._command_replies.answers(target)

    def upload_limit(self, target: DeliveryTarget) -> int:
        return self._files.upload_limit(target)

    async def send_file(
        self,
        target: DeliveryTarget,
        path: Path,
        *,
        name: str,
        caption: str = "",
        key: str = "",
    ) -> Sequence[SentMessage]:
        """Share the file in the target's thread with ``caption`` under it; keyed, the file
        and then its caption (or name) as a keyed message (module docstring)."""
        name = sent_file_name(name) or "file"  # nothing in it can make it read as another
        chunks = render_chunks(caption, self._config.max_message_chars) if caption.strip() else []
        comment = chunks[0] if len(chunks) == 1 and not key else None
        shared = await self._files.upload(target, path, name=name, comment=comment)
        sent = [shared] if shared is not None else []
        if comment is None and (chunks or key):
            sent.extend(await self.send(target, caption if chunks else name, key=key))
        return sent

    async def edit(self, message: SentMessage, text: str) -> None:
        """Replace a message's text (its first chunk); repeating the same text is a no-op."""
        chunks = render_chunks(text, self._config.max_message_chars)
        if not chunks:
            return
        key = (message.target.conversation_id, message.message_id)
        if self._last_edit.get(key) == chunks[0]:
            return
        await self._api.update_message(
            channel=message.target.conversation_id, ts=message.message_id, text=chunks[0]
        )
        self._last_edit[key] = chunks[0]
        if len(self._last_edit) > REMEMBERED:
            self._last_edit.popitem(last=False)

    async def react(self, target: DeliveryTarget, message_id: str, emoji: str) -> None:
        """React to a message; ``message_id`` is a ``ts`` or an envelope's ``channel:ts``."""
        if message_id.startswith(SLASH_PREFIX):
            return  # a slash command is no message
        name = emoji_name(emoji)
        if name is None:
            log.info("slack_unknown_emoji", channel=str(self._ref))
            return
        ts = message_id.rsplit(":", 1)[-1]
        await self._api.add_reaction(channel=target.conversation_id, ts=ts, name=name)

    async def typing(self, target: DeliveryTarget) -> None:
        """Slack offers bots no typing indicator outside assistant threads: nothing to do."""

    async def post_approval_card(self, target: DeliveryTarget, card: ApprovalCard) -> SentMessage:
        reactions = self._config.reactions_for_approval
        posted = await self._api.post_message(
            channel=target.conversation_id,
            text=card_text(card),
            thread_ts=target.thread_id,
            blocks=card_blocks(card, reactions=reactions),
        )
        # A copy posted to a user id lands in the app's DM with them (D…): chat.update and
        # reactions name that channel, not the user.
        where = replace(target, conversation_id=posted.channel)
        if reactions:
            entry = CardEntry(approval_id=card.approval_id, thread_id=target.thread_id)
            await self._cards.remember(where.conversation_id, posted.ts, entry)
        return SentMessage(target=where, message_id=posted.ts)

    async def update_approval_card(self, message: SentMessage, card: ApprovalCard) -> None:
        reactions = self._config.reactions_for_approval
        await self._api.update_message(
            channel=message.target.conversation_id,
            ts=message.message_id,
            text=card_text(card),
            blocks=card_blocks(card, reactions=reactions),
        )
        if reactions and card.state is not CardState.PENDING:
            await self._cards.close(
                message.target.conversation_id, message.message_id, card.approval_id
            )
