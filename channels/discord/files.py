"""Files the Discord adapter posts (:class:`~bot.channel.FileSending`): the ``send_file``
tool's uploads and long answers sent as a file.

A file goes as a multipart attachment of a message (discord.py's ``discord.File``; Discord
shows an image inline) in the target's channel or thread, the first message of the reply:
it replies to the request as :mod:`~channels.discord.outbound`'s first chunk does, carries
the caption's first chunk (rendered and split like any answer; no text at all without a
caption) and the nonce :func:`~channels.discord.delivery_check.reply_nonce` gives message 0
of the reply ``key``. The caption's further chunks follow as messages 1, 2… of the same
reply, so start-up recovery finds a file reply by its caption the way it finds any reply. A
target answering an application command gets the file as the interaction's follow-up.

The size limit is the guild's (``filesize_limit``: 10 MiB, 50 MiB at boost level 2, 100 MiB
at level 3, as discord.py knows them), and 10 MiB where the guild is not known (a DM).
Larger files are refused before anything is sent, and Discord's own refusal (413) is
reported the same way: :class:`~bot.errors.ChannelError` with one plain sentence.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Sequence
from pathlib import Path

import discord
from discord.utils import DEFAULT_FILE_SIZE_LIMIT_BYTES

from bot.attachments.naming import sent_file_name
from bot.channel import SentMessage
from bot.envelope import ChannelRef, DeliveryTarget
from bot.errors import ChannelError
from channels.discord.client import Connection
from channels.discord.command_replies import CommandReplies
from channels.discord.delivery_check import reply_nonce
from channels.discord.markup import render_chunks
from channels.discord.outbound import Outbound, reply_reference

#: Discord's answer to a body over the limit (HTTP 413).
ENTITY_TOO_LARGE = 40005


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB".replace(".0 MiB", " MiB")


class FileSender:
    """The file-posting half of :class:`~channels.discord.adapter.DiscordChannel`."""

    def __init__(
        self,
        ref: ChannelRef,
        connection: Connection,
        outbound: Outbound,
        replies: CommandReplies,
    ) -> None:
        self.ref = ref
        self._connection = connection
        self._outbound = outbound
        self._replies = replies

    def upload_limit(self, target: DeliveryTarget) -> int:
        """The guild's upload limit when discord.py knows the target's guild, else
        Discord's default (10 MiB)."""
        client = self._connection.connected()
        if client is None:
            return DEFAULT_FILE_SIZE_LIMIT_BYTES
        for channel_id in (target.thread_id, target.conversation_id):
            if channel_id is None or not channel_id.isdigit():
                continue
            guild = getattr(client.get_channel(int(channel_id)), "guild", None)
            if isinstance(guild, discord.Guild):
                return guild.filesize_limit
        return DEFAULT_FILE_SIZE_LIMIT_BYTES

    async def send_file(
        self,
        target: DeliveryTarget,
        path: Path,
        *,
        name: str,
        caption: str = "",
        key: str = "",
    ) -> Sequence[SentMessage]:
        name = sent_file_name(name) or "file"  # nothing in it can make it read as another
        try:
            size = (await asyncio.to_thread(path.stat)).st_size
        except OSError as exc:
            raise ChannelError(f"{name} cannot be read: {exc.strerror or exc}.") from None
        limit = self.upload_limit(target)
        if size > limit:
            raise ChannelError(
                f"{name} is larger than {_megabytes(limit)}, the most Discord accepts in "
                "this conversation."
            )
        chunks = render_chunks(caption) if caption.strip() else [""]
        first, rest = chunks[0], chunks[1:]
        message = await self._replies.send(target, first, file=lambda: self._file(path, name))
        if message is None:
            message = await self._post(target, path, name=name, content=first, key=key)
        sent = [message] if isinstance(message, SentMessage) else []  # or withheld (private)
        return [*sent, *await self._outbound.send_chunks(target, rest, key=key, start=1)]

    async def _post(
        self, target: DeliveryTarget, path: Path, *, name: str, content: str, key: str
    ) -> SentMessage:
        """The file and the caption's first chunk as a message in the target's channel."""
        destination = await self._outbound.destination(target)
        nonce = reply_nonce(key, 0, content) if key else secrets.randbits(64)
        reference = reply_reference(target)
        text = content or None  # a file needs no text
        try:
            if reference is None:
                posted = await destination.send(text, file=self._file(path, name), nonce=nonce)
            else:
                posted = await destination.send(
                    text, file=self._file(path, name), reference=reference, nonce=nonce
                )
        except discord.HTTPException as exc:
            if exc.status == 413 or exc.code == ENTITY_TOO_LARGE:
                raise ChannelError(
                    f"Discord refused {name}: it is larger than this conversation accepts."
                ) from exc
            raise ChannelError(
                f"Discord refused {name} (HTTP {exc.status}, code {exc.code})."
            ) from exc
        return SentMessage(target=target, message_id=str(posted.id))

    def _file(self, path: Path, name: str) -> discord.File:
        """A fresh upload of ``path`` (discord.py closes it once sent, so one per attempt)."""
        try:
            return discord.File(path, filename=name)
        except OSError as exc:
            raise ChannelError(f"{name} cannot be read: {exc.strerror or exc}.") from None
