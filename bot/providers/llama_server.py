"""llama.cpp inside this process, through ``xllamacpp``: loading a model, one generation.

Everything here blocks and runs on a worker thread of :class:`~bot.providers.embedded.
EmbeddedProvider`, never on the event loop. What ``xllamacpp`` does that shapes this module:

* ``xllamacpp.Server(params)`` loads the model **holding the GIL** (about 0.15–0.3 s for the
  135M model on two cores): every Python thread, the event loop's too, pauses for it once.
  Loading is therefore started early (when the provider is built) and only once.
* The server also opens an HTTP listener, whether or not it is used. It is put on a Unix
  socket in a private temporary directory (mode 0700), so no other user or process reaches
  the model through it; nothing of hatchway talks to it.
* ``Server.handle_chat_completions(body, callback)`` runs one request with the GIL released,
  calls ``callback`` once per OpenAI-style chunk (holding the GIL briefly) and stops reading
  when the callback returns True; the request is then cancelled inside llama.cpp, so its slot
  stops generating at once (a stop is seen within a token).
* Destroying a server whose task loop has not started yet hangs, so :func:`load` waits for
  one answer from the loop (the metrics request) before it returns.
* llama.cpp's own log lines are switched off (``verbosity = -1``): they would reach the
  terminal, not hatchway's log.
* The pinned release (2026.10) leaves the process's signal handlers alone; an earlier one
  installed its own for SIGINT and SIGTERM, which would take Ctrl-C and the daemon's drain
  away from Python.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class LlamaSpec:
    """What to load: the GGUF file, tokens of context per slot, slots (requests served at
    once) and CPU threads (``None``: :func:`default_threads`)."""

    model_file: Path
    context_tokens: int
    slots: int
    threads: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LlamaCounters:
    """llama.cpp's running totals since the model was loaded."""

    prompt_tokens: int
    tokens_generated: int
    requests_processing: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatJob:
    """One chat completion to run: plain ``(role, content)`` messages (system first), the
    reply's token cap, the sampling temperature (``None``: llama.cpp's) and an optional JSON
    schema the reply must match (a grammar constrains the sampling to it)."""

    messages: tuple[tuple[str, str], ...]
    max_tokens: int
    temperature: float | None = None
    response_schema: Mapping[str, object] | None = None

    def body(self) -> dict[str, Any]:
        """The request body ``xllamacpp`` takes (an OpenAI Chat Completions body)."""
        body: dict[str, Any] = {
            "messages": [{"role": role, "content": content} for role, content in self.messages],
            "max_tokens": self.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.response_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": dict(self.response_schema)},
            }
        return body


@dataclass(frozen=True, slots=True, kw_only=True)
class LlamaRefusal:
    """llama.cpp refused or failed a request: its error type (``exceed_context_size_error``,
    ``invalid_request_error``, …) and message."""

    kind: str
    message: str


class LoadedModel:
    """A running ``xllamacpp.Server`` and the private directory of its socket."""

    def __init__(self, server: Any, socket_dir: str) -> None:
        self._server = server
        self._socket_dir = socket_dir

    def run(self, job: ChatJob, generation: Generation) -> None:
        """Run ``job`` into ``generation``; blocks until the reply ends or the generation is
        stopped. A request llama.cpp refuses (a JSON schema it cannot turn into a grammar, a
        prompt longer than the context) ends as :attr:`Generation.refusal`."""
        try:
            self._server.handle_chat_completions(job.body(), generation.on_chunk)
        except (ValueError, RuntimeError) as exc:
            generation.refusal = LlamaRefusal(kind="invalid_request_error", message=str(exc))

    def counters(self) -> LlamaCounters:
        """The server's totals, from its Prometheus text."""
        values: dict[str, float] = {}
        for line in str(self._server.handle_metrics()).splitlines():
            name, _, value = line.partition(" ")
            if name.startswith("llamacpp:"):
                try:
                    values[name.removeprefix("llamacpp:")] = float(value)
                except ValueError:
                    continue
        return LlamaCounters(
            prompt_tokens=int(values.get("prompt_tokens_total", 0)),
            tokens_generated=int(values.get("tokens_predicted_total", 0)),
            requests_processing=int(values.get("requests_processing", 0)),
        )

    def close(self) -> None:
        """Stop the server's threads, free the model and remove the socket directory."""
        self._server = None  # the last reference: the server is destroyed here
        shutil.rmtree(self._socket_dir, ignore_errors=True)


