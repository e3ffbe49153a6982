"""The OpenAI-compatible provider: OpenAI, OpenRouter, Ollama, vLLM, LM Studio, llama.cpp.

A completion is one ``POST /chat/completions``: the body encoded with each tool list's schemas
encoded once (:mod:`bot.providers.chat_body`), sent over a keep-alive pool of our own client
(:mod:`bot.providers.chat_client`; the ``openai`` SDK cost nine times the CPU per request),
the reply read from its JSON or its SSE stream (:mod:`bot.providers.chat_reply`). Retries,
backoff and ``Retry-After`` are :mod:`bot.providers.retry`'s job. Replies from compatible
servers are normalised (see :mod:`~bot.providers.chat_reply`), and lone UTF-16 surrogates
become U+FFFD in the reply and in streamed deltas (:mod:`bot.providers.surrogates`). Images
are sent when :func:`~bot.providers.vision.takes_images` says the model reads them.
"""

from __future__ import annotations

from bot.config import ProviderConfig
from bot.providers.base import CompletionRequest, ProviderReply, StreamSink
from bot.providers.chat_body import ToolSchemas, completion_params, request_body
from bot.providers.chat_client import ChatCompletionsClient
from bot.providers.chat_reply import StreamedReply, raw_arguments, reply_from_json
from bot.providers.retry import AttemptFailed, Retrier
from bot.providers.surrogates import clean_reply
from bot.providers.vision import takes_images

__all__ = ["OpenAICompatProvider", "completion_params", "raw_arguments"]


class OpenAICompatProvider:
    """A :class:`~bot.providers.base.Provider` over the Chat Completions API.

    Owns its HTTP client; :meth:`aclose` releases it.
    """

    def __init__(
        self,
        config: ProviderConfig,
        *,
        name: str,
        api_key: str,
        retrier: Retrier,
    ) -> None:
        self.name = name
        self._config = config
        self._retrier = retrier
        self._schemas = ToolSchemas()
        self._images = takes_images(config)
        self._client = ChatCompletionsClient(
            base_url=config.base_url, api_key=api_key, timeout_s=config.timeout_s, retrier=retrier
        )

    async def complete(
        self, request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply:
        """One completion, retried as a whole on transient failures (see the module doc)."""
        use_stream = stream is not None or self._config.stream
        body = request_body(
            self._config, request, stream=use_stream, schemas=self._schemas, images=self._images
        )

        async def attempt(sink: StreamSink | None) -> ProviderReply:
            if use_stream:
                return await self._streamed(body, sink)
            reply = await self._client.complete(body)
            return reply_from_json(reply, provider=self.name, model=self._config.model)

        reply = await self._retrier.run(attempt, stream, timeout_s=self._config.timeout_s)
        return clean_reply(reply)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _streamed(self, body: bytes, sink: StreamSink | None) -> ProviderReply:
        reply = StreamedReply(sink)
        await self._client.stream(body, reply.add)
        if not reply.finish_reason:
            raise AttemptFailed(f"{self.name} stream ended early", retryable=True)
        return await reply.finish(model=self._config.model)
