"""A model call's usage when the provider reported none: about four characters a token.

Some OpenAI-compatible servers send no ``usage`` object, even when a streamed request asks
for one (``stream_options.include_usage``). Their calls still count against budgets: the
prompt (system prompt, messages, tool calls and results, tool definitions) and the reply
are counted at :data:`CHARS_PER_TOKEN`, each image by its size in pixels
(:func:`bot.providers.image_tokens.image_tokens`, the rule history trimming uses too), and the
result is marked ``estimated``. English text runs at about four characters a token with the common
tokenizers; code and other languages run higher, so an estimate is a rough figure.
"""

from __future__ import annotations

from bot.providers.base import CompletionRequest, ProviderReply, Usage
from bot.providers.image_tokens import image_tokens

CHARS_PER_TOKEN = 4
#: What a message costs beyond its text (role and separators, per the chat templates).
MESSAGE_TOKENS = 4


def estimated_usage(request: CompletionRequest, reply: ProviderReply) -> Usage:
    """The estimate for ``reply`` to ``request`` (all of the prompt as input tokens)."""
    chars = len(request.system)
    tokens = 0
    for message in request.messages:
        chars += len(message.content)
        chars += sum(len(call.name) + len(call.arguments) for call in message.tool_calls)
        tokens += MESSAGE_TOKENS + sum(image_tokens(image) for image in message.images)
    for tool in request.tools:
        chars += len(tool.name) + len(tool.description) + len(repr(tool.parameters))
    written = len(reply.text) + sum(
        len(call.name) + len(call.arguments) for call in reply.tool_calls
    )
    return Usage(
        input_tokens=tokens + _tokens(chars),
        output_tokens=_tokens(written),
        estimated=True,
    )


def _tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)
