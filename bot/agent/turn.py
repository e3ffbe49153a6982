"""Values of an agent turn: the resolved per-agent bundle, per-turn state, the result.

Everything stable per agent comes in :class:`AgentBundle`; everything per message is in
:class:`TurnState`. The loop does no global lookups.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bot.channel import ViewedPlace
from bot.progress import NullProgress, ProgressSink
from bot.providers.base import ChatMessage, Provider, ToolDefinition
from bot.store import InboxKey
from bot.store.context_lines import ContextLine
from bot.tools.registry import RegistryCache, ToolRegistry
from bot.tools.services import PipelineServices
from bot.tools.spec import ToolSpec
from bot.turn import CancelReason, TurnIdentity
from bot.usage.meter import TurnUsage, UsageMeter


class CancelToken:
    """Set by ``/stop`` or shutdown; the turn checks it between steps, and what it awaits
    meanwhile is raced against it (:func:`bot.tools.cancellation.unless_cancelled`)."""

    def __init__(self) -> None:
        self._cancelled = False
        self.reason: CancelReason | None = None
        self._callbacks: list[Callable[[], object]] = []

    def cancel(self, reason: CancelReason = CancelReason.STOP) -> None:
        self.reason = reason
        self._cancelled = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Call ``callback`` once, from :meth:`cancel` (at once if already cancelled);
        returns the function that unregisters it."""
        if self.cancelled:
            callback()
            return _nothing
        self._callbacks.append(callback)
        return functools.partial(_discard, self._callbacks, callback)

    @property
    def cancelled(self) -> bool:
        return self._cancelled


def _nothing() -> None:
    return None


def _discard(callbacks: list[Callable[[], object]], callback: Callable[[], object]) -> None:
    if callback in callbacks:
        callbacks.remove(callback)


class DynamicTools(Protocol):
    """Tools whose set changes while the daemon runs (MCP servers connect, crash and come
    back), some of which may be deferred: runnable, but shown to the model only once
    activated (``tool_search``, keyword groups).

    ``specs`` is read once at turn start and joins the bundle's static tools; ``offered`` is
    asked before every provider call with everything the turn's scope allows and returns
    what the model is shown this iteration; ``finish_turn`` is called once when the turn
    ends. None of them may block or raise."""

    def specs(self) -> Sequence[ToolSpec]: ...

    def offered(
        self, *, turn_id: str, text: str, definitions: Sequence[ToolDefinition]
    ) -> Sequence[ToolDefinition]: ...

    def finish_turn(self, turn_id: str) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentBundle:
    """What a turn needs that is stable per agent.

    ``services`` is what every turn's tool pipeline is given, passed to it as it is (the
    agent's settings, store and approval gate among them); its scheduler and path locks
    must be shared by every turn of the process (one bundle per agent does that).
    ``registry`` (when set) is used instead of building one from ``tools``; build it once at
    start so that a bad spec fails there. ``workspace`` is the directory relative tool paths
    resolve against. ``dynamic`` adds tools that come and go at run time (MCP) and decides
    which of them are shown each iteration. ``usage`` (the process's, shared by every agent)
    records each model call and holds turns to their budgets. ``assembled`` keeps the
    registry built from ``tools`` and ``dynamic`` while they stay the same. ``sees_images``
    is whether the agent's model is shown the images a message brings
    (:func:`bot.agent.bundles.sees_images`), so that the lines about them say what it sees.
    """

    provider: Provider
    services: PipelineServices
    name: str = "default"
    sees_images: bool = True
    tools: Sequence[ToolSpec] = ()
    registry: ToolRegistry | None = None
    workspace: str | None = None
    dynamic: DynamicTools | None = None
    usage: UsageMeter | None = None
    assembled: RegistryCache = field(default_factory=RegistryCache, init=False, compare=False)


@dataclass(slots=True, kw_only=True)
class TurnState:
    """Per-message state of one turn.

    ``turn`` says which message, in which session, as which turn. ``history`` is the
    session's context before this message; ``run_turn`` extends it in place with what the
    turn appends to the store. Left ``None``, ``run_turn`` reads it from the store in the
    transaction that records the user message (one trip to SQLite for both) and sets it.
    ``excluded_tools`` adds the channel's and the conversation's exclusions to the agent's;
    ``restrict_to`` (when set) narrows the offered tools to those names for this run.
    ``inbox`` names the inbox entry the turn answers (None: none, e.g. in tests):
    ``run_turn`` marks it ``processing`` in the same transaction as the user message.
    ``user`` is that message when the runner built more than the envelope's text (the
    message came with files: their lines, and images shown this turn only); None: the
    envelope's text. ``usage`` is set by ``run_turn`` when the agent keeps usage: the
    turn's model calls and budgets. ``context`` is what the conversation said around the
    turn (kept group messages, the thread's earlier messages: :mod:`bot.context`), shown to
    the model as data with the turn's message and never recorded in history; ``viewing``
    likewise, the conversation the person has open beside this one (Slack's assistant pane).
    ``record_answer`` (set by the runner when the reply's channel can check a delivery,
    :class:`bot.channel.DeliveryCheck`): the final answer's outbox ledger row commits with
    the answer's history, one trip fewer; ``answer_recorded`` is then the text recorded.
    """

    turn: TurnIdentity
    history: list[ChatMessage] | None = None
    progress: ProgressSink = field(default_factory=NullProgress)
    cancel: CancelToken = field(default_factory=CancelToken)
    excluded_tools: tuple[str, ...] = ()
    restrict_to: frozenset[str] | None = None
    inbox: InboxKey | None = None
    user: ChatMessage | None = None
    usage: TurnUsage | None = None
    context: tuple[ContextLine, ...] = ()
    viewing: ViewedPlace | None = None
    record_answer: bool = False
    answer_recorded: str | None = None


class TurnStatus(enum.StrEnum):
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    BUDGET_EXCEEDED = "budget_exceeded"
    PROVIDER_FAILED = "provider_failed"
    LOOP_STOPPED = "loop_stopped"
    ITERATION_CAP = "iteration_cap"
    ABORTED = "aborted"  # e.g. a repeated prompt-requiring call
    BUDGET_SPENT = "budget_spent"  # a usage budget ([budgets]) is used up
    PARKED = "parked"  # waits on an approval card with its coroutine ended
    RESUME_FAILED = "resume_failed"  # a parked turn that could not be resumed


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnResult:
    """What the user is told. ``text`` is always something to send (possibly an error line)."""

    status: TurnStatus
    text: str
