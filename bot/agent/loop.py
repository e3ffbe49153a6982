"""The turn loop: ``run_turn`` calls the provider until it returns final text.

This first version has no tools; the tool pipeline extends it.
"""

from __future__ import annotations

import asyncio

import structlog

from bot.agent.turn import AgentBundle, TurnResult, TurnState, TurnStatus
from bot.errors import ProviderError
from bot.providers.base import ChatMessage, CompletionRequest

log = structlog.get_logger(__name__)

BUDGET_MESSAGE = "⌛ Sorry, this took too long and was stopped. Please try again."
PROVIDER_MESSAGE = "⚠️ The language model is not answering right now ({reason}). Please try again later."
CANCELLED_MESSAGE = "⏹ Stopped."


async def run_turn(bundle: AgentBundle, state: TurnState) -> TurnResult:
    """Run one turn within the configured wall-clock budget. Never raises for provider
    failures or budget expiry: those become a :class:`TurnResult` the user sees."""
    user = ChatMessage(role="user", content=state.envelope.text)
    await bundle.store.history.append(state.session_key, state.turn_id, [user])
    messages = [*state.history, user]
    try:
        async with asyncio.timeout(bundle.settings.turn_timeout_s):
            reply = await bundle.provider.complete(
                CompletionRequest(system=bundle.settings.system_prompt, messages=messages)
            )
    except TimeoutError:
        log.warning("turn_budget_exceeded", budget_s=bundle.settings.turn_timeout_s)
        return TurnResult(status=TurnStatus.BUDGET_EXCEEDED, text=BUDGET_MESSAGE)
    except ProviderError as exc:
        log.warning("provider_failed", error=str(exc))
        return TurnResult(
            status=TurnStatus.PROVIDER_FAILED, text=PROVIDER_MESSAGE.format(reason=str(exc))
        )
    answer = ChatMessage(role="assistant", content=reply.text)
    await bundle.store.history.append(state.session_key, state.turn_id, [answer])
    return TurnResult(status=TurnStatus.COMPLETED, text=reply.text)
