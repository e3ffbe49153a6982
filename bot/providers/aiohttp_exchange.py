"""The Chat Completions client's exchange over aiohttp: for an ``https://`` endpoint, or one
the environment sends through a proxy (a plain ``http://`` endpoint reached directly goes
through :mod:`bot.providers.http1`, which does not import aiohttp).

:class:`AiohttpExchange` posts with one :class:`aiohttp.ClientSession` (made on the first
request: it belongs to the running event loop), its connection pool limited and kept alive
as the client says, and turns aiohttp's errors into the ones :mod:`bot.providers.http1`
raises: :class:`TimeoutError`, :class:`~bot.providers.http1.Unreachable` (no connection
made), :class:`~bot.providers.http1.ConnectionCut` (anything after).
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

import aiohttp
from yarl import URL

from bot.providers.http1 import ConnectionCut, Unreachable

T = TypeVar("T")


@contextmanager
def _mapped() -> Iterator[None]:
    try:
        yield
    except TimeoutError:  # aiohttp's read and connect timeouts are TimeoutErrors
        raise
    except (aiohttp.ClientConnectorError, aiohttp.InvalidURL) as exc:
        raise Unreachable(str(exc) or type(exc).__name__) from exc
    except (aiohttp.ClientError, OSError) as exc:
        raise ConnectionCut(str(exc) or type(exc).__name__) from exc


async def _mapped_step(step: Awaitable[T]) -> T:
    with _mapped():
        return await step


class AiohttpReply:
    """An aiohttp response as :class:`~bot.providers.http1.Http1Reply` reads."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status = response.status
        self.headers: Mapping[str, str] = response.headers

    async def read(self) -> bytes:
        return await _mapped_step(self._response.read())

    async def readany(self) -> bytes:
        return await _mapped_step(self._response.content.readany())

    def release(self) -> None:
        self._response.release()


class AiohttpExchange:
    """Posts bodies to ``url`` (through ``proxy`` when set). See the module doc."""

    def __init__(
        self,
        *,
        url: URL,
        proxy: str | None,
        headers: Mapping[str, str],
        timeout_s: float,
        limit: int,
        keepalive_s: float,
    ) -> None:
        self._url = url
        self._proxy = proxy
        self._headers = dict(headers)
        self._timeout_s = timeout_s
        self._limit = limit
        self._keepalive_s = keepalive_s
        self._session: aiohttp.ClientSession | None = None

    async def post(self, body: bytes) -> AiohttpReply:
        session = self._session or self._open()
        response = await _mapped_step(session.post(self._url, data=body, proxy=self._proxy))
        return AiohttpReply(response)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _open(self) -> aiohttp.ClientSession:
        timeout = self._timeout_s
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self._limit, keepalive_timeout=self._keepalive_s),
            headers=self._headers,
            # connect and each read; the wait for a free connection is bounded by the others'
            timeout=aiohttp.ClientTimeout(sock_connect=timeout, sock_read=timeout),
        )
        return self._session
