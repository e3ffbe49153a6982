"""The terminal handler: ask the person at the console, one line, y/n/a.

Used when the envelope says a terminal prompt exists and the channel implements
:class:`TerminalPrompter`. Empty input, EOF (``None``) or anything unrecognised means no;
no answer within ``wait_in_turn_s`` (the console cannot park: its prompt is the process; at most
``timeout_s``) is the runtime's ``expired`` (``timeout``).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from bot.approval import audit
from bot.approval.gate import ApprovalDecision
from bot.approval.grants import new_grant
from bot.approval.handler import AskedCall
from bot.approval.reasons import AnswerRoute, RuntimeReason
from bot.store.audit import AuditLog, Decision
from bot.store.grants import Grants
from bot.visible_text import visible


@runtime_checkable
class TerminalPrompter(Protocol):
    """A channel that can ask its user a question and read one line back."""

    async def ask_line(self, prompt: str) -> str | None:
        """Show ``prompt`` and return the line typed (without newline), or None on EOF.
        Must not log the answer or the prompt beyond what the terminal shows."""
        ...


class TerminalAnswer(enum.StrEnum):
    YES = "yes"
    NO = "no"
    ALWAYS = "always"


_DECISION = {
    TerminalAnswer.YES: Decision.APPROVED,
    TerminalAnswer.NO: Decision.DENIED,
    TerminalAnswer.ALWAYS: Decision.ALWAYS,
}

_ANSWERS = {
    "y": TerminalAnswer.YES,
    "yes": TerminalAnswer.YES,
    "n": TerminalAnswer.NO,
    "no": TerminalAnswer.NO,
    "a": TerminalAnswer.ALWAYS,
    "always": TerminalAnswer.ALWAYS,
}


def parse_answer(line: str | None) -> TerminalAnswer:
    if line is None:
        return TerminalAnswer.NO
    return _ANSWERS.get(line.strip().lower(), TerminalAnswer.NO)


def render_prompt(*, tool: str, full_text: str, reason: str, timeout_s: float) -> str:
    """The prompt: the tool, every argument in full (from
    :attr:`bot.approval.summary.ArgumentView.full`, already masked and escaped), why, and
    the answers."""
    body = [
        f"🔐 Approve {visible(tool)}?",
        *(f"  {line}" for line in full_text.split("\n")),
        f"Why: {reason}",
    ]
    seconds = int(timeout_s)
    body.append(f"[y]es / [n]o / [a]lways — empty means no (times out in {seconds}s): ")
    return "\n".join(body)


@dataclass(frozen=True, slots=True, kw_only=True)
class TerminalHandler:
    """Asks ``prompter`` (the console the request came from) and audits the answer; an
    "always" also creates the grant."""

    prompter: TerminalPrompter
    audit_log: AuditLog
    grants: Grants
    clock: Callable[[], float]

    async def decide(self, asked: AskedCall) -> ApprovalDecision:
        request, policy = asked.request, asked.policy
        started = self.clock()
        # The terminal has no length limit: the person reads every argument in full.
        prompt = render_prompt(
            tool=request.tool,
            full_text=asked.view.full,
            reason=asked.why,
            timeout_s=policy.wait_in_turn_s,
        )
        try:
            async with asyncio.timeout(policy.wait_in_turn_s):
                answer = parse_answer(await self.prompter.ask_line(prompt))
        except TimeoutError:
            expired = ApprovalDecision.by_runtime(RuntimeReason.TIMEOUT, Decision.EXPIRED)
            await self._audit(asked, expired, reason=RuntimeReason.TIMEOUT, started=started)
            return expired
        env = request.turn.envelope
        who = env.sender.id or "terminal"
        if answer is TerminalAnswer.ALWAYS:
            await self.grants.create(
                new_grant(
                    tool=request.tool,
                    scope=policy.grant_scope,
                    channel=env.channel,
                    conversation_id=env.conversation_id,
                    granted_by=who,
                    now=self.clock(),
                    ttl_s=policy.grant_ttl_s,
                )
            )
        decision = ApprovalDecision(verdict=_DECISION[answer], decided_by=who)
        await self._audit(asked, decision, reason=AnswerRoute.TERMINAL, started=started)
        return decision

    async def _audit(
        self,
        asked: AskedCall,
        decision: ApprovalDecision,
        *,
        reason: RuntimeReason | AnswerRoute,
        started: float,
    ) -> None:
        now = self.clock()
        await self.audit_log.append(
            audit.entry_for_request(
                asked.request,
                asked.view.lines,
                at=now,
                decision=decision.verdict,
                decided_by=decision.decided_by,
                reason=reason,
                latency_ms=(now - started) * 1000,
            )
        )
