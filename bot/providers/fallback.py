"""The fallback chain: try providers in order until one answers.

Each provider has already spent its own retries when it raises; the chain then moves on. The
reply names the provider that gave it (``ProviderReply.provider``: its usage is recorded
against that one). When the last one fails too, :class:`~bot.errors.ProviderUnavailable` says
which providers were tried and why each failed, in short user-safe words.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence

import structlog

from bot.errors import ProviderError, ProviderUnavailable
from bot.providers.base import CompletionRequest, Provider, ProviderReply, StreamSink
from bot.providers.draft_stream import DraftStream

log = structlog.get_logger(__name__)


class FallbackProvider:
    """A :class:`~bot.providers.base.Provider` over an ordered, non-empty list of providers.

    Streamed text stays coherent across the switch (see
    :class:`~bot.providers.draft_stream.DraftStream`). ``CancelledError`` propagates without
    trying the next provider. :meth:`aclose` closes every provider.
    """

    def __init__(self, providers: Sequence[Provider]) -> None:
        if not providers:
            raise ValueError("FallbackProvider needs at least one provider")
        self.providers = tuple(providers)
        self.name = "+".join(p.name for p in self.providers)

    async def complete(
        self, request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply:
        draft = DraftStream(stream) if stream is not None else None
        failures: list[str] = []
        for index, provider in enumerate(self.providers):
            try:
                reply = await provider.complete(
                    request, stream=draft.attempt() if draft is not None else None
                )
            except ProviderError as exc:
                failures.append(f"{provider.name}: {exc}")
                following = self.providers[index + 1 :]
                log.warning(
                    "provider_fallback",
                    failed=provider.name,
                    reason=str(exc),
                    next=following[0].name if following else None,
                )
            else:
                if reply.provider:
                    return reply
                return dataclasses.replace(reply, provider=provider.name)
        raise ProviderUnavailable(
            "no language model provider answered (" + "; ".join(failures) + ")"
        )

    async def aclose(self) -> None:
        """Close every provider, even when closing one of them fails."""
        async with contextlib.AsyncExitStack() as stack:
            for provider in reversed(self.providers):
                stack.push_async_callback(provider.aclose)
