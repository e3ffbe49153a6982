"""The console channel: stdin in, stdout out, approvals asked at the terminal.

Each input line is one message. ``/stop`` cancels the running turn, ``/new`` starts a new
session (both handled by the gateway); read from a pipe or a file, such a command takes effect
after the answers to the lines before it (``Capabilities.commands_in_order``), as in a
script. While an approval prompt is open, the next input line answers it instead of becoming
a message. Output goes through one :class:`Screen`, which keeps the input prompt (``> `` on an
interactive terminal) at the bottom and never writes into an open approval prompt's line.

End of input (Ctrl-D, or the end of piped input) closes the console to new messages: an open
approval prompt gets no answer (no), later lines are not sent, and the end is reported to
whoever waits in :meth:`ConsoleChannel.end_of_input` (``hatchway chat``, which finishes the
turns in hand and quits). On a pipe or file that is the end and ``run`` returns; on a
terminal reading goes on, so that a second Ctrl-D can be reported and an approval prompt of
the turn being finished can still be answered.

Console input means nothing once the process that read it is gone: its envelopes say
``replay_on_restart`` false, and recovery never answers them in a later run.
"""

from __future__ import annotations

import asyncio
import os
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
from channels.common.health import HealthRecord
from channels.console.inbound import StdinReader, is_terminal
from channels.console.screen import Screen

log = structlog.get_logger(__name__)

CONVERSATION_ID = "terminal"
QUITTING_NOTE = "(not sent: quitting; Ctrl-D again to quit now)"
THINKING = "… thinking"


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
        shows = is_terminal(self._stdout)
        self._shows_status = shows
        self._screen = Screen(
            self._stdout, prompting=shows and is_terminal(self._stdin), erasable=shows
        )
        #: at a terminal, the answer as the model writes it (``streams_text``): the progress
        #: sink's :class:`bot.channel.LiveText`
        self.live_text = self._screen
        self._host: ChannelHost | None = None
        self._answer: asyncio.Future[str | None] | None = None
        self._prompt_lock = asyncio.Lock()
        self._echoes = False
        self._ends: asyncio.Queue[None] = asyncio.Queue()
        self._closing = False  # an end of input was read: no new messages
        self._over = False  # and no more input will come
        self.cards = self  # cards as text (and answered at the prompt, ask_line)
        # a terminal has none of a Channel's other optional parts
        self.files = self.downloads = self.delivery = None
        self.members = self.history = self.replied = self.viewing = None
        self.work_status = self.answer_stream = None

    @property
    def health(self) -> ChannelHealth:
        return self._health.current

    @property
    def target(self) -> DeliveryTarget:
        return DeliveryTarget(channel=self.ref, conversation_id=CONVERSATION_ID)

    @property
    def interactive(self) -> bool:
        """A person types at a terminal: an end of input is a key press (Ctrl-D), and input
        can still be read after it."""
        return is_terminal(self._stdin)

    async def run(self, host: ChannelHost) -> None:
        """Deliver each line read as an envelope; return when input is over (a pipe or file
        ended; on a terminal, when cancelled)."""
        self._host = host
        reader = StdinReader(self._stdin)
        self._echoes = reader.echoes
        reader.open()
        self._health.set(HealthState.CONNECTED, "reading stdin")
        self._screen.begin()
        try:
            while True:
                line = await reader.next()
                if line is None:
                    self._end_of_input(over=reader.finished)
                    if reader.finished:
                        return
                    continue
                if self._answer is not None and not self._answer.done():
                    self._answer.set_result(line)
                    continue
                self._screen.line_read(blank=not line.strip())
                if self._closing:
                    self._screen.show(QUITTING_NOTE)
                elif line.strip():
                    await host.deliver(self._envelope(line))
        finally:
            reader.close()
            if self._answer is not None and not self._answer.done():
                self._answer.set_result(None)
            self._health.set(HealthState.STOPPED, "end of input")

    def _end_of_input(self, *, over: bool) -> None:
        self._closing = True
        self._over = self._over or over
        self._health.set(HealthState.STOPPED, "end of input")
        self._screen.stop_prompting()
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(None)
        self._ends.put_nowait(None)

    # -- what ``hatchway chat`` asks of its console --------------------------------------

    async def end_of_input(self) -> None:
        """Wait for the next end of input not yet waited for: each Ctrl-D on a terminal;
        the end of piped input once, and at once from then on."""
        if self._over and self._ends.empty():
            return
        await self._ends.get()

    def notice(self, text: str) -> None:
        """Show a line of the program's own (not a message of the conversation)."""
        self._screen.show(text)

    async def interrupt(self) -> None:
        """Stop the turn running for this console and drop those queued behind it, as
        typing ``/stop`` does (Ctrl-C; the ``^C`` the terminal echoed is cleared)."""
        self._screen.clear_line()
        if self._host is not None:
            await self._host.deliver(self._envelope("/stop", in_order=False))

    def quitting(self) -> None:
        """The program is about to quit: no new messages and no input prompt from now on;
        the prompt line is cleared, so that the shell's prompt starts on a clean line."""
        self._closing = True
        self._screen.stop_prompting()

    def _envelope(self, text: str, *, in_order: bool = True) -> IngressEnvelope:
        """The envelope of a line; read from a pipe or a file, a command in it acts in order
        (after the answers to the lines before it), as in a script."""
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
                typing=self._shows_status,  # "… thinking" while the turn works
                streams_text=self._shows_status,  # the answer as the model writes it
                terminal_prompt=True,
                replay_on_restart=False,
                commands_in_order=in_order and not self.interactive,
            ),
        )

    # -- outbound ---------------------------------------------------------------------

    async def send(
        self, target: DeliveryTarget, text: str, *, key: str = ""
    ) -> Sequence[SentMessage]:
        self._screen.show(text)
        return [SentMessage(target=target, message_id=uuid.uuid4().hex)]

    async def edit(self, message: SentMessage, text: str) -> None:
        self._screen.show(text)

    async def react(self, target: DeliveryTarget, message_id: str, emoji: str) -> None:
        return None

    async def typing(self, target: DeliveryTarget) -> None:
        """While a turn works, a terminal shows "… thinking" on the line the answer will
        take (replaced by it); piped output gets nothing."""
        self._screen.status(THINKING)

    async def post_approval_card(self, target: DeliveryTarget, card: ApprovalCard) -> SentMessage:
        self._screen.show(card.render_text())
        return SentMessage(target=target, message_id=card.approval_id)

    async def update_approval_card(self, message: SentMessage, card: ApprovalCard) -> None:
        self._screen.show(card.render_text())

    # -- terminal prompt (bot.approval TerminalPrompter) ---------------------------------

    async def ask_line(self, prompt: str) -> str | None:
        """Show ``prompt`` and return the next input line (None once input is over, or at
        the next end of input)."""
        async with self._prompt_lock:
            if self._over:
                return None
            answer: str | None = None
            self._answer = asyncio.get_running_loop().create_future()
            self._screen.ask(prompt)
            try:
                answer = await self._answer
                return answer
            finally:
                self._answer = None
                self._screen.answered(echoed=answer is not None and self._echoes)


def create(ref: ChannelRef, config: ChannelCommon, context: ChannelContext) -> ConsoleChannel:
    return ConsoleChannel(ref)
