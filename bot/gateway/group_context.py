"""Admission step: a group message not addressed to the bot is kept for context only.

Placed just before the access policy, which would refuse it silently ("not addressed to the
bot"): where the alias keeps group context (:mod:`bot.context.keeping` says when), the
message is kept in its conversation's window, in one write, and goes no further. It is never
answered and starts no turn.
"""

from __future__ import annotations

from collections.abc import Awaitable

from bot.context import ConversationContext
from bot.gateway.admission import Admit, Arrival


class GroupContextStep:
    """Keeps what :meth:`ConversationContext.keeps` names; passes everything else on."""

    def __init__(self, context: ConversationContext) -> None:
        self._context = context

    def __call__(self, arrival: Arrival, call_next: Admit) -> Awaitable[None]:
        cfg = self._context.keeps(arrival.envelope)
        if cfg is None:
            return call_next(arrival)
        return self._context.keep(arrival.envelope, cfg)
