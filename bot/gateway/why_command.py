"""Admission step: ``/why TOOL {JSON}``, for approvers, after the command limits.

An approver asks why a call would run, be asked about or be refused **here**: the call is
imagined in the conversation the command came from, by its sender, routed as that
conversation is, and judged by the engine of ``hatchway policy explain``
(:mod:`bot.tools.policy_question`: the pipeline's way of building the call, the policy the
daemon runs, its grants, and the running channel asked who can see a group). The answer is
the decision, the rule and table that decided it, the approvers and whether each can see the
conversation, how a person would be asked, and what the card would show (masked as on a
card).

Only approvers of the channel alias may ask (listed by id, or holding one of its
``approver_roles``): anyone else is told so, and nothing is explained. The answer is private,
as ``/usage``'s is (:func:`bot.gateway.private_answer.answer_privately`): in place in a direct
message or where the platform shows it to its sender alone (a Slack slash command, a Discord
application command, ephemeral), else in the sender's direct message with only a pointer in
the conversation. The command limits count it like any member command
(:data:`bot.chat_commands.CHAT_COMMANDS`). A question that cannot be answered (no tool named,
an unknown tool, arguments that are not a JSON object) gets one sentence saying why.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import structlog

from bot.chat_commands import command_of
from bot.config import Settings
from bot.gateway.admission import Admit, Arrival
from bot.gateway.private_answer import answer_privately
from bot.gateway.sending import ChannelLookup, Replies
from bot.routing import Router
from bot.store import Store
from bot.tools.policy_question import Unanswerable, ask, report
from bot.tools.spec import ToolSpec

log = structlog.get_logger(__name__)

ONLY_APPROVERS = "Only approvers of this channel may ask {prefix}why."
USAGE = (
    "Ask why a call would run, be asked about or be refused here: "
    '{prefix}why TOOL {{"argument": "value"}} (e.g. {prefix}why shell {{"command": "ls"}})'
)
SENT_PRIVATELY = "📬 I sent you the answer to {prefix}why in a direct message."
NOT_SENT = (
    "I could not send you a direct message, and the answer is not shown here: "
    "open a direct chat with me and send {prefix}why there."
)

ToolCatalog = Callable[[], Sequence[ToolSpec]]
"""The tools a turn could call now (the daemon's, MCP servers' included)."""


class WhyCommand:
    """``/why`` (see the module doc)."""

    #: what this step acts on; any other message passes it by (admission.compose)
    commands = frozenset({"why"})

    def __init__(
        self,
        *,
        store: Store,
        replies: Replies,
        channel_for: ChannelLookup,
        settings: Callable[[], Settings],
        tools: ToolCatalog,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._replies = replies
        self._channel_for = channel_for
        self._settings = settings
        self._tools = tools
        self._clock = clock

    async def __call__(self, arrival: Arrival, call_next: Admit) -> None:
        if command_of(arrival.envelope.text) != "why":
            await call_next(arrival)
            return
        envelope = arrival.envelope
        prefix = envelope.capabilities.command_prefix
        settings = self._settings()
        cfg = settings.channels.get(envelope.channel.kind, envelope.channel.alias)
        if cfg is None or not cfg.is_approver(envelope.sender):
            log.info("command_refused", command="why", user_id=envelope.sender.id)
            await self._replies.send(envelope, ONLY_APPROVERS.format(prefix=prefix))
            return
        text = await self._answer(arrival, settings)
        log.info("command_answered", command="why", user_id=envelope.sender.id)
        await answer_privately(
            self._replies,
            self._channel_for,
            envelope,
            text,
            sent=SENT_PRIVATELY.format(prefix=prefix),
            not_sent=NOT_SENT.format(prefix=prefix),
        )

    async def _answer(self, arrival: Arrival, settings: Settings) -> str:
        envelope = arrival.envelope
        prefix = envelope.capabilities.command_prefix
        words = envelope.text.split(maxsplit=2)
        if len(words) < 2:
            return USAGE.format(prefix=prefix)
        tool, arguments = words[1], (words[2] if len(words) > 2 else "{}")
        question = Router(settings).routed(envelope)
        answer = await ask(
            question,
            tool,
            arguments,
            settings=settings,
            store=self._store,
            specs=self._tools(),
            channel=self._channel_for(envelope.channel),
            clock=self._clock,
            mcp_known=True,
        )
        if isinstance(answer, Unanswerable):
            return f"Cannot answer: {answer.message}\n{USAGE.format(prefix=prefix)}"
        return report(answer)
