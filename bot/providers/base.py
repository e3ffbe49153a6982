"""The ``Provider`` protocol and the message values that cross it.

A provider turns a :class:`CompletionRequest` into a :class:`ProviderReply`. Tool-call
arguments stay raw JSON text here: parsing them (and refusing malformed ones) is the tool
pipeline's job, so a broken reply is an outcome, never a crash.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallRequest:
    """One tool call as the model wrote it. ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ImagePart:
    """An image the model is shown with a message: already within every provider's limits
    (``media_type`` one of image/png, image/jpeg, image/gif, image/webp). ``name`` is how
    the user and the history's reference name it; ``width`` and ``height`` its size in
    pixels as sent (0: not known), from which its tokens are estimated
    (:mod:`bot.providers.image_tokens`)."""

    media_type: str
    data: bytes
    name: str = ""
    width: int = 0
    height: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatMessage:
    """One history message. Assistant messages may carry tool calls; tool messages answer
    exactly one call by ``tool_call_id``.

    ``images`` go to the model with this message in the turn they came with (a user's
    attachment, or ``view_attachment``'s result) and are never stored: history keeps
    ``content``, whose text names each image and where it is saved. A provider or model that
    takes no images gets ``content`` alone."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCallRequest, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    images: tuple[ImagePart, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDefinition:
    """What the model is told about a tool."""

    name: str
    description: str
    parameters: Mapping[str, object]


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """The tokens one model call used, each token counted in exactly one of four kinds
    (providers price them differently):

    * ``input_tokens``: prompt tokens read at the full price, cached ones *excluded*
      (OpenAI's ``prompt_tokens`` counts its ``cached_tokens`` too: a provider takes them
      out);
    * ``output_tokens``: what the model wrote;
    * ``cache_write_tokens``: prompt tokens written to the provider's prompt cache
      (Anthropic's ``cache_creation_input_tokens``);
    * ``cache_read_tokens``: prompt tokens read from it (Anthropic's
      ``cache_read_input_tokens``, OpenAI's ``prompt_tokens_details.cached_tokens``).

    ``estimated``: the counts are hatchway's estimate (:mod:`bot.usage.estimate`), not the
    provider's report."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        """Every token of the call, of all four kinds."""
        prompt = self.input_tokens + self.cache_write_tokens + self.cache_read_tokens
        return prompt + self.output_tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletionRequest:
    """One request to a model. ``response_schema`` (a JSON schema) asks for a reply that is
    JSON valid against it: the embedded provider constrains its grammar to it and the
    OpenAI-compatible one sends it as ``response_format``; the Anthropic API has no such
    field, so there it is not enforced."""

    system: str
    messages: Sequence[ChatMessage]
    tools: Sequence[ToolDefinition] = ()
    max_tokens: int | None = None
    response_schema: Mapping[str, object] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderReply:
    """One model reply. ``usage`` is what the provider reported (``None``: it reported
    nothing, and the turn records an estimate); ``model`` is the model that answered (the
    configured one when the reply names none); ``provider`` the configured provider that
    answered (``""`` when the provider does not say: the turn names the agent's)."""

    text: str
    tool_calls: tuple[ToolCallRequest, ...] = ()
    usage: Usage | None = None
    finish_reason: str = ""
    model: str = ""
    provider: str = ""


StreamSink = Callable[[str], Awaitable[None]]
"""Receives text deltas while a reply streams (for live drafts); never tool-call fragments."""


class Provider(Protocol):
    """An LLM endpoint.

    ``complete`` retries transient failures itself (429/5xx/connection errors, honouring
    ``Retry-After``) within its own limits and raises :class:`bot.errors.ProviderError` when
    it gives up. It must never return a half-assembled reply. ``CancelledError`` propagates.
    """

    name: str

    async def complete(
        self, request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply: ...

    async def aclose(self) -> None: ...