def default_threads() -> int:
    """CPU threads when the configuration names none: one less than the CPUs this process
    may use, at most 4, at least 1. llama.cpp's threads spin while they wait for each other
    at every step: with as many threads as CPUs, anything else running (hatchway's own event
    loop, another process) stalls them, and on two busy CPUs generation fell from ~100 to
    ~1 token/s; one thread kept ~100."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus - 1))


def _socket_dir() -> str:
    # a Unix socket path must stay under ~104 bytes: prefer /tmp to a long $TMPDIR
    base = "/tmp" if os.path.isdir("/tmp") else None
    return tempfile.mkdtemp(prefix="hatchway-llama-", dir=base)


def load(spec: LlamaSpec) -> LoadedModel:
    """Import ``xllamacpp`` and load ``spec``'s model (blocking; see the module doc).
    Raises ``ImportError`` without the runtime, ``RuntimeError`` for a file llama.cpp
    cannot load."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(spec.model_file)
    params.n_parallel = spec.slots
    params.n_ctx = spec.context_tokens * spec.slots
    params.warmup = False
    params.fit_params = False  # fitting to device memory: GPUs only, ~0.1 s of loading
    params.cache_ram_mib = 0  # no host-memory prompt cache beyond the slots' own
    params.verbosity = -1
    params.endpoint_metrics = True
    params.ui = False
    threads = spec.threads or default_threads()
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    socket_dir = _socket_dir()
    params.hostnames = [str(Path(socket_dir) / "llama.sock")]
    try:
        server = xllamacpp.Server(params)
        server.handle_metrics()  # the task loop answers: the server may be destroyed now
    except BaseException:
        shutil.rmtree(socket_dir, ignore_errors=True)
        raise
    return LoadedModel(server, socket_dir)


@dataclass(slots=True, eq=False)
class Generation:
    """One chat completion as it streams on a llama.cpp worker thread.

    :meth:`on_chunk` is ``xllamacpp``'s callback: it collects the text, hands each delta to
    ``on_delta`` (which must not block: it schedules work on the event loop) and returns True
    (stop) once :attr:`stopped` is set or the server reported an error.
    """

    on_delta: Callable[[str], None] | None = None
    stopped: threading.Event = field(default_factory=threading.Event)
    parts: list[str] = field(default_factory=list)
    finish_reason: str = ""
    prompt_tokens: int = 0
    output_tokens: int = 0
    usage_reported: bool = False
    refusal: LlamaRefusal | None = None

    def on_chunk(self, chunk: dict[str, Any]) -> bool:
        if self.stopped.is_set():
            return True
        error = chunk.get("error")
        if error is not None:
            detail = error if isinstance(error, dict) else {"message": str(error)}
            self.refusal = LlamaRefusal(
                kind=str(detail.get("type") or "server_error"),
                message=str(detail.get("message") or "no detail"),
            )
            return True
        for choice in (chunk.get("choices") or [])[:1]:
            content = (choice.get("delta") or {}).get("content")
            if content:
                self.parts.append(content)
                if self.on_delta is not None:
                    self.on_delta(content)
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage_reported = True
            self.prompt_tokens = int(usage.get("prompt_tokens") or 0)
            self.output_tokens = int(usage.get("completion_tokens") or 0)
        return self.stopped.is_set()

    @property
    def text(self) -> str:
        return "".join(self.parts)
