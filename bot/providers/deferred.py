"""A provider whose vendor SDK is imported off the start-up path.

The ``anthropic`` SDK takes most of a second to import (the OpenAI-compatible provider, on
its own HTTP client, a few milliseconds once aiohttp is loaded). A daemon does not need a
provider to connect its channels and start admitting messages, so :class:`DeferredProvider`
holds what is needed to build the real provider and builds it on
:meth:`~DeferredProvider.warm` (the daemon calls it right after READY) or on the first
completion, whichever comes first. The imports run in a worker thread so the event loop
keeps serving channels meanwhile; a completion that arrives during the warm-up waits for it.
Configuration errors (unknown provider, missing API key) are raised when the
:class:`DeferredProvider` is created, not later: see
:func:`bot.providers.factory.defer_provider`."""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Callable, Iterable

import structlog

from bot.backoff import cancel_requested
from bot.providers.base import CompletionRequest, Provider, ProviderReply, StreamSink

log = structlog.get_logger(__name__)


def _import_all(modules: tuple[str, ...]) -> None:
    for module in modules:
        importlib.import_module(module)


class DeferredProvider:
    """A :class:`~bot.providers.base.Provider` built on first use or on :meth:`warm`.

    ``build`` must not fail for configuration reasons (check those first); ``modules`` are
    imported in a worker thread before ``build`` runs on the event loop.
    """

    def __init__(self, name: str, build: Callable[[], Provider], modules: Iterable[str]) -> None:
        self.name = name
        self._build = build
        self._modules = tuple(modules)
        self._provider: Provider | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    @property
    def built(self) -> bool:
        return self._provider is not None

    async def warm(self) -> None:
        """Import the SDKs and build the provider now, if not done yet. Never raises for an
        import or build failure (it is logged; the first completion tries again and fails
        with the real error); ``CancelledError`` propagates."""
        try:
            await self._ready()
        except Exception as exc:  # the first completion raises it where it can be reported
            if cancel_requested():
                raise asyncio.CancelledError from exc  # a stop during warm-up, not a failure
            log.warning("provider_warm_failed", provider=self.name, error=repr(exc))

    async def complete(
        self, request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply:
        provider = await self._ready()
        return await provider.complete(request, stream=stream)

    async def aclose(self) -> None:
        self._closed = True
        async with self._lock:
            provider, self._provider = self._provider, None
        if provider is not None:
            await provider.aclose()

    async def _ready(self) -> Provider:
        if self._provider is not None:
            return self._provider
        async with self._lock:
            if self._closed:
                raise RuntimeError(f"provider {self.name!r} is closed")
            if self._provider is None:
                started = time.monotonic()
                await asyncio.to_thread(_import_all, self._modules)
                self._provider = self._build()
                log.info(
                    "provider_built",
                    provider=self.name,
                    duration_ms=round((time.monotonic() - started) * 1000, 1),
                )
            return self._provider
