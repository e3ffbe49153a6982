"""Fitting conversation history into the model's context budget.

Tokens are estimated, not counted: ``ceil(chars / 4)`` per message (content, plus each tool
call's name and raw arguments) plus :data:`MESSAGE_OVERHEAD` for the role and framing, plus
each image the message shows by its size in pixels (:func:`bot.providers.image_tokens.
image_tokens`: ``width × height / 750``, at most 1,600; a photo costs as much as a few
thousand characters of text, so a turn with images keeps less of the older history). Four
characters per token is close for English and code with the common BPE tokenizers and errs on
the generous side for other scripts; the budget (``agent.history_max_tokens``) should leave room
for the system prompt, the tool schemas and the reply.

The history is cut into *units* that must stay together: an assistant message with tool calls
and the tool results that answer it, or any other single message. :func:`fit_history` keeps the
newest units that fit, dropping the oldest first, so what remains is always a suffix of the
input that never separates a call from its results and holds no orphan tool result.
Everything from the newest user message on is kept even if it alone is over budget: that is
the question being answered.

The conversation's context (kept group messages, a thread's earlier messages:
:mod:`bot.context`) gets what the history leaves of the budget, and is trimmed first:
:func:`with_context` puts it, as an untrusted-data block, before the text of the newest user
message, in the request only (history keeps the message as it was).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from bot.channel import ViewedPlace
from bot.context import context_block, viewing_block
from bot.providers.base import ChatMessage
from bot.providers.image_tokens import image_tokens
from bot.store.context_lines import ContextLine

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4


def estimate_tokens(message: ChatMessage) -> int:
    """The estimated token cost of one message (see the module doc)."""
    chars = len(message.content)
    for call in message.tool_calls:
        chars += len(call.name) + len(call.arguments) + len(call.id)
    pictures = sum(image_tokens(image) for image in message.images)
    return -(-chars // CHARS_PER_TOKEN) + MESSAGE_OVERHEAD + pictures


def _units(messages: Sequence[ChatMessage]) -> list[list[ChatMessage]]:
    """Split history into keep-together units; tool results join the call that asked for
    them, a tool result with no such call is a unit of its own (an orphan)."""
    units: list[list[ChatMessage]] = []
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "tool" and units and message.tool_call_id in open_calls:
            units[-1].append(message)
            continue
        units.append([message])
        open_calls = (
            {call.id for call in message.tool_calls} if message.role == "assistant" else set()
        )
    return units


def _is_orphan(unit: list[ChatMessage]) -> bool:
    return unit[0].role == "tool"


def fit_history(messages: Sequence[ChatMessage], max_tokens: int) -> list[ChatMessage]:
    """The newest part of ``messages`` whose estimated size fits ``max_tokens``.

    Guarantees: the result is a suffix of ``messages`` with orphan tool results (those not
    answering the assistant message just before them) removed; an assistant tool-call message
    is kept together with its results; so it never starts with a tool message; everything from
    the newest user message on is kept, even over budget.
    """
    units = [unit for unit in _units(messages) if not _is_orphan(unit)]
    newest_user = max(
        (i for i, unit in enumerate(units) if unit[0].role == "user"), default=len(units)
    )
    kept = units[newest_user:]
    used = sum(estimate_tokens(m) for unit in kept for m in unit)
    for unit in reversed(units[:newest_user]):
        cost = sum(estimate_tokens(m) for m in unit)
        if used + cost > max_tokens:
            break
        kept.insert(0, unit)
        used += cost
    return [message for unit in kept for message in unit]


def with_context(
    messages: list[ChatMessage],
    lines: Sequence[ContextLine],
    max_tokens: int,
    *,
    viewing: ViewedPlace | None = None,
) -> list[ChatMessage]:
    """``messages`` (already fitted) with the context ``lines`` that fit in what they leave
    of ``max_tokens``, as a block before the newest user message's text; before it, when
    the person has a conversation open beside this one (``viewing``), the block naming it
    (a line, always shown)."""
    if not lines and viewing is None:
        return messages
    newest_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if newest_user is None:
        return messages
    blocks = [viewing_block(viewing)] if viewing is not None else []
    left = max_tokens - sum(estimate_tokens(m) for m in messages)
    left -= sum(len(b) for b in blocks) // CHARS_PER_TOKEN
    block = context_block(lines, left) if lines else ""
    if block:
        blocks.append(block)
    if not blocks:
        return messages
    asked = messages[newest_user]
    shown = list(messages)
    shown[newest_user] = replace(asked, content="\n\n".join([*blocks, asked.content]))
    return shown
