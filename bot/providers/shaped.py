"""A provider's own shape of the request: its system prompt, and no tools when they are off.

The agent sends every provider the same request. Two settings of one provider change what
that provider is sent: ``providers.<name>.system_prompt`` (or, for the embedded model, its
own short prompt) replaces the agent's system prompt, and ``tool_mode = "off"`` (the
embedded model's default) removes the tool definitions, so the model is offered none.
"""

from __future__ import annotations

import dataclasses

from bot.providers.base import CompletionRequest, Provider, ProviderReply, StreamSink


class ShapedProvider:
    """Wraps a provider: ``system`` (when not ``None``) replaces the request's system
    prompt, and with ``tools=False`` the request reaches ``inner`` without tools.
    Everything else, streaming and ``CancelledError`` included, is ``inner``'s."""

    def __init__(self, inner: Provider, *, system: str | None, tools: bool) -> None:
        self.inner = inner
        self.name = inner.name
        self._system = system
        self._tools = tools

    async def complete(
        self, request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply:
        shaped = request
        if self._system is not None:
            shaped = dataclasses.replace(shaped, system=self._system)
        if not self._tools and shaped.tools:
            shaped = dataclasses.replace(shaped, tools=())
        return await self.inner.complete(shaped, stream=stream)

    async def aclose(self) -> None:
        await self.inner.aclose()
