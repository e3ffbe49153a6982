"""One endpoint's ``POST /chat/completions``, with a small keep-alive pool.

The OpenAI-compatible provider sends a body it encoded itself (:mod:`bot.providers.chat_body`)
and reads plain JSON back, so the ``openai`` SDK's layers (request options, httpx, httpcore's
pool, the reply's pydantic models) cost more than the exchange: about 0.9 ms of the event
loop's CPU per request against 0.1 ms here. What the SDK did that matters is kept:

* the endpoint: ``base_url`` (``OPENAI_BASE_URL`` or ``https://api.openai.com/v1`` when not
  set) plus ``/chat/completions``; ``Authorization: Bearer <key>``, or HTTP basic
  credentials when the URL carries a user and password; ``OpenAI-Organization`` and
  ``OpenAI-Project`` from ``OPENAI_ORG_ID`` and ``OPENAI_PROJECT_ID``; the environment's
  proxy for that URL (looked up once);
* the timeout, ``timeout_s`` for each step: connecting, and every read of the reply (a
  stream that keeps sending never times out; one that stops for ``timeout_s`` does);
* every failure becomes an :class:`~bot.providers.retry.AttemptFailed` through
  :mod:`bot.providers.retry`'s own functions, so the ladder and the messages are the SDK
  path's: an HTTP error status with its ``Retry-After``, a timeout, a connection that could
  not be made or was cut, an error event inside a stream, a body that is not JSON
  (``json.JSONDecodeError``, left for :meth:`~bot.providers.retry.Retrier.run`);
* SSE as the SDK reads it (:mod:`bot.providers.sse`), ending at ``data: [DONE]``, after which
  the rest of the body is read so the connection can be used again.

A connection is kept for :data:`KEEPALIVE_S` after its reply, at most :data:`POOL_LIMIT` at a
time; a request beyond that waits for one. The exchange that carries the requests is made on
the first one and closed by :meth:`ChatCompletionsClient.aclose`: HTTP/1.1 of its own
(:mod:`bot.providers.http1`) for an ``http://`` endpoint the environment names no proxy for,
aiohttp (:mod:`bot.providers.aiohttp_exchange`, imported then) for the others. A one-shot
``hatchway chat`` against a local model server so loads no aiohttp: about a sixth less CPU
and 7 MB less peak RSS.
"""

from __future__ import annotations

import base64
import json
import os
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Protocol

from yarl import URL

from bot.providers.endpoint import DEFAULT_ENDPOINTS, shown_url
from bot.providers.http1 import Http1Pool, Unreachable
from bot.providers.retry import (
    Retrier,
    connection_lost,
    not_json_failure,
    stream_error_failure,
    timeout_failure,
)
from bot.providers.sse import SseDecoder

#: Connections open at once to one endpoint (more requests wait for one to be free).
POOL_LIMIT = 64
#: How long an idle connection is kept for the next request.
KEEPALIVE_S = 15.0
DONE = "[DONE]"

EventHandler = Callable[[object], Awaitable[None]]
"""Receives each streamed event's JSON data, in order."""


class Reply(Protocol):
    """A reply's status and headers, its body read as it comes; released once."""

    status: int
    headers: Mapping[str, str]

    async def read(self) -> bytes:
        """The rest of the body."""
        ...

    async def readany(self) -> bytes:
        """The next piece of the body, ``b""`` at its end."""
        ...

    def release(self) -> None:
        """The connection back to the pool when the body was read to its end, else closed."""
        ...


class Exchange(Protocol):
    """Posts request bodies to the endpoint; raises :class:`TimeoutError`,
    :class:`~bot.providers.http1.Unreachable` or another :class:`OSError`."""

    async def post(self, body: bytes) -> Reply:
        """The reply to ``body`` once its status and headers are read (any status)."""
        ...

    async def aclose(self) -> None: ...


