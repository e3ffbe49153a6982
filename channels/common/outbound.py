"""The sending half of the ``Channel`` protocol, as every platform adapter forwards it.

Each adapter keeps what it sends in its own ``outbound`` module (text, edits, reactions,
typing, approval cards) and is a :class:`SendsThrough`: the protocol's sending methods are
that module's, so they are written once here instead of once per platform (the module is
the channel's ``cards`` too). So is the
channel's ``delivery.long_answer``: an answer too long for its messages goes as a file
(:mod:`channels.common.long_answer`) through the channel's ``files``, when it has them.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from bot.channel import ChannelSending, FileSending, SentMessage
from bot.channel_config import ChannelCommon
from bot.envelope import DeliveryTarget
from bot.errors import ChannelError
from channels.common.long_answer import (
    AnswersPrivately,
    CountsMessages,
    caption_of,
    send_as_file,
)

log = structlog.get_logger(__name__)


class SendsThrough:
    """Base of an adapter whose sending methods are its ``_outbound`` module's."""

    _outbound: ChannelSending
    files: FileSending | None

    async def send(
        self, target: DeliveryTarget, text: str, *, key: str = ""
    ) -> Sequence[SentMessage]:
        if key and self.files is not None and self._as_file(target, text):
            try:
                return await send_as_file(self.files, target, text, key=key)
            except ChannelError as exc:
                log.warning("long_answer_file_refused", channel=str(target.channel), error=str(exc))
        return await self._outbound.send(target, text, key=key)

    def shown_text(self, target: DeliveryTarget, text: str) -> str:
        """What a keyed reply of ``text`` to ``target`` says on the platform: the caption of
        its file when ``delivery.long_answer`` sends it as one, else ``text`` (for a
        delivery check that finds replies by their text; a refused file went as ``text``)."""
        return caption_of(text) if self._as_file(target, text) else text

    def _as_file(self, target: DeliveryTarget, text: str) -> bool:
        """Whether ``delivery.long_answer`` sends ``text`` as a file (the module doc)."""
        # Every adapter keeps its validated table as ``_config`` (typed by its own kind).
        config = getattr(self, "_config", None)
        if not isinstance(config, ChannelCommon) or config.delivery.long_answer != "file":
            return False
        outbound = self._outbound
        if not isinstance(outbound, CountsMessages) or self.files is None:
            return False
        if len(text.encode()) > self.files.upload_limit(target):
            return False
        if isinstance(outbound, AnswersPrivately) and outbound.answers_privately(target):
            return False
        return outbound.message_count(text) > config.delivery.long_answer_max_messages

    async def edit(self, message: SentMessage, text: str) -> None:
        await self._outbound.edit(message, text)

    async def react(self, target: DeliveryTarget, message_id: str, emoji: str) -> None:
        await self._outbound.react(target, message_id, emoji)

    async def typing(self, target: DeliveryTarget) -> None:
        await self._outbound.typing(target)
