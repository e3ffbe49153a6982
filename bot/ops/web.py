"""The daemon's HTTP server: one aiohttp application, served on ``[server] host:port``.

The application is created first and handed to the App (``App(..., web_app=...)``) so that
HTTP-mode adapters (Slack's Events API) can add their routes while channels are built; the
health routes are added by the daemon; :meth:`HttpServer.start` then freezes the router and
listens. The default bind address is loopback: health and metrics are for the host's own
monitoring, and a reverse proxy publishes webhook paths when needed.

Malformed requests get a 4xx and exactly one log line (``http_request_refused``), never a 500
or a traceback:

* what aiohttp cannot parse (request line, header syntax, lengths): its own 400, logged by
  :class:`ServerLog` as one line instead of the ERROR traceback aiohttp writes;
* no such route, or the wrong method: 404, 405;
* a header value that is not ASCII: 400 (no endpoint takes one, and libraries comparing
  header values as ``str`` raise on them);
* a body over :data:`MAX_BODY_BYTES`: 413; a content type other than JSON or a form, or a
  charset other than UTF-8: 415; bytes that are not UTF-8, or JSON that is not one object: 400.

A handler refuses a request by *raising* an ``HTTPClientError`` (e.g. ``HTTPForbidden``) and
does not log it itself: :func:`log_refusals` writes the line. The Telegram webhook receiver
runs its own small server from the same parts (:func:`log_refusals`, :func:`server_runner`,
:func:`read_json_object`, :func:`header_bytes`).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import structlog
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.typedefs import Handler

from bot.config import ServerConfig
from bot.errors import HatchwayError

log = structlog.get_logger(__name__)

MAX_BODY_BYTES = 1024 * 1024
"""The largest request body any endpoint reads (Slack and Telegram send a few KiB)."""

JSON_TYPE = "application/json"
FORM_TYPE = "application/x-www-form-urlencoded"
_BODY_TYPES = frozenset({JSON_TYPE, FORM_TYPE})


def _printable(text: str, limit: int = 200) -> str:
    """``text`` as ASCII for a log field: anything else as a backslash escape."""
    return text.encode("ascii", "backslashreplace").decode("ascii")[:limit]


# -- reading a request -------------------------------------------------------------------------


def header_bytes(request: web.Request, name: str) -> bytes:
    """A header's value as the bytes the client sent; ``b""`` when it is absent, or sent
    more than once (which of two secrets would count is anyone's guess).

    aiohttp decodes header bytes as UTF-8 with ``surrogateescape``, so a value holding
    invalid UTF-8 is a ``str`` that a plain ``.encode()`` refuses; this undoes that decoding
    exactly. Compare secrets on these bytes with :func:`hmac.compare_digest`.
    """
    values = request.headers.getall(name, [])
    if len(values) != 1:
        return b""
    return values[0].encode("utf-8", "surrogateescape")


def _require_content_type(request: web.Request, accepted: frozenset[str]) -> None:
    if request.content_type not in accepted:
        raise web.HTTPUnsupportedMediaType(
            text=f"content type must be one of {', '.join(sorted(accepted))}"
        )
    charset = (request.charset or "utf-8").lower()
    if charset not in ("utf-8", "utf8"):
        raise web.HTTPUnsupportedMediaType(text="charset must be utf-8")


async def read_text(request: web.Request) -> str:
    """The body as text: 413 over :data:`MAX_BODY_BYTES`, 400 when it is not UTF-8."""
    declared = request.content_length
    if declared is not None and declared > MAX_BODY_BYTES:
        raise web.HTTPRequestEntityTooLarge(max_size=MAX_BODY_BYTES, actual_size=declared)
    body = await request.read()  # raises 413 itself past the application's client_max_size
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise web.HTTPBadRequest(text="body is not UTF-8") from None


def _json_object(text: str) -> dict[str, object]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise web.HTTPBadRequest(text="body is not JSON") from None
    if not isinstance(data, dict):
        raise web.HTTPBadRequest(text="body is not a JSON object")
    return data


async def read_json_object(request: web.Request) -> dict[str, object]:
    """The body as one JSON object, or a refusal: 415 unless it is declared JSON in UTF-8,
    413 when too large, 400 when it is not UTF-8 or not one JSON object."""
    _require_content_type(request, frozenset({JSON_TYPE}))
    return _json_object(await read_text(request))


# -- middlewares -------------------------------------------------------------------------------


@web.middleware
async def log_refusals(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Writes the one log line of every request refused with a raised ``HTTPClientError``
    (by a handler, by :func:`screen_requests`, or by the router's 404/405)."""
    try:
        return await handler(request)
    except web.HTTPClientError as refused:
        log.warning(
            "http_request_refused",
            status=refused.status,
            reason=_printable(refused.text or refused.reason),
            method=request.method,
            path=_printable(request.raw_path),
            remote=request.remote,
        )
        raise


@web.middleware
async def screen_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuses what no endpoint of the daemon accepts before any route sees it (see the
    module doc): unknown routes and methods, non-ASCII header values, bodies that are too
    large, of another type, not UTF-8, or JSON that is not one object."""
    unmatched = request.match_info.http_exception
    # an unknown path under a mounted application (the console) is its to answer: it
    # renders its own 404 page, with its headers; the screening below still applies
    if unmatched is not None and len(request.match_info.apps) <= 1:
        raise unmatched
    for name, value in request.headers.items():
        if not value.isascii():
            raise web.HTTPBadRequest(text=f"header {_printable(name, 60)} is not ASCII")
    if request.body_exists:
        _require_content_type(request, _BODY_TYPES)
        text = await read_text(request)  # aiohttp keeps the body for the handler
        if request.content_type == JSON_TYPE:
            _json_object(text)
    return await handler(request)


# -- the server's own log ----------------------------------------------------------------------


def _client_fault(exc_info: object) -> HttpProcessingError | None:
    if isinstance(exc_info, HttpProcessingError) and 400 <= exc_info.code < 500:
        return exc_info
    return None


class ServerLog(logging.LoggerAdapter[logging.Logger]):
    """aiohttp's server logger, with requests it could not parse logged as one line.

    aiohttp answers an unparsable request (bad request line, header, length) with 400 and
    logs the parser's exception with a traceback at ERROR (or at DEBUG for a first request
    that is not HTTP at all). That is the client's fault: it becomes one
    ``http_request_refused`` warning, without the raw bytes the parser quotes. Everything
    else, a handler that crashed above all, keeps its traceback.
    """

    def __init__(self) -> None:
        super().__init__(logging.getLogger("aiohttp.server"), {})

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        if not self._refused(exc_info, args):
            super().exception(msg, *args, exc_info=exc_info, **kwargs)

    def debug(self, msg: object, *args: object, exc_info: Any = None, **kwargs: Any) -> None:
        if not self._refused(exc_info, args):
            super().debug(msg, *args, exc_info=exc_info, **kwargs)

    @staticmethod
    def _refused(exc_info: object, args: tuple[object, ...]) -> bool:
        fault = _client_fault(exc_info)
        if fault is None:
            return False
        log.warning(
            "http_request_refused",
            status=fault.code,
            # the parser's message quotes the offending bytes; keep only its first words
            reason=_printable(fault.message.split(":", 1)[0].strip(), 80),
            error=type(fault).__name__,
            # aiohttp's message is "Error handling request from %s" % request.remote
            remote=str(args[0]) if args else None,
        )
        return True


def server_runner(app: web.Application) -> web.AppRunner:
    """The runner every hatchway HTTP server uses: no access log, no signal handling, and
    parse errors logged through :class:`ServerLog`."""
    return web.AppRunner(app, access_log=None, handle_signals=False, logger=ServerLog())


# -- the daemon's server -----------------------------------------------------------------------


class HttpServer:
    """Serves :attr:`app`. Use :meth:`start` once routes are in, and :meth:`aclose`."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.app = web.Application(
            client_max_size=MAX_BODY_BYTES, middlewares=[log_refusals, screen_requests]
        )
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    async def start(self) -> None:
        """Listen on the configured address; the bound port is in :attr:`port`
        (useful with ``port = 0``). Raises :class:`HatchwayError` when it cannot bind."""
        runner = server_runner(self.app)
        await runner.setup()
        site = web.TCPSite(runner, self.config.host, self.config.port, shutdown_timeout=2.0)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise HatchwayError(
                f"cannot listen on {self.config.host}:{self.config.port} ([server] host/port): "
                f"{exc.strerror or exc}"
            ) from None
        self._runner = runner
        self.port = _bound_port(runner, self.config.port)
        log.info("http_listening", host=self.config.host, port=self.port)

    async def aclose(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()


def _bound_port(runner: web.AppRunner, configured: int) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
        if isinstance(address, str):  # a unix socket path; no port
            break
    return configured
