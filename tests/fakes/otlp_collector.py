"""An OTLP/HTTP trace collector on loopback, for tests: ``POST /v1/traces`` answered 200.

Usage::

    async with OtlpCollector(required={"authorization": "Bearer t0k"}) as collector:
        collector.endpoint                      # http://127.0.0.1:PORT/v1/traces
        collector.requests[0].content_type      # every export, in order

A request without every ``required`` header (name and value) is answered 401, as a
collector that checks an API key does; any other path 404. Bodies are kept as bytes and not
decoded (an empty one is a valid export of no span).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aiohttp import web

from tests.fakes.loopback import LoopbackFake, LoopbackServer

PATH = "/v1/traces"


@dataclass(frozen=True, slots=True, kw_only=True)
class Export:
    content_type: str
    headers: Mapping[str, str]
    body: bytes


class OtlpCollector(LoopbackFake):
    """See the module docstring."""

    def __init__(self, *, required: Mapping[str, str] | None = None) -> None:
        self.required = {k.lower(): v for k, v in (required or {}).items()}
        self.requests: list[Export] = []
        self.refused = 0
        self._server = LoopbackServer()

    @property
    def endpoint(self) -> str:
        return self._server.url(PATH)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post(PATH, self._export)
        return app

    async def _export(self, request: web.Request) -> web.Response:
        if any(request.headers.get(k) != v for k, v in self.required.items()):
            self.refused += 1
            return web.Response(status=401, text="missing or wrong API key")
        self.requests.append(
            Export(
                content_type=request.content_type,
                headers=dict(request.headers),
                body=await request.read(),
            )
        )
        return web.Response(body=b"", content_type="application/x-protobuf")
