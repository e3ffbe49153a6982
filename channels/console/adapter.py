"""The console channel: stdin in, stdout out, approvals asked at the terminal.

Each input line is one message. ``/stop`` cancels the running turn, ``/new`` starts a new
session (both handled by the gateway). End of input (Ctrl-D) ends the channel's ``run``.
While an approval prompt is open, the next input line answers it instead of becoming a
message.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import uuid
from collections.abc import Sequence
from typing import IO

import structlog

from bot.channel import (
    ApprovalCard,
    ChannelHealth,
    ChannelHost,
    HealthState,
    SentMessage,
)
from bot.channel_registry import ChannelContext
from bot.config import ChannelCommon
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.visible_text import terminal_text
from channels.common.health import HealthRecord

log = structlog.get_logger(__name__)

CONVERSATION_ID = "terminal"


class ConsoleChannel:
    """A local terminal conversation (also the embedded default of ``hatchway run``)."""

    def __init__(
        self,
        ref: ChannelRef,
        *,
        stdin: IO[str] | None = None,
        stdout: IO[str] | None = None,
        user: str | None = None,
    ) -> None:
        self.ref = ref
        self._stdin = stdin if stdin is not None else sys.stdin
        self._stdout = stdout if stdout is not None else sys.stdout
        self._user = user or os.environ.get("USER") or "local"
        self._health = HealthRecord(ref)
        self._prompt: asyncio.Future[str | None] | None = None
        self._prompt_lock = asyncio.Lock()
        self._eof = asyncio.Event()

    @property
    def health(self) -> ChannelHealth:
        return self._health.current

    def _set_health(self, state: HealthState, detail: str = "") -> None:
        self._health.set(state, detail)

    @property
    def target(self) -> DeliveryTarget:
        return DeliveryTarget(channel=self.ref, conversation_id=CONVERSATION_ID)

    def _write(self, text: str) -> None:
        # what the model, a tool or a platform name says is shown, never obeyed by the terminal
        self._stdout.write(terminal_text(text))
        self._stdout.flush()

    async def run(self, host: ChannelHost) -> None:
        """Read lines until end of input, delivering each as an envelope."""
        reader, transport = await self._open_reader()
        self._set_health(HealthState.CONNECTED, "reading stdin")
        try:
            while True:
                raw = await reader.readline()
                if not raw:
                    break
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if self._prompt is not None and not self._prompt.done():
                    self._prompt.set_result(line)
                    continue
                if not line.strip():
                    continue
                await host.deliver(self._envelope(line))
        finally:
            if transport is not None:
                transport.close()
            self._eof.set()
            if self._prompt is not None and not self._prompt.done():
                self._prompt.set_result(None)
            self._set_health(HealthState.STOPPED, "end of input")

    async def _open_reader(self) -> tuple[asyncio.StreamReader, asyncio.BaseTransport | None]:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        if _watchable(self._stdin):
            protocol = asyncio.StreamReaderProtocol(reader)
            transport, _ = await loop.connect_read_pipe(lambda: protocol, self._stdin)
            return reader, transport
        # A regular file or /dev/null (a service without a terminal) cannot be watched by
        # the event loop: read it whole; end of input follows.
        data = await asyncio.to_thread(self._stdin.read)
        reader.feed_data(data.encode("utf-8"))
        reader.feed_eof()
        return reader, None

    def _envelope(self, text: str) -> IngressEnvelope:
        return IngressEnvelope(
            channel=self.ref,
            message_id=uuid.uuid4().hex,
            conversation_id=CONVERSATION_ID,
            sender=Sender(id=self._user, display_name=self._user),
            text=text,
            reply_target=self.target,
            is_direct=True,
            addressed_to_bot=True,
            capabilities=Capabilities(
                max_message_chars=1_000_000,
                terminal_prompt=True,
            ),
        )

    # -- outbound ---------------------------------------------------------------------

    async def send(self, target: DeliveryTarget, text: str) -> Sequence[SentMessage]:
        self._write(f"{text}\n")
        return [SentMessage(target=target, message_id=uuid.uuid4().hex)]

    async def edit(self, message: SentMessage, text: str) -> None:
        self._write(f"{text}\n")

    async def react(self, target: DeliveryTarget, message_id: str, emoji: str) -> None:
        return None

    async def typing(self, target: DeliveryTarget) -> None:
        return None

    async def post_approval_card(self, target: DeliveryTarget, card: ApprovalCard) -> SentMessage:
        self._write(card.render_text() + "\n")
        return SentMessage(target=target, message_id=card.approval_id)

    async def update_approval_card(self, message: SentMessage, card: ApprovalCard) -> None:
        self._write(card.render_text() + "\n")

    # -- terminal prompt (bot.approval TerminalPrompter) ---------------------------------

    async def ask_line(self, prompt: str) -> str | None:
        """Show ``prompt`` and return the next input line (None at end of input)."""
        async with self._prompt_lock:
            if self._eof.is_set():
                return None
            self._prompt = asyncio.get_running_loop().create_future()
            self._write(prompt)
            try:
                return await self._prompt
            finally:
                self._prompt = None


def _watchable(stream: IO[str]) -> bool:
    """Pipes, sockets and terminals can be watched by the event loop; files cannot."""
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def create(ref: ChannelRef, config: ChannelCommon, context: ChannelContext) -> ConsoleChannel:
    return ConsoleChannel(ref)