class ChatCompletionsClient:
    """Posts Chat Completions request bodies to one endpoint. See the module doc."""

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str,
        timeout_s: float,
        retrier: Retrier,
        environ: Mapping[str, str] | None = None,
        http1: bool = True,
    ) -> None:
        """``http1=False`` sends every request through aiohttp (the tests run both ways)."""
        env = os.environ if environ is None else environ
        root = base_url or env.get("OPENAI_BASE_URL") or DEFAULT_ENDPOINTS["openai"]
        url = URL(root.rstrip("/") + "/chat/completions")
        self.shown = shown_url(str(url))
        self._url = url.with_user(None)
        self._headers = _headers(url, api_key, env)
        self._proxy = _environment_proxy(self._url)
        self._timeout_s = timeout_s
        self._retrier = retrier
        self._http1 = http1
        self._exchange: Exchange | None = None

    async def complete(self, body: bytes) -> object:
        """The JSON reply to ``body`` (a request with ``"stream": false``)."""
        response = await self._send(body)
        try:
            with self._mapped():
                payload = await response.read()
        finally:
            response.release()
        try:
            return json.loads(payload)
        except UnicodeDecodeError:
            raise not_json_failure(self._retrier.provider) from None

    async def stream(self, body: bytes, handle: EventHandler) -> None:
        """Post ``body`` (a request with ``"stream": true``) and hand each event's JSON data
        to ``handle`` as it arrives, until ``[DONE]`` or the end of the body. An event that
        is an error object raises; what ``handle`` raises propagates as it is."""
        response = await self._send(body)
        try:
            decoder = SseDecoder()
            while True:
                with self._mapped():
                    piece = await response.readany()
                if not piece:
                    return
                for event in decoder.feed(piece):
                    if event.data.startswith(DONE):
                        with self._mapped():
                            await response.read()  # the rest, so the connection is reused
                        return
                    data = json.loads(event.data)
                    if isinstance(data, dict) and data.get("error"):
                        raise stream_error_failure(self._retrier.provider, _error_type(data))
                    await handle(data)
        finally:
            # back to the pool when the body was read to its end, closed otherwise
            response.release()

    async def aclose(self) -> None:
        if self._exchange is not None:
            await self._exchange.aclose()
            self._exchange = None

    async def _send(self, body: bytes) -> Reply:
        """The response to ``body``, its status checked (an error status raises)."""
        exchange = self._exchange or self._open()
        with self._mapped():
            response = await exchange.post(body)
        if response.status < 400:
            return response
        try:
            with self._mapped():
                text = (await response.read()).decode("utf-8", "replace")
        finally:
            response.release()
        raise self._retrier.status_failure(response.status, response.headers, detail=_detail(text))

    def _open(self) -> Exchange:
        url = self._url
        exchange: Exchange
        if self._http1 and url.scheme == "http" and self._proxy is None and url.host:
            exchange = Http1Pool(
                host=url.host,
                port=url.port or 80,
                path=url.raw_path_qs,
                headers=self._headers,
                timeout_s=self._timeout_s,
                limit=POOL_LIMIT,
                keepalive_s=KEEPALIVE_S,
            )
        else:
            from bot.providers.aiohttp_exchange import AiohttpExchange

            exchange = AiohttpExchange(
                url=url,
                proxy=self._proxy,
                headers=self._headers,
                timeout_s=self._timeout_s,
                limit=POOL_LIMIT,
                keepalive_s=KEEPALIVE_S,
            )
        self._exchange = exchange
        return exchange

    @contextmanager
    def _mapped(self) -> Iterator[None]:
        """The exchange's errors as :class:`AttemptFailed` (see the module doc)."""
        provider = self._retrier.provider
        try:
            yield
        except TimeoutError as exc:
            raise timeout_failure(provider, self._timeout_s) from exc
        except Unreachable as exc:
            raise connection_lost(provider, self.shown, never_connected=True) from exc
        except OSError as exc:
            raise connection_lost(provider, self.shown, never_connected=False) from exc


def _headers(url: URL, api_key: str, env: Mapping[str, str]) -> dict[str, str]:
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": "hatchway",
        "Authorization": f"Bearer {api_key}",
    }
    if url.user is not None or url.password is not None:
        # as httpx does under the SDK: credentials in the URL are sent instead of the key
        pair = f"{url.user or ''}:{url.password or ''}".encode()
        headers["Authorization"] = f"Basic {base64.b64encode(pair).decode()}"
    for variable, header in (
        ("OPENAI_ORG_ID", "OpenAI-Organization"),
        ("OPENAI_PROJECT_ID", "OpenAI-Project"),
    ):
        if env.get(variable):
            headers[header] = env[variable]
    return headers


def _environment_proxy(url: URL) -> str | None:
    """The proxy the environment names for ``url`` (``*_proxy``, ``no_proxy``), if any."""
    if urllib.request.proxy_bypass(url.host or ""):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(url.scheme) or proxies.get("all")


def _detail(text: str) -> str:
    """What an error body says: its ``error.message`` when it has one, else the text."""
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return text


def _error_type(data: dict[str, object]) -> str:
    error = data.get("error")
    kind = error.get("type") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) and kind else "error"
